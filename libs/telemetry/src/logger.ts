/**
 * Structured logs: pino, one JSON object per line on stdout (pretty for people with
 * TICKWORK_LOG_FORMAT=pretty, the default under `npm start`). Every line carries the service and
 * instance, and trace_id/span_id when written inside a span; lines about a fire carry job_id,
 * fence_token and tenant (fireLogFields). Payloads, headers and credentials are never logged: the
 * paths below are redacted in case one slips into a log call.
 */
import pino, { type DestinationStream, type Logger } from 'pino';
import type { LogFormat, LogLevel } from './config';
import { boundTraceContext, traceLogFields } from './propagation';
import type { FireIdentity } from './tracing';

export type { Logger };

/** Keys whose values must never reach a log line, at the top level or one object down. */
const SECRET_KEYS = [
  'payload',
  'headers',
  'authorization',
  'password',
  'token',
  'secret',
  'secrets',
  'value',
];
const REDACT_PATHS = SECRET_KEYS.flatMap((k) => [k, `*.${k}`]);

export interface LoggerOptions {
  readonly service: string;
  readonly instanceId: string;
  readonly level: LogLevel;
  readonly format: LogFormat;
  /** Where lines go (default stdout); tests pass a stream to read them. */
  readonly destination?: DestinationStream;
}

/** The process's root logger. */
export function createLogger(opts: LoggerOptions): Logger {
  const options: pino.LoggerOptions = {
    level: opts.level,
    base: { service: opts.service, instance: opts.instanceId },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin: () => traceLogFields(),
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  if (opts.destination) return pino(options, opts.destination);
  if (opts.format === 'pretty') {
    // Loaded only when asked for: production images never need it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const pretty = require('pino-pretty') as typeof import('pino-pretty');
    return pino(
      options,
      pretty({
        sync: true,
        translateTime: 'SYS:HH:MM:ss.l',
        ignore: 'pid,hostname,service,instance,context',
        messageFormat: '{if context}[{context}] {end}{msg}',
      }),
    );
  }
  return pino(options);
}

/** The fields of every log line about a fire: its identity, and its trace when it has one. */
export function fireLogFields(
  fire: Pick<FireIdentity, 'jobId' | 'tenantId' | 'fenceToken'> & { attempt?: number },
): Record<string, unknown> {
  return {
    job_id: fire.jobId,
    fence_token: fire.fenceToken,
    tenant: fire.tenantId,
    ...(fire.attempt !== undefined ? { attempt: fire.attempt } : {}),
    ...traceLogFields(boundTraceContext(fire)),
  };
}

/**
 * Nest's LoggerService over pino, so `new Logger(context)` anywhere in an app writes structured
 * lines. A message that is an object is merged into the line (`msg` is its message). It has
 * LoggerService's shape without importing Nest: this lib stays free of the framework (the apps
 * hand it to Nest, which checks the shape where it is used).
 */
export class PinoNestLogger {
  constructor(private readonly root: Logger) {}

  // Nest's LoggerService levels, mapped to pino's: log → info, verbose → trace.
  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params, true);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  /** Whether lines of `level` are written (to skip building fields for nothing). */
  enabled(level: LogLevel): boolean {
    return this.root.isLevelEnabled(level);
  }

  private write(level: LogLevel, message: unknown, params: unknown[], isError = false): void {
    if (!this.root.isLevelEnabled(level)) return;
    // Nest's Logger passes its context as the last parameter; Logger.error passes a stack before it.
    const rest = [...params];
    const context =
      rest.length > 0 && typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    const fields: Record<string, unknown> = context ? { context } : {};
    if (isError && typeof rest[0] === 'string' && rest[0].includes('\n    at ')) fields.stack = rest.shift();
    if (message instanceof Error) {
      this.root[level]({ ...fields, err: message }, message.message);
    } else if (message !== null && typeof message === 'object') {
      const { msg, message: m, ...more } = message as Record<string, unknown>;
      const text = typeof msg === 'string' ? msg : typeof m === 'string' ? m : '';
      this.root[level]({ ...fields, ...more }, text);
    } else {
      this.root[level](fields, String(message));
    }
  }
}
