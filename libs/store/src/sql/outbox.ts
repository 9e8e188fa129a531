/**
 * The outbox's publishing state: a claim's batches are confirmed once Kafka acknowledged every
 * fire of them; batches left unconfirmed past their release time are relayed by the shard's owner.
 */
import {
  fireEventOfRow,
  type ClaimedFire,
  type FireColumns,
  type FireEventSnapshot,
  type FrozenTarget,
  type JsonValue,
  type PendingFiresRequest,
} from '@tickwork/domain';
import { bindTraceContext, type TraceCarrier } from '@tickwork/telemetry';
import type { Db } from './db';

const MARK_ENQUEUED = `UPDATE fire_batches SET enqueued_at = now() WHERE batch_id = ANY($1::bigint[]) AND enqueued_at IS NULL`;

/** Marks outbox batches as confirmed on Kafka (every fire of each was acknowledged). */
export async function markEnqueued(db: Db, batchIds: readonly number[]): Promise<void> {
  if (batchIds.length === 0) return;
  await db.query(MARK_ENQUEUED, [[...new Set(batchIds)]]);
}

const PENDING_FIRES = `WITH pending AS (
  SELECT b.batch_id, b.claimed_at, sum(b.fires) OVER (ORDER BY b.claimed_at, b.batch_id) - b.fires AS before
    FROM fire_batches b
    JOIN shard_leases l ON l.shard = b.shard
    JOIN unnest($1::int[], $2::bigint[]) AS o(shard, epoch) ON o.shard = l.shard AND o.epoch = l.epoch
   WHERE l.owner = $3 AND l.expires_at > now()
     AND b.enqueued_at IS NULL
     AND b.batch_id <> ALL($6::bigint[])
     -- Manual and replayed fires have no claimer publishing them: relay them at once. A
     -- claimed batch is orphaned once it is the relay age past its release time.
     AND (b.trigger <> 'SCHEDULE' OR b.release_at <= now() - make_interval(secs => $4::double precision / 1000))
)
SELECT f.shard, f.batch_id, f.event, f.trace_context,
       f.job_id, f.tenant_id, f.fence_token, f.scheduled_for, f.nominal_time, f.spread_offset_ms,
       -- A claimed fire's event is its columns and its job's target and payload (fireEventOfRow).
       j.target, j.payload
  FROM pending p
  JOIN fires f ON f.batch_id = p.batch_id
  LEFT JOIN jobs j ON f.event IS NULL AND j.job_id = f.job_id
 WHERE p.before < $5
   -- A claimed fire whose job vanished without the freeze trigger (a TRUNCATE, or triggers turned
   -- off by hand) has no target left to send to: it is left out, and its batch confirmed with the
   -- rest, rather than stall this shard's relay for good.
   AND (f.event IS NOT NULL OR j.job_id IS NOT NULL)
 ORDER BY p.claimed_at, p.batch_id`;

/**
 * Outbox batches of shards the caller holds that were due on Kafka (their release time: the
 * claim, or the latest fire's time for a batch claimed ahead) at least `minAgeMs` ago and are
 * not confirmed — fires whose claimer died between commit and produce — oldest first, whole
 * batches only, up to about `limit` fires (at least one batch), without the `exclude`d batches.
 */
export async function pendingFires(db: Db, req: PendingFiresRequest): Promise<ClaimedFire[]> {
  const { rows } = await db.query<
    FireColumns & {
      shard: number;
      batch_id: string;
      event: FireEventSnapshot | FrozenTarget | null;
      trace_context: TraceCarrier | null;
      target: FrozenTarget['target'] | null;
      payload: JsonValue;
    }
  >(PENDING_FIRES, [
    req.shards.map((s) => s.shard),
    req.shards.map((s) => s.epoch),
    req.owner,
    req.minAgeMs,
    req.limit,
    req.exclude ?? [],
  ]);
  return rows.map((r) => {
    const event = fireEventOfRow(r, r.event, r.target ? { target: r.target, payload: r.payload } : null);
    // A relayed fire is published under the trace it was claimed in.
    bindTraceContext(event, r.trace_context ?? undefined);
    return { shard: r.shard, batchId: Number(r.batch_id), event };
  });
}
