/**
 * The console's read models beyond jobs and runs: the cluster's shards, outbox, lag and executors
 * (admin only: it is cluster-wide) and lateness from the run ledger (tenant-scoped).
 */
import {
  JOB_ID_PATTERN,
  ValidationError,
  type ExecutorInFlight,
  type LatenessReport,
} from '@tickwork/domain';
import { tenantScope, visibleJob, type Caller } from './caller';
import { PermissionDeniedError } from './errors';
import type { ClusterStatsStore, InsightStore, JobStore } from './ports';

export interface ShardView {
  readonly shard: number;
  readonly owner: string | null;
  readonly epoch: number;
  readonly leaseExpiresAt: Date | null;
  readonly due: number;
  readonly oldestDueAgeSeconds: number;
  readonly outboxPending: number;
  readonly outboxOldestAgeSeconds: number;
}

export interface ConsumerLag {
  readonly group: string;
  readonly topic: string;
  /** Sum over partitions of end − committed offset; null when Kafka did not answer. */
  readonly lag: number | null;
  readonly partitions: number;
  readonly error?: string;
}

export interface ClusterView {
  readonly shards: ShardView[];
  readonly executors: ExecutorInFlight[];
  readonly consumerLag: ConsumerLag[];
}

/** Where consumer lag is read from: the admin's groupLag, and the groups to ask about. */
export interface LagSource {
  readonly groups: readonly { readonly group: string; readonly topic: string }[];
  groupLag(group: string, topic: string): Promise<{ partition: number; committed: string; end: string }[]>;
}

/** The lateness windows the console offers, with their bucket counts. */
export const LATENESS_WINDOWS = {
  hour: { ms: 3_600_000, buckets: 12 },
  day: { ms: 86_400_000, buckets: 24 },
} as const;

/** How long a reading of the consumer lag is shown again: the console polls the cluster every 5 s. */
export const CONSUMER_LAG_TTL_MS = 2_000;

export class InsightService {
  /** The last consumer lag reading (or the one in progress), shared by the cluster views within its TTL. */
  private lagReading: { at: number; lag: Promise<ConsumerLag[]> } | undefined;

  constructor(
    private readonly insight: InsightStore,
    private readonly stats: ClusterStatsStore,
    private readonly jobs: JobStore,
    private readonly lag: LagSource,
    private readonly shardCount: number,
    private readonly now: () => number = Date.now,
    private readonly lagTtlMs = CONSUMER_LAG_TTL_MS,
  ) {}

  /** Shards with owners, epochs, backlog and outbox; executors in flight; consumer lag. Admins only. */
  async cluster(caller: Caller): Promise<ClusterView> {
    if (caller.role !== 'admin') throw new PermissionDeniedError('the cluster view is for admins');
    const [leases, backlog, outbox, executors, consumerLag] = await Promise.all([
      this.insight.shardLeases(),
      this.stats.dueBacklog(this.shardCount),
      this.stats.outbox(this.shardCount),
      this.insight.inFlight(),
      this.consumerLagReading(),
    ]);
    const leaseOf = new Map(leases.map((l) => [l.shard, l]));
    const shards = backlog.map((b, i) => {
      const l = leaseOf.get(b.shard);
      const o = outbox[i];
      return {
        shard: b.shard,
        owner: l?.owner ?? null,
        epoch: l?.epoch ?? 0,
        leaseExpiresAt: l?.expiresAt ?? null,
        due: b.due,
        oldestDueAgeSeconds: b.oldestDueAgeSeconds,
        outboxPending: o?.pending ?? 0,
        outboxOldestAgeSeconds: o?.oldestAgeSeconds ?? 0,
      };
    });
    return { shards, executors, consumerLag };
  }

  /** Lateness p50/p99 and counts over the last hour or day, for a job, a tenant, or (admins) all. */
  async lateness(
    caller: Caller,
    req: { window?: string; tenantId?: string; jobId?: string },
  ): Promise<LatenessReport & { window: keyof typeof LATENESS_WINDOWS }> {
    const window = (req.window || 'hour') as keyof typeof LATENESS_WINDOWS;
    // Own keys only: `in` would take "toString" or "__proto__" for a window.
    if (!Object.hasOwn(LATENESS_WINDOWS, window))
      throw new ValidationError([{ field: 'window', message: 'must be one of hour, day' }]);
    const tenantId = tenantScope(caller, req.tenantId, 'tenant_id');
    let jobId: string | undefined;
    if (req.jobId) {
      // Checked before the lookup: an id PostgreSQL cannot hold (a NUL) would fail the query.
      if (!JOB_ID_PATTERN.test(req.jobId))
        throw new ValidationError([
          { field: 'job_id', message: 'must be 1-128 characters of letters, digits, . _ : -' },
        ]);
      visibleJob(caller, req.jobId, await this.jobs.findJob(req.jobId));
      jobId = req.jobId;
    }
    const w = LATENESS_WINDOWS[window];
    const report = await this.insight.lateness({ jobId, tenantId }, w.ms, w.buckets);
    return { ...report, window };
  }

  /**
   * Every group's lag, read from Kafka at most once per TTL: several admins' consoles polling the
   * cluster page (or one console's polls) share one round of offset requests, and a slow broker
   * costs one page load, not each. A reading never fails (a group's error is in its row).
   */
  private consumerLagReading(): Promise<ConsumerLag[]> {
    const now = this.now();
    const last = this.lagReading;
    if (last && now - last.at < this.lagTtlMs) return last.lag;
    const lag = Promise.all(this.lag.groups.map((g) => this.consumerLag(g.group, g.topic)));
    this.lagReading = { at: now, lag };
    return lag;
  }

  private async consumerLag(group: string, topic: string): Promise<ConsumerLag> {
    try {
      // A Kafka outage must not hold the page: its lag is shown as unknown after 3 s.
      let timer: NodeJS.Timeout | undefined;
      const parts = await Promise.race([
        this.lag.groupLag(group, topic),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('Kafka did not answer within 3 s')), 3000);
        }),
      ]).finally(() => clearTimeout(timer));
      const lag = parts.reduce((sum, p) => {
        const committed = Number(p.committed);
        const end = Number(p.end);
        return sum + (committed >= 0 ? Math.max(0, end - committed) : end);
      }, 0);
      return { group, topic, lag, partitions: parts.length };
    } catch (e) {
      return { group, topic, lag: null, partitions: 0, error: e instanceof Error ? e.message : String(e) };
    }
  }
}
