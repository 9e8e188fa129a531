/** A plain gRPC client of tickwork.admin.v1 for tests: results and errors as values, violations decoded. */
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

const PROTO_DIR = resolve(__dirname, '..', '..', 'schemas', 'proto');

export type Msg = Record<string, unknown>;

export type CallResult =
  | { readonly ok: true; readonly res: Msg }
  | {
      readonly ok: false;
      readonly code: status;
      readonly codeName: string;
      readonly details: string;
      readonly violations: { field: string; message: string }[];
    };

type Unary = (
  req: unknown,
  md: Metadata,
  opts: { deadline: Date },
  cb: (err: ServiceError | null, res: unknown) => void,
) => void;

/** Loader options the server uses too (snake_case, enum names, int64 as numbers). */
export const LOADER = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: false,
  arrays: true,
  objects: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};

export class AdminTestClient {
  private readonly admin: Client & Record<string, Unary>;
  private readonly health: Client & Record<string, Unary>;

  constructor(
    readonly address: string,
    private readonly token?: string,
    /** When set, the channel uses TLS and trusts this certificate. */
    private readonly rootCert?: Buffer,
  ) {
    const channel = rootCert ? credentials.createSsl(rootCert) : credentials.createInsecure();
    const def = loadSync(['tickwork/admin/v1/admin.proto', 'grpc/health/v1/health.proto'], LOADER);
    const pkg = loadPackageDefinition(def) as unknown as {
      tickwork: {
        admin: {
          v1: { SchedulerAdmin: new (a: string, c: unknown, o?: unknown) => Client & Record<string, Unary> };
        };
      };
      grpc: { health: { v1: { Health: new (a: string, c: unknown) => Client & Record<string, Unary> } } };
    };
    this.admin = new pkg.tickwork.admin.v1.SchedulerAdmin(address, channel, {
      'grpc.max_send_message_length': 64 * 1024 * 1024,
    });
    this.health = new pkg.grpc.health.v1.Health(address, channel);
  }

  /** The same client with another token. */
  as(token: string | undefined): AdminTestClient {
    return new AdminTestClient(this.address, token, this.rootCert);
  }

  /** Calls an admin RPC; never throws for a gRPC error. */
  call(
    method: string,
    req: Msg,
    opts: { deadlineMs?: number; authorization?: string; metadata?: Record<string, string> } = {},
  ): Promise<CallResult> {
    const md = this.metadata(opts.authorization);
    for (const [k, v] of Object.entries(opts.metadata ?? {})) md.set(k, v);
    return invoke(this.admin, method, req, md, opts.deadlineMs ?? 10_000);
  }

  /** Calls an admin RPC and returns its response, failing the test on an error status. */
  async ok(method: string, req: Msg): Promise<Msg> {
    const r = await this.call(method, req);
    if (!r.ok) throw new Error(`${method} failed: ${r.codeName} ${r.details}`);
    return r.res;
  }

  /** grpc.health.v1.Health/Check. */
  check(service: string): Promise<CallResult> {
    return invoke(this.health, 'Check', { service }, new Metadata(), 5_000);
  }

  /** grpc.health.v1.Health/Watch: every status the server streams, until `stop()`. */
  watch(service: string): { readonly statuses: string[]; readonly errors: Error[]; stop(): void } {
    const stream = (
      this.health as unknown as Record<string, (req: unknown) => NodeJS.EventEmitter & { cancel(): void }>
    ).Watch!({ service });
    const statuses: string[] = [];
    const errors: Error[] = [];
    stream.on('data', (m: { status: string }) => statuses.push(m.status));
    stream.on('error', (e: ServiceError) => {
      if (e.code !== status.CANCELLED) errors.push(e);
    });
    return { statuses, errors, stop: () => stream.cancel() };
  }

  close(): void {
    this.admin.close();
    this.health.close();
  }

  private metadata(authorization?: string): Metadata {
    const md = new Metadata();
    if (authorization !== undefined) md.set('authorization', authorization);
    else if (this.token) md.set('authorization', `Bearer ${this.token}`);
    return md;
  }
}

function invoke(
  client: Client & Record<string, Unary>,
  method: string,
  req: Msg,
  md: Metadata,
  deadlineMs: number,
): Promise<CallResult> {
  const fn = client[method];
  if (!fn) throw new Error(`no method ${method}`);
  return new Promise((done) => {
    fn.call(client, req, md, { deadline: new Date(Date.now() + deadlineMs) }, (err, res) => {
      if (!err) return done({ ok: true, res: (res ?? {}) as Msg });
      const bin = err.metadata?.get('grpc-status-details-bin')[0];
      done({
        ok: false,
        code: err.code,
        codeName: status[err.code] ?? String(err.code),
        details: err.details,
        violations: Buffer.isBuffer(bin) ? decodeBadRequest(bin) : [],
      });
    });
  });
}

let rpcTypes: Root | undefined;

/** google.rpc.Status → BadRequest field violations. */
export function decodeBadRequest(bin: Buffer): { field: string; message: string }[] {
  if (!rpcTypes) {
    rpcTypes = new Root();
    rpcTypes.resolvePath = (_o, t) => resolve(PROTO_DIR, t);
    rpcTypes.loadSync(['google/rpc/status.proto', 'google/rpc/error_details.proto']);
  }
  const S = rpcTypes.lookupType('google.rpc.Status');
  const B = rpcTypes.lookupType('google.rpc.BadRequest');
  const s = S.toObject(S.decode(bin), { defaults: true }) as {
    details: { type_url: string; value: Uint8Array }[];
  };
  return s.details
    .filter((d) => d.type_url === 'type.googleapis.com/google.rpc.BadRequest')
    .flatMap(
      (d) =>
        (
          B.toObject(B.decode(d.value), { defaults: true }) as {
            fieldViolations: { field: string; description: string }[];
          }
        ).fieldViolations,
    )
    .map((v) => ({ field: v.field, message: v.description }));
}

/** A Timestamp message for a Date. */
export function ts(d: Date): Msg {
  return { seconds: Math.floor(d.getTime() / 1000), nanos: (d.getTime() % 1000) * 1e6 };
}

/** A Timestamp message as a Date. */
export function dateOf(t: unknown): Date | undefined {
  if (!t || typeof t !== 'object') return undefined;
  const m = t as { seconds?: number; nanos?: number };
  return new Date((m.seconds ?? 0) * 1000 + Math.floor((m.nanos ?? 0) / 1e6));
}
