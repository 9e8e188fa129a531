/**
 * Tickwork's metrics: each declared once beside the recorder that records it (scheduler,
 * cluster gauges, executor, API, fire SLOs, backfills); this module lists them all for the dashboard, the
 * alert rules and their tests.
 */
import { API_METRICS } from './api-metrics';
import { BACKFILL_METRICS } from './backfill-metrics';
import { CLUSTER_METRICS } from './cluster-gauges';
import { EXECUTOR_METRICS } from './executor-metrics';
import { SCHEDULER_METRICS } from './scheduler-metrics';
import { SLO_METRICS } from './slo-metrics';
import { prometheusSeries, type MetricSpec } from './spec';

export { ApiMetrics, API_METRICS } from './api-metrics';
export { BackfillMetrics, BACKFILL_METRICS } from './backfill-metrics';
export { ClusterGauges, CLUSTER_METRICS, type ClusterSample } from './cluster-gauges';
export { ExecutorMetrics, EXECUTOR_METRICS, type AttemptRecord } from './executor-metrics';
export { SchedulerMetrics, SCHEDULER_METRICS, type SkipRecord } from './scheduler-metrics';
export { SloMetrics, SLO_METRICS, type SloJobSample, type SloVerdictRecord } from './slo-metrics';
export {
  counterOf,
  defineMetric,
  DURATION_BUCKETS_SECONDS,
  gaugeOf,
  histogramOf,
  LATENESS_BUCKETS_SECONDS,
  meter,
  prometheusSeries,
  type MetricSpec,
} from './spec';

const ALL = {
  ...SCHEDULER_METRICS,
  ...CLUSTER_METRICS,
  ...EXECUTOR_METRICS,
  ...API_METRICS,
  ...SLO_METRICS,
  ...BACKFILL_METRICS,
} as const;

/** Every Tickwork metric recorded through these recorders, by key: its OpenTelemetry name. */
export const METRICS = Object.fromEntries(Object.entries(ALL).map(([k, s]) => [k, s.name])) as {
  readonly [K in keyof typeof ALL]: (typeof ALL)[K]['name'];
};

/** Every metric's declaration. */
export const METRIC_SPECS: readonly MetricSpec[] = Object.values(ALL);

/** The Prometheus series names of every metric (histograms: _bucket, _sum, _count), with unit suffixes. */
export const METRIC_CATALOG: readonly string[] = METRIC_SPECS.flatMap(prometheusSeries);
