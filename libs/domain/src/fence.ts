/**
 * Fence tokens. Every claim of a job bumps its fence token, so one occurrence is identified by
 * (job_id, fence_token) from the scheduler's claim to the executor's ledger; a stale holder's
 * writes carry an older token and are rejected.
 */
export type FenceToken = number;

/** A fire's identity: stable across re-deliveries, retries and re-enqueues of the same occurrence. */
export interface FireKey {
  readonly jobId: string;
  readonly fenceToken: FenceToken;
}

/** The stable id of one fire, used as the Kafka key suffix, the webhook-id and the dedupe key. */
export function fireIdOf(key: FireKey): string {
  return `${key.jobId}:${key.fenceToken}`;
}

/** A shard's ownership epoch: raised on every change of owner, checked by every claim. */
export interface ShardEpoch {
  readonly shard: number;
  readonly epoch: number;
}
