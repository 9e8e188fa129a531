/**
 * The OpenTelemetry Node SDK, set up once per process by each app's main.ts before anything else:
 * - traces: exported only when the standard variables name an exporter (OTEL_TRACES_EXPORTER, or
 *   OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, protocol from
 *   OTEL_EXPORTER_OTLP_PROTOCOL); otherwise no tracer provider is registered and spans are no-ops.
 *   The W3C propagator is always registered, so a trace context that arrives is passed on.
 * - metrics: one MeterProvider whose Prometheus reader the app serves on its own /metrics, plus
 *   event-loop delay, heap and GC metrics from @opentelemetry/instrumentation-runtime-node. Names
 *   carry their unit as Prometheus names do (`_seconds`, `_bytes`; see prometheus-names.ts).
 * - logs: pino (see logger.ts); OpenTelemetry diagnostics go to it as warnings.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { diag, DiagLogLevel } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';
import { defaultResource, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { DataPointType, type CollectionResult, type MetricData } from '@opentelemetry/sdk-metrics';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { loadTelemetryConfig, type TelemetryConfig } from './config';
import { createLogger, PinoNestLogger, type Logger } from './logger';
import { PlainContextManager } from './plain-context';
import { withUnitSuffix } from './prometheus-names';
import { TenantLabels } from './tenant-labels';
import { setSpansRecorded } from './tracing';

export interface TelemetryOptions {
  /** api, scheduler or executor: the service name is tickwork-<app> unless OTEL_SERVICE_NAME says otherwise. */
  readonly app: string;
  readonly instanceId: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * `always` (default): an AsyncLocalStorage context, so the active span follows every await.
   * `when-tracing`: only while spans are exported; otherwise a plain context without promise hooks,
   * for an app that hands the trace context on explicitly where nothing is traced (the executor).
   */
  readonly asyncContext?: 'always' | 'when-tracing';
}

export interface Telemetry {
  readonly config: TelemetryConfig;
  readonly logger: Logger;
  /** The logger to give NestFactory.create, so every Nest Logger writes structured lines. */
  readonly nestLogger: PinoNestLogger;
  /** Bounded tenant labels shared by the process's metrics. */
  readonly tenants: TenantLabels;
  /** Answers a scrape with the Prometheus text format. */
  serveMetrics(req: IncomingMessage, res: ServerResponse): void;
  /** Flushes spans still buffered and stops the providers (bounded by `timeoutMs`). */
  shutdown(timeoutMs?: number): Promise<void>;
}

let started: Telemetry | undefined;

/** A metric renamed with its unit suffix (gauges: also non-monotonic sums, which Prometheus shows as gauges). */
function unitSuffixed(metric: MetricData): MetricData {
  const gauge =
    metric.dataPointType === DataPointType.GAUGE ||
    (metric.dataPointType === DataPointType.SUM && !metric.isMonotonic);
  const name = withUnitSuffix(metric.descriptor.name, metric.descriptor.unit, gauge);
  return name === metric.descriptor.name ? metric : { ...metric, descriptor: { ...metric.descriptor, name } };
}

/**
 * The Prometheus exporter, with unit suffixes on the names it serves: the JavaScript exporter
 * leaves them off (`http_server_request_duration` for a histogram in seconds), against the
 * OpenTelemetry compatibility rules and Prometheus's conventions. Its scrape handler collects
 * through collect(), so renaming here renames every served series.
 */
class UnitSuffixedPrometheusExporter extends PrometheusExporter {
  override async collect(options?: Parameters<PrometheusExporter['collect']>[0]): Promise<CollectionResult> {
    const result = await super.collect(options);
    return {
      ...result,
      resourceMetrics: {
        ...result.resourceMetrics,
        scopeMetrics: result.resourceMetrics.scopeMetrics.map((scope) => ({
          ...scope,
          metrics: scope.metrics.map(unitSuffixed),
        })),
      },
    };
  }
}

/** Starts the SDK for this process (idempotent: a second call returns the first instance). */
export function startTelemetry(opts: TelemetryOptions): Telemetry {
  if (started) return started;
  const env = opts.env ?? process.env;
  const config = loadTelemetryConfig(env);
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || `tickwork-${opts.app}`;
  const logger = createLogger({
    service: serviceName,
    instanceId: opts.instanceId,
    level: config.logLevel,
    format: config.logFormat,
  });
  const otelLog = logger.child({ context: 'otel' });
  diag.setLogger(
    {
      error: (m, ...a) => otelLog.warn({ details: a.map(String) }, m),
      warn: (m, ...a) => otelLog.warn({ details: a.map(String) }, m),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    DiagLogLevel.WARN,
  );

  const prometheus = new UnitSuffixedPrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  const sdk = new NodeSDK({
    serviceName,
    // Attributes known synchronously (plus OTEL_RESOURCE_ATTRIBUTES): the host and process detectors
    // resolve theirs asynchronously, and a scrape before they settle would warn about it.
    resource: defaultResource().merge(
      resourceFromAttributes({
        'service.namespace': 'tickwork',
        'service.instance.id': opts.instanceId,
        'host.name': hostname(),
        'process.pid': process.pid,
        'process.runtime.name': 'nodejs',
        'process.runtime.version': process.versions.node,
      }),
    ),
    resourceDetectors: [envDetector],
    metricReaders: [prometheus],
    instrumentations: [new RuntimeNodeInstrumentation({ monitoringPrecision: 1_000 })],
    // No OpenTelemetry log pipeline: logs are pino lines on stdout.
    logRecordProcessors: [],
    // An empty list means no tracer provider at all; otherwise the SDK builds exporters from OTEL_*.
    ...(config.tracing ? {} : { spanProcessors: [] }),
    ...(!config.tracing && opts.asyncContext === 'when-tracing'
      ? { contextManager: new PlainContextManager() }
      : {}),
  });
  sdk.start();
  // No exporter, no-op spans: the hot paths skip building them (see setSpansRecorded).
  setSpansRecorded(config.tracing);
  if (config.tracing)
    logger.info({ context: 'otel' }, 'tracing on: spans exported as the OTEL_* variables say');

  let stopping: Promise<void> | undefined;
  started = {
    config,
    logger,
    nestLogger: new PinoNestLogger(logger),
    tenants: new TenantLabels({ topN: config.metricsTopTenants, pinned: config.metricsTenants }),
    serveMetrics: (req, res) => prometheus.getMetricsRequestHandler(req, res),
    shutdown: (timeoutMs = 5_000) =>
      (stopping ??= Promise.race([
        sdk.shutdown().catch((e: unknown) => otelLog.warn(`shutdown: ${(e as Error).message}`)),
        new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref()),
      ])),
  };
  return started;
}
