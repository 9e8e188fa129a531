/**
 * The ports libs/scheduling owns: what its use cases (the fire loop, shard ownership, the SLO
 * sweep, backfills) need of a store, in the domain's types and with no connection or transaction
 * in sight. libs/store's FireStore, ShardLeaseRepository, SloRepository and BackfillRepository
 * implement them; the apps wire them in (the claim through the decorators of claim-telemetry.ts).
 */
import type {
  ClaimBuilder,
  ClaimedFire,
  ClaimRequest,
  ClaimResult,
  DueProbe,
  DueProbeRequest,
  PacedFires,
  PendingFiresRequest,
  ShardEpoch,
  SloCandidate,
  SloJudgement,
  SloMetricJob,
  SloSweepRequest,
  SloSweepResult,
} from '@tickwork/domain';

/** The claim: probe the held shards for due work, and claim it in one transaction under the shard fence. */
export interface ClaimStore {
  /**
   * Which tenants have due work (and, with `relayAgeMs`, which shards have outbox batches to
   * relay) in the shards the caller appears to hold: no lock, one round trip.
   */
  probeDue(req: DueProbeRequest): Promise<DueProbe>;
  /**
   * Claims up to `limit` due jobs of the shards whose lease the caller still holds: locks them,
   * calls `build` with them at database time (again if the claim is retried job by job), writes
   * what it built — advanced jobs, fires in outbox batches, skips, parked jobs — and commits.
   */
  claimDueJobs(req: ClaimRequest, build: ClaimBuilder): Promise<ClaimResult>;
}

/** The outbox's publishing state. */
export interface FireOutbox {
  /**
   * Unconfirmed outbox batches of held shards past their release time by `minAgeMs` (their claimer
   * died between commit and produce), oldest first, whole batches, about `limit` fires.
   */
  pendingFires(req: PendingFiresRequest): Promise<ClaimedFire[]>;
  /** Marks outbox batches as confirmed on Kafka (every fire of each was acknowledged). */
  markEnqueued(batchIds: readonly number[]): Promise<void>;
}

/** Shard leases with epochs: what fences every claim. */
export interface ShardLeases {
  /** Takes the leases of `shards` that are free or expired, each under a new epoch. */
  acquire(shards: readonly number[], owner: string, ttlMs: number): Promise<ShardEpoch[]>;
  /** Extends the leases still held under their epochs; returns the shards renewed. */
  renew(held: readonly ShardEpoch[], owner: string, ttlMs: number): Promise<number[]>;
  /** Gives leases up (shutdown, or shards assigned elsewhere). */
  release(held: readonly ShardEpoch[], owner: string): Promise<void>;
}

/** The fire SLO sweep's ledger. */
export interface SloStore {
  /** One sweep of one shard under its lease, in one transaction: `judge` decides each candidate. */
  sweepShard(
    req: SloSweepRequest,
    judge: (c: SloCandidate, now: Date) => SloJudgement,
  ): Promise<SloSweepResult>;
  /** The opted-in jobs of `shards` with their dead-man figures, at most `limit`. */
  metricJobs(shards: readonly number[], limit: number): Promise<SloMetricJob[]>;
}

/** An active backfill due for a step. */
export interface DueBackfillRef {
  readonly backfillId: number;
  readonly tenantId: string;
  readonly jobId: string;
  readonly shard: number;
  readonly epoch: number;
}

/** A backfill's paced steps. */
export interface BackfillStore {
  due(owner: string, shards: readonly ShardEpoch[], limit: number): Promise<readonly DueBackfillRef[]>;
  fireNext(req: {
    owner: string;
    due: DueBackfillRef;
    pace: (nextAtMs: number, nowMs: number, ratePerSec: number, left: number) => PacedFires;
  }): Promise<{
    readonly fenced: boolean;
    readonly fired: readonly { readonly tenantId: string; readonly fireId: string }[];
    readonly foundRan: number;
    readonly status: string | null;
  }>;
  activeCount(shards: readonly number[]): Promise<number>;
}
