/** Fire SLO instruments (scheduler): verdicts per tenant, and per opted-in job with dead-man gauges. */
import { Attr } from '../attributes';
import type { TenantLabels } from '../tenant-labels';
import { counterOf, defineMetric, gaugeOf, meter } from './spec';

/** The fire SLO metrics. */
export const SLO_METRICS = {
  fireSloVerdicts: defineMetric({
    name: 'tickwork.fire.slo_verdicts',
    kind: 'counter',
    help: 'Scheduled fires judged against their tolerance, by tenant and result (ON_TIME, LATE, MISSED)',
  }),
  jobSloVerdicts: defineMetric({
    name: 'tickwork.job.slo_verdicts',
    kind: 'counter',
    help: 'Fire SLO verdicts of the jobs that opted in (policies.slo_metrics), by job',
  }),
  jobLastSuccess: defineMetric({
    name: 'tickwork.job.last_success_timestamp',
    kind: 'gauge',
    unit: 's',
    help: 'When an opted-in job last ran successfully (its creation time if never), epoch seconds',
  }),
  jobInterval: defineMetric({
    name: 'tickwork.job.interval',
    kind: 'gauge',
    unit: 's',
    help: "An opted-in job's nominal interval between occurrences, seconds",
  }),
} as const;

/** A fire SLO verdict, as the scheduler's sweep reports it. */
export interface SloVerdictRecord {
  readonly tenantId: string;
  readonly jobId: string;
  readonly result: 'ON_TIME' | 'LATE' | 'MISSED';
  /** The job opted in to per-job series (`slo_metrics`). */
  readonly sloMetrics: boolean;
}

/** An opted-in job's dead-man figures, as the sweep last read them. */
export interface SloJobSample {
  readonly tenantId: string;
  readonly jobId: string;
  /** Epoch seconds of its last successful run (its creation when it never succeeded). */
  readonly lastSuccessSeconds: number;
  /** Its nominal interval in seconds; null when it has none (the series is left out). */
  readonly intervalSeconds: number | null;
}

/**
 * Fire SLO instruments (scheduler): verdicts per tenant always (TenantLabels bounds them), and per
 * job only for jobs that opted in, with the dead-man gauges the "has not succeeded for three of its
 * intervals" alert reads. The per-job gauges show the jobs of the shards this instance holds now.
 */
export class SloMetrics {
  private readonly m = meter();
  private readonly verdicts = counterOf(this.m, SLO_METRICS.fireSloVerdicts);
  private readonly jobVerdicts = counterOf(this.m, SLO_METRICS.jobSloVerdicts);
  private samples: readonly SloJobSample[] = [];

  constructor(private readonly tenants: TenantLabels) {
    gaugeOf(this.m, SLO_METRICS.jobLastSuccess).addCallback((r) => {
      for (const s of this.samples)
        r.observe(s.lastSuccessSeconds, { [Attr.Tenant]: s.tenantId, [Attr.JobLabel]: s.jobId });
    });
    gaugeOf(this.m, SLO_METRICS.jobInterval).addCallback((r) => {
      for (const s of this.samples)
        if (s.intervalSeconds !== null)
          r.observe(s.intervalSeconds, { [Attr.Tenant]: s.tenantId, [Attr.JobLabel]: s.jobId });
    });
  }

  /** Counts verdicts per tenant, and per job for opted-in jobs. */
  judged(records: readonly SloVerdictRecord[]): void {
    const perTenant = new Map<string, number>();
    for (const r of records) {
      const key = `${this.tenants.label(r.tenantId, 0)}\u0000${r.result}`;
      perTenant.set(key, (perTenant.get(key) ?? 0) + 1);
      if (r.sloMetrics)
        this.jobVerdicts.add(1, {
          [Attr.Tenant]: r.tenantId,
          [Attr.JobLabel]: r.jobId,
          [Attr.Result]: r.result,
        });
    }
    for (const [key, n] of perTenant) {
      const [tenant, result] = key.split('\u0000') as [string, string];
      this.verdicts.add(n, { [Attr.Tenant]: tenant, [Attr.Result]: result });
    }
  }

  /** Replaces the per-job gauges' jobs (those of the shards held now). */
  jobsSampled(samples: readonly SloJobSample[]): void {
    this.samples = samples;
  }
}
