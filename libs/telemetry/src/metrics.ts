/**
 * Tickwork's metrics: one catalog of names, and the instruments each app records through. Names
 * are OpenTelemetry names; on /metrics they appear with dots as underscores, their unit as a suffix
 * (`_seconds`) and counters with `_total` (METRIC_CATALOG lists the Prometheus names the dashboard
 * and alert rules use).
 * Instruments are made from the global meter, so construct these classes after startTelemetry.
 */
import { metrics, ValueType, type Attributes, type Meter } from '@opentelemetry/api';
import { Attr } from './attributes';
import { withUnitSuffix } from './prometheus-names';
import type { FireIdentity } from './tracing';
import type { TenantLabels } from './tenant-labels';

const METER = 'tickwork';

/** Lateness buckets, seconds: fine below a second (the SLO), coarse up to an hour (misfires). */
export const LATENESS_BUCKETS_SECONDS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600,
] as const;
/** Call durations, seconds. */
export const DURATION_BUCKETS_SECONDS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
] as const;

/** Every Tickwork metric: OpenTelemetry name → kind (which decides the Prometheus name). */
export const METRICS = {
  firesClaimed: 'tickwork.fires.claimed',
  firesEnqueued: 'tickwork.fires.enqueued',
  enqueueLateness: 'tickwork.fire.enqueue_lateness_seconds',
  startLateness: 'tickwork.fire.start_lateness_seconds',
  occurrencesSkipped: 'tickwork.occurrences.skipped',
  claimsDeferred: 'tickwork.claims.deferred',
  claimsFencedOut: 'tickwork.claims.fenced_out',
  jobsParked: 'tickwork.jobs.parked',
  shardsOwned: 'tickwork.scheduler.shards_owned',
  epochChanges: 'tickwork.scheduler.epoch_changes',
  selfFences: 'tickwork.scheduler.self_fences',
  rebalances: 'tickwork.scheduler.rebalances',
  errors: 'tickwork.errors',
  commands: 'tickwork.commands',
  dueBacklog: 'tickwork.due_backlog',
  dueOldestAge: 'tickwork.due_oldest_age_seconds',
  outboxPending: 'tickwork.outbox.pending',
  outboxOldestAge: 'tickwork.outbox.oldest_age_seconds',
  shardsUnowned: 'tickwork.shards.unowned',
  consumerLag: 'tickwork.kafka.consumer_lag',
  clusterSampleAge: 'tickwork.cluster_sample.age_seconds',
  firesExecuted: 'tickwork.fires.executed',
  firesSucceeded: 'tickwork.fires.succeeded',
  firesRetried: 'tickwork.fires.retried',
  firesDeadLettered: 'tickwork.fires.dead_lettered',
  firesDuplicate: 'tickwork.fires.duplicates',
  executorInFlight: 'tickwork.executor.in_flight',
  leaseRenewals: 'tickwork.executor.lease_renewals',
  leaseLosses: 'tickwork.executor.lease_losses',
  targetDuration: 'tickwork.target.duration_seconds',
  httpServerDuration: 'http.server.request.duration',
  rpcServerDuration: 'rpc.server.call.duration',
  fireSloVerdicts: 'tickwork.fire.slo_verdicts',
  jobSloVerdicts: 'tickwork.job.slo_verdicts',
  jobLastSuccess: 'tickwork.job.last_success_timestamp',
  jobInterval: 'tickwork.job.interval',
  backfillFires: 'tickwork.backfill.fires',
  backfillsActive: 'tickwork.backfills.active',
} as const;

type Kind = 'counter' | 'histogram' | 'gauge';
const KINDS: Record<keyof typeof METRICS, Kind> = {
  firesClaimed: 'counter',
  firesEnqueued: 'counter',
  enqueueLateness: 'histogram',
  startLateness: 'histogram',
  occurrencesSkipped: 'counter',
  claimsDeferred: 'counter',
  claimsFencedOut: 'counter',
  jobsParked: 'counter',
  shardsOwned: 'gauge',
  epochChanges: 'counter',
  selfFences: 'counter',
  rebalances: 'counter',
  errors: 'counter',
  commands: 'counter',
  dueBacklog: 'gauge',
  dueOldestAge: 'gauge',
  outboxPending: 'gauge',
  outboxOldestAge: 'gauge',
  shardsUnowned: 'gauge',
  consumerLag: 'gauge',
  clusterSampleAge: 'gauge',
  firesExecuted: 'counter',
  firesSucceeded: 'counter',
  firesRetried: 'counter',
  firesDeadLettered: 'counter',
  firesDuplicate: 'counter',
  executorInFlight: 'gauge',
  leaseRenewals: 'counter',
  leaseLosses: 'counter',
  targetDuration: 'histogram',
  httpServerDuration: 'histogram',
  rpcServerDuration: 'histogram',
  fireSloVerdicts: 'counter',
  jobSloVerdicts: 'counter',
  jobLastSuccess: 'gauge',
  jobInterval: 'gauge',
  backfillFires: 'counter',
  backfillsActive: 'gauge',
};

/** The units of the metrics that have one (the others are counts). */
const UNITS: Partial<Record<keyof typeof METRICS, string>> = {
  enqueueLateness: 's',
  startLateness: 's',
  dueOldestAge: 's',
  outboxOldestAge: 's',
  clusterSampleAge: 's',
  targetDuration: 's',
  httpServerDuration: 's',
  rpcServerDuration: 's',
  jobLastSuccess: 's',
  jobInterval: 's',
};

/** The Prometheus series names of every metric (histograms: _bucket, _sum, _count), with unit suffixes. */
export const METRIC_CATALOG: readonly string[] = Object.entries(METRICS).flatMap(([key, name]) => {
  const kind = KINDS[key as keyof typeof METRICS];
  const base = withUnitSuffix(name, UNITS[key as keyof typeof METRICS], kind === 'gauge');
  switch (kind) {
    case 'counter':
      return [`${base}_total`];
    case 'histogram':
      return [`${base}_bucket`, `${base}_sum`, `${base}_count`];
    case 'gauge':
      return [base];
  }
});

/** Tickwork's meter (from the provider startTelemetry registered). */
export function meter(): Meter {
  return metrics.getMeter(METER);
}

const seconds = (ms: number): number => Math.max(0, ms) / 1000;

/** A skipped range of occurrences, as the claim reports it. */
export interface SkipRecord {
  readonly tenantId: string;
  readonly reason: string;
  readonly occurrences: number;
}

/** The scheduler's own instruments (per instance). */
export class SchedulerMetrics {
  private readonly m = meter();
  private readonly claimed = this.m.createCounter(METRICS.firesClaimed, {
    description: 'Occurrences claimed (one fence token each), by tenant',
    valueType: ValueType.INT,
  });
  private readonly enqueuedCount = this.m.createCounter(METRICS.firesEnqueued, {
    description: 'Fires confirmed on the fires topic, by tenant; relayed="true" for outbox re-publishes',
    valueType: ValueType.INT,
  });
  private readonly lateness = this.m.createHistogram(METRICS.enqueueLateness, {
    description: 'Enqueue time minus scheduled time of each fire, by tenant',
    unit: 's',
    advice: { explicitBucketBoundaries: [...LATENESS_BUCKETS_SECONDS] },
  });
  private readonly skippedCount = this.m.createCounter(METRICS.occurrencesSkipped, {
    description: 'Occurrences that did not fire, by tenant and reason (MISFIRE_SKIP, COALESCED, OVERLAP, …)',
    valueType: ValueType.INT,
  });
  private readonly deferredCount = this.m.createCounter(METRICS.claimsDeferred, {
    description: 'Claim rounds in which a tenant had due work held back, by tenant and reason',
    valueType: ValueType.INT,
  });
  private readonly fencedOutCount = this.m.createCounter(METRICS.claimsFencedOut, {
    description: 'Shards a claim found fenced out (lease lost or taken over)',
    valueType: ValueType.INT,
  });
  private readonly parkedCount = this.m.createCounter(METRICS.jobsParked, {
    description: 'Jobs paused by the claim because their stored definition could not be planned',
    valueType: ValueType.INT,
  });
  private readonly epochChangeCount = this.m.createCounter(METRICS.epochChanges, {
    description: 'Shard leases this instance took with a new epoch',
    valueType: ValueType.INT,
  });
  private readonly selfFenceCount = this.m.createCounter(METRICS.selfFences, {
    description:
      'Self-fence events: a lease renewal found leases gone and the instance stopped claiming them',
    valueType: ValueType.INT,
  });
  private readonly rebalanceCount = this.m.createCounter(METRICS.rebalances, {
    description: 'Consumer group rebalances of the scheduler group seen by this instance',
    valueType: ValueType.INT,
  });
  private readonly errorCount = this.m.createCounter(METRICS.errors, {
    description: 'Errors by component (fire loop, shard ownership, cluster sampler, …)',
    valueType: ValueType.INT,
  });
  private readonly epochs = new Map<number, number>();

  constructor(
    private readonly tenants: TenantLabels,
    shardsOwned: () => number,
  ) {
    this.m
      .createObservableGauge(METRICS.shardsOwned, {
        description: 'Shards whose lease this instance holds and may claim from',
        valueType: ValueType.INT,
      })
      .addCallback((r) => r.observe(shardsOwned()));
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

/** One sample of the cluster-wide state (from the database and the Kafka admin API). */
export interface ClusterSample {
  /** Every shard, with its due backlog (jobs with next_run_at ≤ now, not yet claimed). */
  readonly backlog?: readonly {
    readonly shard: number;
    readonly due: number;
    readonly oldestDueAgeSeconds: number;
  }[];
  /** Every shard, with its outbox (fires claimed, not yet confirmed on Kafka). */
  readonly outbox?: readonly {
    readonly shard: number;
    readonly pending: number;
    readonly oldestAgeSeconds: number;
  }[];
  readonly unownedShards?: number;
  readonly lag?: readonly {
    readonly group: string;
    readonly topic: string;
    readonly partition: number;
    readonly lag: number;
  }[];
}

/**
 * Gauges of the cluster-wide state, reported from the latest sample (the sampler runs on a timer;
 * a scrape never waits for a query). Each part keeps its last value until a newer one replaces it.
 */
export class ClusterGauges {
  private readonly m = meter();
  private sample: Required<ClusterSample> = { backlog: [], outbox: [], unownedShards: 0, lag: [] };
  private hasUnowned = false;
  private sampledAt: number | undefined;

  constructor(private readonly now: () => number = Date.now) {
    const gauge = (name: string, description: string, unit?: string) =>
      this.m.createObservableGauge(name, { description, ...(unit ? { unit } : {}) });
    gauge(METRICS.dueBacklog, 'Jobs due (next_run_at ≤ now) and not yet claimed, per shard').addCallback(
      (r) => {
        for (const b of this.sample.backlog) r.observe(b.due, { [Attr.ShardLabel]: String(b.shard) });
      },
    );
    gauge(
      METRICS.dueOldestAge,
      'How long the oldest due, unclaimed job of each shard has been due',
      's',
    ).addCallback((r) => {
      for (const b of this.sample.backlog)
        r.observe(b.oldestDueAgeSeconds, { [Attr.ShardLabel]: String(b.shard) });
    });
    gauge(METRICS.outboxPending, 'Fires claimed but not yet confirmed on Kafka, per shard').addCallback(
      (r) => {
        for (const o of this.sample.outbox) r.observe(o.pending, { [Attr.ShardLabel]: String(o.shard) });
      },
    );
    gauge(
      METRICS.outboxOldestAge,
      'How long the most overdue outbox batch of each shard has been due on Kafka',
      's',
    ).addCallback((r) => {
      for (const o of this.sample.outbox)
        r.observe(o.oldestAgeSeconds, { [Attr.ShardLabel]: String(o.shard) });
    });
    gauge(METRICS.shardsUnowned, 'Shards with no live lease: nobody claims their due jobs').addCallback(
      (r) => {
        if (this.hasUnowned) r.observe(this.sample.unownedShards);
      },
    );
    gauge(
      METRICS.consumerLag,
      'Messages not yet committed by a consumer group, per topic partition',
    ).addCallback((r) => {
      for (const l of this.sample.lag)
        r.observe(l.lag, {
          [Attr.Group]: l.group,
          [Attr.Topic]: l.topic,
          [Attr.Partition]: String(l.partition),
        });
    });
    gauge(METRICS.clusterSampleAge, 'Seconds since the cluster gauges were last sampled', 's').addCallback(
      (r) => {
        if (this.sampledAt !== undefined) r.observe(seconds(this.now() - this.sampledAt));
      },
    );
  }

  /** Replaces the parts of the sample that are given. */
  update(sample: ClusterSample): void {
    this.sample = {
      backlog: sample.backlog ?? this.sample.backlog,
      outbox: sample.outbox ?? this.sample.outbox,
      unownedShards: sample.unownedShards ?? this.sample.unownedShards,
      lag: sample.lag ?? this.sample.lag,
    };
    if (sample.unownedShards !== undefined) this.hasUnowned = true;
    this.sampledAt = this.now();
  }
}

/**
 * A counter summed here and read by the exporter when it collects: one map update per count
 * instead of an SDK record (which hashes the attributes every time) — for counts made per fire.
 */
class TalliedCounter {
  private readonly tallies = new Map<string, { readonly attributes: Attributes; value: number }>();

  constructor(m: Meter, name: string, description: string) {
    m.createObservableCounter(name, { description, valueType: ValueType.INT }).addCallback((r) => {
      for (const t of this.tallies.values()) r.observe(t.value, t.attributes);
    });
  }

  /** Adds `n` under `key`, which stands for the attributes `attributes()` builds. */
  add(n: number, key: string, attributes: () => Attributes): void {
    const t = this.tallies.get(key);
    if (t) t.value += n;
    else this.tallies.set(key, { attributes: attributes(), value: n });
  }
}

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
  private readonly lateness = this.m.createHistogram(METRICS.startLateness, {
    description: 'Execution start time minus scheduled time of each fire (first attempts), by tenant',
    unit: 's',
    advice: { explicitBucketBoundaries: [...LATENESS_BUCKETS_SECONDS] },
  });
  private readonly executed = new TalliedCounter(
    this.m,
    METRICS.firesExecuted,
    'Attempts that ran to an outcome, by tenant and outcome',
  );
  private readonly succeeded = new TalliedCounter(
    this.m,
    METRICS.firesSucceeded,
    'Fires whose target call succeeded, by tenant',
  );
  private readonly retried = new TalliedCounter(
    this.m,
    METRICS.firesRetried,
    'Attempts handed to a retry tier, by tenant',
  );
  private readonly deadLetteredCount = this.m.createCounter(METRICS.firesDeadLettered, {
    description: 'Fires sent to the dead-letter topic, by tenant and reason',
    valueType: ValueType.INT,
  });
  private readonly duplicates = this.m.createCounter(METRICS.firesDuplicate, {
    description: 'Deliveries the run ledger recognised as already run or running elsewhere, by reason',
    valueType: ValueType.INT,
  });
  private readonly renewals = this.m.createCounter(METRICS.leaseRenewals, {
    description: 'Run lease heartbeats that renewed the lease',
    valueType: ValueType.INT,
  });
  private readonly losses = this.m.createCounter(METRICS.leaseLosses, {
    description:
      'Run leases found gone (by a heartbeat, or when recording the outcome): the call was cut short or its outcome left to the new holder',
    valueType: ValueType.INT,
  });
  private readonly targetDuration = this.m.createHistogram(METRICS.targetDuration, {
    description: 'Target call duration, by target type and outcome (ok, http_5xx, timeout, network, …)',
    unit: 's',
    advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_SECONDS] },
  });

  constructor(
    private readonly tenants: TenantLabels,
    inFlight: () => number,
  ) {
    this.m
      .createObservableGauge(METRICS.executorInFlight, {
        description: 'Fires being executed right now (slots in use)',
        valueType: ValueType.INT,
      })
      .addCallback((r) => r.observe(inFlight()));
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

/** Request durations of the API (semantic-convention names and attributes). */
export class ApiMetrics {
  private readonly m = meter();
  private readonly http = this.m.createHistogram(METRICS.httpServerDuration, {
    description: 'Duration of HTTP server requests',
    unit: 's',
    advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_SECONDS] },
  });
  private readonly rpc = this.m.createHistogram(METRICS.rpcServerDuration, {
    description: 'Duration of gRPC server calls',
    unit: 's',
    advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_SECONDS] },
  });

  /** Records one HTTP request. */
  httpRequest(method: string, route: string, status: number, durationMs: number): void {
    this.http.record(seconds(durationMs), {
      [Attr.HttpMethod]: method,
      [Attr.HttpRoute]: route,
      [Attr.HttpStatus]: status,
    });
  }

  /** Records one gRPC call. */
  rpcCall(service: string, method: string, code: number, durationMs: number): void {
    this.rpc.record(seconds(durationMs), {
      [Attr.RpcSystem]: 'grpc',
      [Attr.RpcService]: service,
      [Attr.RpcMethod]: method,
      [Attr.RpcGrpcStatus]: code,
    });
  }
}

function countBy(values: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const v of values) out.set(v, (out.get(v) ?? 0) + 1);
  return out;
}

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
  private readonly verdicts = this.m.createCounter(METRICS.fireSloVerdicts, {
    description:
      'Scheduled fires judged against their tolerance, by tenant and result (ON_TIME, LATE, MISSED)',
    valueType: ValueType.INT,
  });
  private readonly jobVerdicts = this.m.createCounter(METRICS.jobSloVerdicts, {
    description: 'Fire SLO verdicts of the jobs that opted in (policies.slo_metrics), by job',
    valueType: ValueType.INT,
  });
  private samples: readonly SloJobSample[] = [];

  constructor(private readonly tenants: TenantLabels) {
    this.m
      .createObservableGauge(METRICS.jobLastSuccess, {
        description: 'When an opted-in job last ran successfully (its creation time if never), epoch seconds',
        unit: 's',
      })
      .addCallback((r) => {
        for (const s of this.samples)
          r.observe(s.lastSuccessSeconds, { [Attr.Tenant]: s.tenantId, [Attr.JobLabel]: s.jobId });
      });
    this.m
      .createObservableGauge(METRICS.jobInterval, {
        description: "An opted-in job's nominal interval between occurrences, seconds",
        unit: 's',
      })
      .addCallback((r) => {
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

/** Backfill instruments of a scheduler instance: fires made, and active backfills of its shards. */
export class BackfillMetrics {
  private readonly m = meter();
  private readonly fires = this.m.createCounter(METRICS.backfillFires, {
    description: 'Backfill fires put in the outbox (trigger BACKFILL), by tenant',
    valueType: ValueType.INT,
  });

  constructor(
    private readonly tenants: TenantLabels,
    active: () => number,
  ) {
    this.m
      .createObservableGauge(METRICS.backfillsActive, {
        description:
          "Backfills PENDING or RUNNING in this instance's shards (sum over instances: the cluster's)",
        valueType: ValueType.INT,
      })
      .addCallback((r) => r.observe(active()));
  }

  /** Counts backfill fires, by tenant. */
  fired(events: readonly { readonly tenantId: string }[]): void {
    const byTenant = new Map<string, number>();
    for (const e of events) byTenant.set(e.tenantId, (byTenant.get(e.tenantId) ?? 0) + 1);
    for (const [tenantId, n] of byTenant) this.fires.add(n, { [Attr.Tenant]: this.tenants.label(tenantId) });
  }
}
