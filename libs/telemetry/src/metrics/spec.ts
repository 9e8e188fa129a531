/**
 * How a metric is declared: once, as a `MetricSpec` (name, kind, unit, help) beside the class
 * that records it, and made into an instrument from that spec. Names are OpenTelemetry names; on
 * /metrics they appear with dots as underscores, their unit as a suffix (`_seconds`) and counters
 * with `_total` (`prometheusSeries`). Instruments come from the global meter, so build recorders
 * after startTelemetry.
 */
import {
  metrics,
  ValueType,
  type Attributes,
  type Counter,
  type Histogram,
  type Meter,
  type ObservableGauge,
} from '@opentelemetry/api';
import { withUnitSuffix } from '../prometheus-names';

const METER = 'tickwork';

/** Lateness buckets, seconds: fine below a second (the SLO), coarse up to an hour (misfires). */
export const LATENESS_BUCKETS_SECONDS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600,
] as const;
/** Call durations, seconds. */
export const DURATION_BUCKETS_SECONDS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
] as const;

/** A metric's declaration: everything a dashboard, an alert rule and the instrument need. */
export interface MetricSpec {
  /** OpenTelemetry name (`tickwork.fires.claimed`). */
  readonly name: string;
  readonly kind: 'counter' | 'histogram' | 'gauge';
  /** `s` for durations and times; counts have none. */
  readonly unit?: 's';
  /** The description shown as `# HELP`. */
  readonly help: string;
  /** Whole numbers (counters always are). */
  readonly integer?: boolean;
  /** A histogram's bucket boundaries. */
  readonly buckets?: readonly number[];
}

/** Declares a metric (identity, typed as given: a table of these reads as the catalog). */
export function defineMetric<const S extends MetricSpec>(spec: S): S {
  return spec;
}

/** The Prometheus series names of a metric (histograms: _bucket, _sum, _count), with unit suffix. */
export function prometheusSeries(spec: MetricSpec): string[] {
  const base = withUnitSuffix(spec.name, spec.unit, spec.kind === 'gauge');
  switch (spec.kind) {
    case 'counter':
      return [`${base}_total`];
    case 'histogram':
      return [`${base}_bucket`, `${base}_sum`, `${base}_count`];
    case 'gauge':
      return [base];
  }
}

/** Tickwork's meter (from the provider startTelemetry registered). */
export function meter(): Meter {
  return metrics.getMeter(METER);
}

/** A counter made from its spec. */
export function counterOf(m: Meter, spec: MetricSpec): Counter {
  return m.createCounter(spec.name, { description: spec.help, valueType: ValueType.INT });
}

/** A histogram made from its spec. */
export function histogramOf(m: Meter, spec: MetricSpec): Histogram {
  return m.createHistogram(spec.name, {
    description: spec.help,
    ...(spec.unit ? { unit: spec.unit } : {}),
    ...(spec.buckets ? { advice: { explicitBucketBoundaries: [...spec.buckets] } } : {}),
  });
}

/** An observable gauge made from its spec (add its callback). */
export function gaugeOf(m: Meter, spec: MetricSpec): ObservableGauge {
  return m.createObservableGauge(spec.name, {
    description: spec.help,
    ...(spec.unit ? { unit: spec.unit } : {}),
    ...(spec.integer ? { valueType: ValueType.INT } : {}),
  });
}

/** Milliseconds as seconds, never negative. */
export const seconds = (ms: number): number => Math.max(0, ms) / 1000;

/** How many times each value occurs. */
export function countBy(values: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const v of values) out.set(v, (out.get(v) ?? 0) + 1);
  return out;
}

/**
 * A counter summed here and read by the exporter when it collects: one map update per count
 * instead of an SDK record (which hashes the attributes every time) — for counts made per fire.
 */
export class TalliedCounter {
  private readonly tallies = new Map<string, { readonly attributes: Attributes; value: number }>();

  constructor(m: Meter, spec: MetricSpec) {
    m.createObservableCounter(spec.name, { description: spec.help, valueType: ValueType.INT }).addCallback(
      (r) => {
        for (const t of this.tallies.values()) r.observe(t.value, t.attributes);
      },
    );
  }

  /** Adds `n` under `key`, which stands for the attributes `attributes()` builds. */
  add(n: number, key: string, attributes: () => Attributes): void {
    const t = this.tallies.get(key);
    if (t) t.value += n;
    else this.tallies.set(key, { attributes: attributes(), value: n });
  }
}
