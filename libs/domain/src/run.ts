/** The run ledger: one row per fire (job_id, fence_token), the executor's idempotency key. */
import type { FenceToken } from './fence';

export type RunStatus = 'RUNNING' | 'RETRYING' | 'SUCCEEDED' | 'DEAD_LETTERED' | 'SKIPPED';
export const RUN_STATUSES: readonly RunStatus[] = [
  'RUNNING',
  'RETRYING',
  'SUCCEEDED',
  'DEAD_LETTERED',
  'SKIPPED',
];

/** A run in a final state is never executed again. */
export function isFinalRunStatus(status: RunStatus): boolean {
  return status === 'SUCCEEDED' || status === 'DEAD_LETTERED' || status === 'SKIPPED';
}

export interface Run {
  readonly jobId: string;
  readonly fenceToken: FenceToken;
  readonly tenantId: string;
  readonly fireId: string;
  readonly scheduledFor: Date;
  readonly nominalTime: Date;
  /** The herd-window slot's offset: scheduledFor = the slot; lateness counts from scheduledFor − this. */
  readonly spreadOffsetMs?: number;
  readonly attempt: number;
  readonly status: RunStatus;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: Date | null;
  readonly startedAt: Date | null;
  readonly finishedAt: Date | null;
  readonly httpStatus: number | null;
  readonly error: string | null;
  /**
   * The job version (its etag's counter) the fire was claimed under: a job's history survives its
   * edits. Null for runs recorded before versions were; absent where a run is built in memory.
   */
  readonly jobVersion?: number | null;
}
