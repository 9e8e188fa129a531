/**
 * Telemetry settings Tickwork adds to the standard OTEL_* variables (which the OpenTelemetry SDK
 * reads itself): log level and format, tenant labels, and how often cluster gauges are sampled.
 */
import { ConfigError, EnvReader } from '@tickwork/config';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
export type LogFormat = 'json' | 'pretty';

export interface TelemetryConfig {
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** How many tenants (by recent volume) get their own metric label; the rest are "other". */
  readonly metricsTopTenants: number;
  /** Tenants that always get their own metric label. */
  readonly metricsTenants: readonly string[];
  /** How often a scheduler samples backlog, outbox, lease and consumer-lag gauges. */
  readonly clusterSampleMs: number;
  /** True when OTEL_* variables name a trace exporter; without one, tracing costs next to nothing. */
  readonly tracing: boolean;
}

const LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/** Reads and validates the telemetry settings; throws ConfigError naming every bad variable. */
export function loadTelemetryConfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
): TelemetryConfig {
  const r = new EnvReader(env);
  const level = r.string('TICKWORK_LOG_LEVEL', 'info').toLowerCase();
  if (!LEVELS.includes(level as LogLevel))
    r.problem(`TICKWORK_LOG_LEVEL=${JSON.stringify(level)} must be one of ${LEVELS.join(', ')}`);
  // `npm start` is for people at a terminal: pretty unless asked otherwise. Everything else gets JSON.
  const startedByNpmStart = env.npm_lifecycle_event === 'start';
  const format = r.string('TICKWORK_LOG_FORMAT', startedByNpmStart ? 'pretty' : 'json').toLowerCase();
  if (format !== 'json' && format !== 'pretty')
    r.problem(`TICKWORK_LOG_FORMAT=${JSON.stringify(format)} must be json or pretty`);
  const config: TelemetryConfig = {
    logLevel: LEVELS.includes(level as LogLevel) ? (level as LogLevel) : 'info',
    logFormat: format === 'pretty' ? 'pretty' : 'json',
    metricsTopTenants: r.int('TICKWORK_METRICS_TOP_TENANTS', 20, 0, 1_000),
    metricsTenants: r.list('TICKWORK_METRICS_TENANTS', []),
    clusterSampleMs: r.int('TICKWORK_CLUSTER_SAMPLE_MS', 15_000, 100, 3_600_000),
    tracing: tracingConfigured(env),
  };
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return Object.freeze(config);
}

/** Whether the standard variables ask for trace export (OTEL_TRACES_EXPORTER, or an OTLP endpoint). */
export function tracingConfigured(env: Readonly<Record<string, string | undefined>>): boolean {
  const set = (name: string) => (env[name] ?? '').trim() !== '';
  if (['true', '1'].includes((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase())) return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0 && s !== 'none');
  if ((env.OTEL_TRACES_EXPORTER ?? '').split(',').some((s) => s.trim() === 'none')) return false;
  return (
    exporters.length > 0 || set('OTEL_EXPORTER_OTLP_ENDPOINT') || set('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  );
}
