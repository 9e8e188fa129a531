/** A small gRPC client of tickwork.admin.v1.SchedulerAdmin: credentials, bearer token, deadline, typed errors. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  credentials,
  loadPackageDefinition,
  Metadata,
  status,
  type Client,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Root } from 'protobufjs';
import { schemaDirectory } from '@tickwork/config';

export interface ClientOptions {
  readonly server: string;
  readonly token?: string;
  readonly tls: boolean;
  readonly caFile?: string;
  readonly timeoutMs: number;
}

/** An error to show the user: the gRPC status name, its message, and any field violations. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly violations: readonly { field: string; message: string }[] = [],
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

type Unary = (
  req: unknown,
  md: Metadata,
  opts: { deadline: Date },
  cb: (err: ServiceError | null, res: unknown) => void,
) => void;

export class AdminClient {
  private readonly client: Client & Record<string, Unary>;

  constructor(private readonly opts: ClientOptions) {
    const definition = loadSync('tickwork/admin/v1/admin.proto', {
      keepCase: true,
      longs: Number,
      enums: String,
      defaults: false,
      arrays: true,
      objects: true,
      oneofs: true,
      includeDirs: [schemaDirectory('proto')],
    });
    const pkg = loadPackageDefinition(definition) as unknown as {
      tickwork: {
        admin: { v1: { SchedulerAdmin: new (...a: unknown[]) => Client & Record<string, Unary> } };
      };
    };
    const creds = opts.tls
      ? credentials.createSsl(opts.caFile ? readFileSync(opts.caFile) : null)
      : credentials.createInsecure();
    this.client = new pkg.tickwork.admin.v1.SchedulerAdmin(opts.server, creds);
  }

  /** One unary call; rejects with CliError carrying the status and its field violations. */
  call(method: string, request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const md = new Metadata();
    if (this.opts.token) md.set('authorization', `Bearer ${this.opts.token}`);
    const fn = this.client[method];
    if (!fn) throw new CliError(`unknown method ${method}`);
    return new Promise((resolvePromise, reject) => {
      fn.call(
        this.client,
        request,
        md,
        { deadline: new Date(Date.now() + this.opts.timeoutMs) },
        (err, res) => {
          if (err) reject(toCliError(err, this.opts.server));
          else resolvePromise((res ?? {}) as Record<string, unknown>);
        },
      );
    });
  }

  close(): void {
    this.client.close();
  }
}

function toCliError(err: ServiceError, server: string): CliError {
  const name = status[err.code] ?? String(err.code);
  if (err.code === status.UNAVAILABLE)
    return new CliError(`UNAVAILABLE: cannot reach ${server} (${err.details})`, [], 1);
  const bin = err.metadata?.get('grpc-status-details-bin')[0];
  const violations = Buffer.isBuffer(bin) ? decodeViolations(bin) : [];
  return new CliError(`${name}: ${err.details}`, violations, err.code === status.INVALID_ARGUMENT ? 2 : 1);
}

let statusTypes: Root | undefined;

/** google.rpc.BadRequest field violations from a grpc-status-details-bin trailer. */
export function decodeViolations(bin: Buffer): { field: string; message: string }[] {
  if (!statusTypes) {
    statusTypes = new Root();
    statusTypes.resolvePath = (_o, target) => resolve(schemaDirectory('proto'), target);
    statusTypes.loadSync(['google/rpc/status.proto', 'google/rpc/error_details.proto']);
  }
  const Status = statusTypes.lookupType('google.rpc.Status');
  const BadRequest = statusTypes.lookupType('google.rpc.BadRequest');
  const s = Status.toObject(Status.decode(bin), { defaults: true }) as {
    details: { type_url: string; value: Uint8Array }[];
  };
  return s.details
    .filter((d) => d.type_url.endsWith('google.rpc.BadRequest'))
    .flatMap(
      (d) =>
        (
          BadRequest.toObject(BadRequest.decode(d.value), { defaults: true }) as {
            fieldViolations: { field: string; description: string }[];
          }
        ).fieldViolations,
    )
    .map((v) => ({ field: v.field, message: v.description }));
}
