export { Attr } from './attributes';
export {
  loadTelemetryConfig,
  tracingConfigured,
  type TelemetryConfig,
  type LogFormat,
  type LogLevel,
} from './config';
export { httpServerTelemetry, type HttpServerTelemetryOptions } from './http-server';
export { createLogger, fireLogFields, PinoNestLogger, type Logger, type LoggerOptions } from './logger';
export { LogThrottle } from './log-throttle';
export {
  ApiMetrics,
  ClusterGauges,
  ExecutorMetrics,
  SchedulerMetrics,
  BackfillMetrics,
  SloMetrics,
  type SloJobSample,
  type SloVerdictRecord,
  DURATION_BUCKETS_SECONDS,
  LATENESS_BUCKETS_SECONDS,
  METRIC_CATALOG,
  METRIC_SPECS,
  meter,
  METRICS,
  SCHEDULER_METRICS,
  counterOf,
  defineMetric,
  gaugeOf,
  histogramOf,
  type MetricSpec,
  type ClusterSample,
  type AttemptRecord,
  type SkipRecord,
} from './metrics';
export {
  bindTraceContext,
  boundTraceContext,
  extractTraceContext,
  injectTraceContext,
  spanContextOf,
  traceCarrier,
  traceLogFields,
  type TraceCarrier,
} from './propagation';
export { Readiness, type ReadinessCheck, type ReadinessReport } from './readiness';
export { startTelemetry, type Telemetry, type TelemetryOptions } from './sdk';
export { OTHER_TENANT, TenantLabels, type TenantLabelOptions } from './tenant-labels';
export {
  dbAttributes,
  FIRE_SPAN,
  fireAttributes,
  fireContext,
  inSpan,
  kafkaAttributes,
  linkTo,
  occurrenceCarrier,
  occurrenceParent,
  originCarrier,
  recordFailure,
  setSpansRecorded,
  spanCarrier,
  spansRecorded,
  startClaimSpan,
  startFireSpan,
  CLAIM_SPAN,
  contextWithSpan,
  tracer,
  SpanKind,
  type Context,
  type FireIdentity,
  type JobTraceOrigin,
  type Span,
  type SpanContext,
} from './tracing';
