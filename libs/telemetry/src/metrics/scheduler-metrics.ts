/** The scheduler's own instruments (per instance): claims, enqueues, skips, shard ownership. */
import { Attr } from '../attributes';
import type { TenantLabels } from '../tenant-labels';
import type { FireIdentity } from '../tracing';
import {
  countBy,
  counterOf,
  defineMetric,
  gaugeOf,
  histogramOf,
  LATENESS_BUCKETS_SECONDS,
  meter,
  seconds,
} from './spec';

/** The scheduler's metrics. */
export const SCHEDULER_METRICS = {
  firesClaimed: defineMetric({
    name: 'tickwork.fires.claimed',
    kind: 'counter',
    help: 'Occurrences claimed (one fence token each), by tenant',
  }),
  firesEnqueued: defineMetric({
    name: 'tickwork.fires.enqueued',
    kind: 'counter',
    help: 'Fires confirmed on the fires topic, by tenant; relayed="true" for outbox re-publishes',
  }),
  enqueueLateness: defineMetric({
    name: 'tickwork.fire.enqueue_lateness_seconds',
    kind: 'histogram',
    unit: 's',
    buckets: LATENESS_BUCKETS_SECONDS,
    help: 'Enqueue time minus scheduled time of each fire, by tenant',
  }),
  occurrencesSkipped: defineMetric({
    name: 'tickwork.occurrences.skipped',
    kind: 'counter',
    help: 'Occurrences that did not fire, by tenant and reason (MISFIRE_SKIP, COALESCED, OVERLAP, …)',
  }),
  occurrencesCalendarShifted: defineMetric({
    name: 'tickwork.occurrences.calendar_shifted',
    kind: 'counter',
    help: 'Occurrences a business calendar moved to another day (CALENDAR_SHIFT), by tenant, as the claim planned them',
  }),
  claimsDeferred: defineMetric({
    name: 'tickwork.claims.deferred',
    kind: 'counter',
    help: 'Claim rounds in which a tenant had due work held back, by tenant and reason',
  }),
  claimsFencedOut: defineMetric({
    name: 'tickwork.claims.fenced_out',
    kind: 'counter',
    help: 'Shards a claim found fenced out (lease lost or taken over)',
  }),
  jobsParked: defineMetric({
    name: 'tickwork.jobs.parked',
    kind: 'counter',
    help: 'Jobs paused by the claim because their stored definition could not be planned',
  }),
  shardsOwned: defineMetric({
    name: 'tickwork.scheduler.shards_owned',
    kind: 'gauge',
    integer: true,
    help: 'Shards whose lease this instance holds and may claim from',
  }),
  epochChanges: defineMetric({
    name: 'tickwork.scheduler.epoch_changes',
    kind: 'counter',
    help: 'Shard leases this instance took with a new epoch',
  }),
  selfFences: defineMetric({
    name: 'tickwork.scheduler.self_fences',
    kind: 'counter',
    help: 'Self-fence events: a lease renewal found leases gone and the instance stopped claiming them',
  }),
  rebalances: defineMetric({
    name: 'tickwork.scheduler.rebalances',
    kind: 'counter',
    help: 'Consumer group rebalances of the scheduler group seen by this instance',
  }),
  errors: defineMetric({
    name: 'tickwork.errors',
    kind: 'counter',
    help: 'Errors by component (fire loop, shard ownership, cluster sampler, …)',
  }),
  commands: defineMetric({
    name: 'tickwork.commands',
    kind: 'counter',
    help: 'Schedule commands consumed, by outcome (rejected ones by code)',
  }),
} as const;

/** A skipped range of occurrences, as the claim reports it. */
export interface SkipRecord {
  readonly tenantId: string;
  readonly reason: string;
  readonly occurrences: number;
}

/** The scheduler's own instruments (per instance). */
export class SchedulerMetrics {
  private readonly m = meter();
  private readonly claimed = counterOf(this.m, SCHEDULER_METRICS.firesClaimed);
  private readonly enqueuedCount = counterOf(this.m, SCHEDULER_METRICS.firesEnqueued);
  private readonly lateness = histogramOf(this.m, SCHEDULER_METRICS.enqueueLateness);
  private readonly skippedCount = counterOf(this.m, SCHEDULER_METRICS.occurrencesSkipped);
  private readonly calendarShiftedCount = counterOf(this.m, SCHEDULER_METRICS.occurrencesCalendarShifted);
  private readonly deferredCount = counterOf(this.m, SCHEDULER_METRICS.claimsDeferred);
  private readonly fencedOutCount = counterOf(this.m, SCHEDULER_METRICS.claimsFencedOut);
  private readonly parkedCount = counterOf(this.m, SCHEDULER_METRICS.jobsParked);
  private readonly epochChangeCount = counterOf(this.m, SCHEDULER_METRICS.epochChanges);
  private readonly selfFenceCount = counterOf(this.m, SCHEDULER_METRICS.selfFences);
  private readonly rebalanceCount = counterOf(this.m, SCHEDULER_METRICS.rebalances);
  private readonly errorCount = counterOf(this.m, SCHEDULER_METRICS.errors);
  private readonly epochs = new Map<number, number>();

  constructor(
    private readonly tenants: TenantLabels,
    shardsOwned: () => number,
  ) {
    gaugeOf(this.m, SCHEDULER_METRICS.shardsOwned).addCallback((r) => r.observe(shardsOwned()));
  }
  /** Counts claimed fires by tenant. */
  fireClaimed(fires: readonly Pick<FireIdentity, 'tenantId'>[]): void {
    for (const [tenant, n] of countBy(fires.map((f) => this.tenants.label(f.tenantId))))
      this.claimed.add(n, { [Attr.Tenant]: tenant });
  }

  /** Counts skipped occurrences by tenant and reason. */
  skipped(skips: readonly SkipRecord[]): void {
    for (const s of skips)
      this.skippedCount.add(s.occurrences, {
        [Attr.Tenant]: this.tenants.label(s.tenantId, 0),
        [Attr.Reason]: s.reason,
      });
  }

  /** Counts occurrences moved by a business calendar (CALENDAR_SHIFT), by tenant. */
  calendarShifted(tenantId: string, n: number): void {
    if (n > 0) this.calendarShiftedCount.add(n, { [Attr.Tenant]: this.tenants.label(tenantId, 0) });
  }

  /** Counts jobs parked as unplannable. */
  parked(n: number): void {
    if (n > 0) this.parkedCount.add(n);
  }

  /** Records enqueue lateness (from `ackedAtMs[i]` when given, else `nowMs`) and counts confirmed fires. */
  enqueued(
    fires: readonly (Pick<FireIdentity, 'tenantId' | 'scheduledFor'> & {
      readonly spreadOffsetMs?: number;
    })[],
    relayed: boolean,
    nowMs = Date.now(),
    ackedAtMs?: readonly number[],
  ): void {
    const counts = new Map<string, number>();
    fires.forEach((f, i) => {
      const tenant = this.tenants.label(f.tenantId, 0);
      counts.set(tenant, (counts.get(tenant) ?? 0) + 1);
      const at = ackedAtMs?.[i] ?? nowMs;
      // From the nominal time under a herd window (policies.spread_ms), else from the scheduled time.
      const origin = f.scheduledFor.getTime() - (f.spreadOffsetMs ?? 0);
      this.lateness.record(seconds(at - origin), { [Attr.Tenant]: tenant });
    });
    for (const [tenant, n] of counts)
      this.enqueuedCount.add(n, { [Attr.Tenant]: tenant, [Attr.RelayedLabel]: String(relayed) });
  }

  /** Counts tenants whose rate cap held back due work this round. */
  deferred(tenantIds: readonly string[], reason = 'RATE_LIMIT'): void {
    for (const t of tenantIds)
      this.deferredCount.add(1, { [Attr.Tenant]: this.tenants.label(t, 0), [Attr.Reason]: reason });
  }

  /** Counts shards a claim found fenced out. */
  fencedOut(shards: readonly number[]): void {
    this.fencedOutCount.add(shards.length);
  }

  /** Counts leases taken with a new epoch since the last change. */
  ownershipChanged(held: readonly { readonly shard: number; readonly epoch: number }[]): void {
    for (const h of held) {
      if (this.epochs.get(h.shard) !== h.epoch)
        this.epochChangeCount.add(1, { [Attr.ShardLabel]: String(h.shard) });
      this.epochs.set(h.shard, h.epoch);
    }
  }

  /** Counts a self-fence event. */
  selfFenced(): void {
    this.selfFenceCount.add(1);
  }

  /** Counts a rebalance of the scheduler group. */
  rebalanced(): void {
    this.rebalanceCount.add(1);
  }

  /** Counts an error of a component. */
  error(component: string): void {
    this.errorCount.add(1, { [Attr.Component]: component });
  }
}
