/**
 * The fire SLO sweep's vocabulary: what libs/scheduling's SloSweeper asks of its SloStore port
 * (libs/store's SloRepository implements it) and what it gets back.
 */
import type { FireSloReason } from './fire-slo';
import type { JobPolicies } from './policies';
import type { Schedule } from './schedule';

/** A scheduled fire to judge: from a new batch (job's current definition) or from the watch list. */
export interface SloCandidate {
  readonly jobId: string;
  readonly fenceToken: number;
  readonly tenantId: string;
  readonly shard: number;
  readonly nominalTime: Date;
  readonly dstShiftMs: number;
  /** When its run first started (the run ledger row's creation), or null. */
  readonly firstStartedAt: Date | null;
  /** The job's schedule and policies now; null when the job was deleted. */
  readonly schedule: Schedule | null;
  readonly policies: JobPolicies | null;
  /** Set for a fire already on the watch list: the tolerance and deadline it was given then. */
  readonly watched: { readonly toleranceMs: number; readonly deadline: Date } | null;
}

/** What the judge said of a candidate. */
export type SloJudgement =
  | { readonly verdict: 'ON_TIME' | 'IGNORED' }
  | {
      readonly verdict: FireSloReason;
      readonly latenessMs: number | null;
      readonly toleranceMs: number;
      readonly deadline: Date;
    }
  | { readonly verdict: 'PENDING'; readonly toleranceMs: number; readonly deadline: Date };

/** A verdict this sweep recorded (a fire judged before, by a sweep repeated after a crash, is not). */
export interface RecordedSloVerdict {
  readonly jobId: string;
  readonly tenantId: string;
  readonly reason: FireSloReason;
  readonly latenessMs: number | null;
  /** The job opted in to per-job SLO metrics. */
  readonly sloMetrics: boolean;
}

export interface SloSweepResult {
  /** False when this instance no longer holds the shard under that epoch (nothing was done). */
  readonly held: boolean;
  readonly now: Date;
  /** Fires judged on time (nothing recorded). */
  readonly onTime: readonly {
    readonly tenantId: string;
    readonly jobId: string;
    readonly sloMetrics: boolean;
  }[];
  readonly recorded: readonly RecordedSloVerdict[];
  /** Fires still undecided after this sweep (on the watch list). */
  readonly pending: number;
  /** Scheduled batches newly looked at. */
  readonly batches: number;
  /** More batches are waiting past this sweep's page: sweep the shard again. */
  readonly more: boolean;
}

export interface SloSweepRequest {
  readonly shard: number;
  readonly epoch: number;
  readonly owner: string;
  /** Batches claimed less than this long ago are left for a later sweep (their fires are still starting). */
  readonly settleMs: number;
  /** Most batches (and most watched fires) one sweep looks at. */
  readonly limit: number;
  /** Most fires of new batches one sweep judges (whole batches; at least one). */
  readonly maxFires: number;
}

/** An opted-in job's dead-man figures. */
export interface SloMetricJob {
  readonly jobId: string;
  readonly tenantId: string;
  readonly schedule: Schedule;
  /** Its last SUCCEEDED run's finish, or null when it never succeeded. */
  readonly lastSuccessAt: Date | null;
  readonly createdAt: Date;
}
