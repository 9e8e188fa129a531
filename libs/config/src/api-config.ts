/**
 * Settings of the API app's two listeners (REST and gRPC): ports, TLS, message and deadline limits.
 * Read once at start-up like the rest of the configuration; every bad variable is named.
 */
import { existsSync, readFileSync } from 'node:fs';
import { ConfigError, EnvReader } from './env';

export interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly certPath: string;
  readonly keyPath: string;
}

export interface ApiListenConfig {
  readonly grpc: {
    readonly host: string;
    readonly port: number;
    /** Largest request message accepted (bytes); bigger ones fail with RESOURCE_EXHAUSTED. */
    readonly maxMessageBytes: number;
  };
  /** Deadline applied to calls that carry none, and the cap on REST requests. */
  readonly defaultDeadlineMs: number;
  /** Both listeners use TLS when set (TICKWORK_TLS_CERT_FILE + TICKWORK_TLS_KEY_FILE). */
  readonly tls: TlsFiles | null;
}

/** Reads the listener settings; throws ConfigError naming every bad variable. */
export function loadApiListenConfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
  maxPayloadBytes = 256 * 1024,
): ApiListenConfig {
  const r = new EnvReader(env);
  const certPath = r.optionalString('TICKWORK_TLS_CERT_FILE');
  const keyPath = r.optionalString('TICKWORK_TLS_KEY_FILE');
  let tls: TlsFiles | null = null;
  if ((certPath === undefined) !== (keyPath === undefined)) {
    r.problem('TICKWORK_TLS_CERT_FILE and TICKWORK_TLS_KEY_FILE must be set together');
  } else if (certPath !== undefined && keyPath !== undefined) {
    const read = (name: string, path: string): Buffer | undefined => {
      if (!existsSync(path)) {
        r.problem(`${name}=${JSON.stringify(path)}: no such file`);
        return undefined;
      }
      return readFileSync(path);
    };
    const cert = read('TICKWORK_TLS_CERT_FILE', certPath);
    const key = read('TICKWORK_TLS_KEY_FILE', keyPath);
    if (cert && key) tls = { cert, key, certPath, keyPath };
  }
  const config: ApiListenConfig = {
    grpc: {
      host: r.string('TICKWORK_GRPC_HOST', r.string('TICKWORK_API_HOST', '127.0.0.1')),
      port: r.int('TICKWORK_GRPC_PORT', 50051, 0, 65_535),
      maxMessageBytes: r.int(
        'TICKWORK_GRPC_MAX_MESSAGE_BYTES',
        maxPayloadBytes + 64 * 1024,
        1024,
        64 * 1024 * 1024,
      ),
    },
    defaultDeadlineMs: r.int('TICKWORK_API_DEADLINE_MS', 30_000, 100, 600_000),
    tls,
  };
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return Object.freeze({ ...config, grpc: Object.freeze(config.grpc) });
}
