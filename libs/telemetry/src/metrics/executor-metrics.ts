/** The executor's instruments (per instance): attempts, outcomes, leases, target calls. */
import type { Attributes } from '@opentelemetry/api';
import { Attr } from '../attributes';
import type { TenantLabels } from '../tenant-labels';
import {
  counterOf,
  defineMetric,
  DURATION_BUCKETS_SECONDS,
  gaugeOf,
  histogramOf,
  LATENESS_BUCKETS_SECONDS,
  meter,
  seconds,
  TalliedCounter,
} from './spec';

/** The executor's metrics. */
export const EXECUTOR_METRICS = {
  startLateness: defineMetric({
    name: 'tickwork.fire.start_lateness_seconds',
    kind: 'histogram',
    unit: 's',
    buckets: LATENESS_BUCKETS_SECONDS,
    help: 'Execution start time minus scheduled time of each fire (first attempts), by tenant',
  }),
  firesExecuted: defineMetric({
    name: 'tickwork.fires.executed',
    kind: 'counter',
    help: 'Attempts that ran to an outcome, by tenant and outcome',
  }),
  firesSucceeded: defineMetric({
    name: 'tickwork.fires.succeeded',
    kind: 'counter',
    help: 'Fires whose target call succeeded, by tenant',
  }),
  firesRetried: defineMetric({
    name: 'tickwork.fires.retried',
    kind: 'counter',
    help: 'Attempts handed to a retry tier, by tenant',
  }),
  firesDeadLettered: defineMetric({
    name: 'tickwork.fires.dead_lettered',
    kind: 'counter',
    help: 'Fires sent to the dead-letter topic, by tenant and reason',
  }),
  firesDuplicate: defineMetric({
    name: 'tickwork.fires.duplicates',
    kind: 'counter',
    help: 'Deliveries the run ledger recognised as already run or running elsewhere, by reason',
  }),
  executorInFlight: defineMetric({
    name: 'tickwork.executor.in_flight',
    kind: 'gauge',
    integer: true,
    help: 'Fires being executed right now (slots in use)',
  }),
  leaseRenewals: defineMetric({
    name: 'tickwork.executor.lease_renewals',
    kind: 'counter',
    help: 'Run lease heartbeats that renewed the lease',
  }),
  leaseLosses: defineMetric({
    name: 'tickwork.executor.lease_losses',
    kind: 'counter',
    help: 'Run leases found gone (by a heartbeat, or when recording the outcome): the call was cut short or its outcome left to the new holder',
  }),
  targetDuration: defineMetric({
    name: 'tickwork.target.duration_seconds',
    kind: 'histogram',
    unit: 's',
    buckets: DURATION_BUCKETS_SECONDS,
    help: 'Target call duration, by target type and outcome (ok, http_5xx, timeout, network, …)',
  }),
} as const;

/** One attempt's result, as the executor publishes it (structurally the domain's FireResult). */
export interface AttemptRecord {
  readonly tenantId: string;
  readonly scheduledFor: Date;
  /** A herd window's slot offset: lateness counts from scheduledFor − spreadOffsetMs (the nominal time). */
  readonly spreadOffsetMs?: number;
  readonly startedAt: Date;
  readonly attempt: number;
  /** SUCCEEDED, RETRYING, DEAD_LETTERED, … */
  readonly outcome: string;
}

/** The executor's instruments (per instance). */
export class ExecutorMetrics {
  private readonly m = meter();
  private readonly lateness = histogramOf(this.m, EXECUTOR_METRICS.startLateness);
  private readonly executed = new TalliedCounter(this.m, EXECUTOR_METRICS.firesExecuted);
  private readonly succeeded = new TalliedCounter(this.m, EXECUTOR_METRICS.firesSucceeded);
  private readonly retried = new TalliedCounter(this.m, EXECUTOR_METRICS.firesRetried);
  private readonly deadLetteredCount = counterOf(this.m, EXECUTOR_METRICS.firesDeadLettered);
  private readonly duplicates = counterOf(this.m, EXECUTOR_METRICS.firesDuplicate);
  private readonly renewals = counterOf(this.m, EXECUTOR_METRICS.leaseRenewals);
  private readonly losses = counterOf(this.m, EXECUTOR_METRICS.leaseLosses);
  private readonly targetDuration = histogramOf(this.m, EXECUTOR_METRICS.targetDuration);

  constructor(
    private readonly tenants: TenantLabels,
    inFlight: () => number,
  ) {
    gaugeOf(this.m, EXECUTOR_METRICS.executorInFlight).addCallback((r) => r.observe(inFlight()));
  }

  /** An attempt ran to an outcome: counts it, and the start lateness of first attempts. */
  attempted(result: AttemptRecord): void {
    const label = this.tenants.label(result.tenantId);
    const tenant = (): Attributes => ({ [Attr.Tenant]: label });
    if (result.attempt <= 1)
      // From the nominal time under a herd window: the slot's offset is part of the lateness.
      this.lateness.record(
        seconds(result.startedAt.getTime() - result.scheduledFor.getTime() + (result.spreadOffsetMs ?? 0)),
        tenant(),
      );
    const outcome = result.outcome;
    this.executed.add(1, `${label}\u0000${outcome}`, () => ({
      [Attr.Tenant]: label,
      [Attr.OutcomeLabel]: outcome,
    }));
    if (outcome === 'SUCCEEDED') this.succeeded.add(1, label, tenant);
    if (outcome === 'RETRYING') this.retried.add(1, label, tenant);
  }

  /** Counts a dead letter (from an attempt, or an undecodable or too old delivery). */
  deadLettered(tenantId: string, reason: string): void {
    this.deadLetteredCount.add(1, { [Attr.Tenant]: this.tenants.label(tenantId, 0), [Attr.Reason]: reason });
  }

  /** Counts a delivery the ledger dropped as a duplicate. */
  duplicate(reason: string): void {
    this.duplicates.add(1, { [Attr.Reason]: reason });
  }

  /** Counts a lease heartbeat: renewed, or the lease found lost. */
  leaseHeartbeat(renewed: boolean): void {
    (renewed ? this.renewals : this.losses).add(1);
  }

  /** Records a target call's duration. */
  targetCall(targetType: 'webhook' | 'kafka', outcome: string, durationMs: number): void {
    this.targetDuration.record(seconds(durationMs), {
      [Attr.TargetType]: targetType,
      [Attr.OutcomeLabel]: outcome,
    });
  }
}
