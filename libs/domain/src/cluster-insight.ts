/**
 * What the console's cluster and lateness views show: shard leases, runs in flight per executor,
 * each shard's due backlog and outbox, and the lateness of finished runs. libs/jobs' InsightStore
 * and ClusterStatsStore ports return these; libs/store's InsightRepository and
 * ClusterStatsRepository implement them.
 */

/** A shard's lease: who holds it, under which epoch, until when. */
export interface ShardLease {
  readonly shard: number;
  readonly owner: string | null;
  readonly epoch: number;
  readonly expiresAt: Date | null;
}

export interface ExecutorInFlight {
  readonly owner: string;
  readonly running: number;
  readonly retrying: number;
}

/** Which runs a lateness query covers: one job, one tenant, or (null, null) every tenant. */
export interface LatenessScope {
  readonly jobId?: string;
  readonly tenantId?: string;
}

export interface LatenessBucket {
  readonly start: Date;
  readonly runs: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

export interface LatenessRow {
  readonly key: string;
  readonly runs: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

export interface LatenessReport {
  readonly buckets: LatenessBucket[];
  /** Per job (a tenant's or every tenant's view) or per tenant (the all-tenant view), worst p99 first. */
  readonly byJob: LatenessRow[];
  readonly byTenant: LatenessRow[];
  readonly counts: { fired: number; retried: number; deadLettered: number; skipped: number };
  readonly overall: { p50Ms: number | null; p99Ms: number | null };
  /**
   * True when a bucket held more runs than were read: its percentiles are of its newest runs, and
   * the retried and dead-lettered counts are scaled from them (fired is exact up to the count cap,
   * 1,000,000 runs in the window, and at least that beyond it).
   */
  readonly truncated: boolean;
}

export interface ShardBacklog {
  readonly shard: number;
  /** Due, unclaimed jobs (at most `cap` per tenant are counted). */
  readonly due: number;
  /** Seconds since the oldest of them was due; 0 when none is. */
  readonly oldestDueAgeSeconds: number;
}

export interface ShardOutbox {
  readonly shard: number;
  /** Fires claimed and not yet confirmed on Kafka (at most `cap` are counted). */
  readonly pending: number;
  /** Seconds since the most overdue of them was due on Kafka (its release time); 0 when none is. */
  readonly oldestAgeSeconds: number;
}
