/** Fire-log retention: the confirmed past of the outbox, the skip records and SLO verdicts, deleted in pages. */
import type { Db } from './db';

const PURGE_FIRE_LOG = `WITH candidates AS (
  SELECT batch_id, sum(fires) OVER (ORDER BY batch_id) - fires AS before
    FROM (SELECT batch_id, fires FROM fire_batches
           WHERE enqueued_at IS NOT NULL
             AND claimed_at < now() - make_interval(secs => $1::double precision / 1000)
           ORDER BY batch_id
           LIMIT $2
           FOR UPDATE SKIP LOCKED) o
), doomed AS (
  SELECT batch_id FROM candidates WHERE before < $2
), gone AS (
  DELETE FROM fires f USING doomed d WHERE f.batch_id = d.batch_id RETURNING 1
), batches AS (
  DELETE FROM fire_batches b USING doomed d WHERE b.batch_id = d.batch_id
), skips AS (
  DELETE FROM occurrence_skips
   WHERE id IN (SELECT id FROM occurrence_skips
                 WHERE recorded_at < now() - make_interval(secs => $1::double precision / 1000)
                 ORDER BY id LIMIT $2)
  RETURNING 1
), slo AS (
  -- Fire SLO verdicts as old go with their fires.
  DELETE FROM occurrence_slo
   WHERE (job_id, fence_token) IN (SELECT job_id, fence_token FROM occurrence_slo
                 WHERE recorded_at < now() - make_interval(secs => $1::double precision / 1000)
                 ORDER BY recorded_at LIMIT $2)
  RETURNING 1
)
SELECT (SELECT count(*) FROM gone) AS fires,
       GREATEST((SELECT count(*) FROM skips), (SELECT count(*) FROM slo)) AS skips`;

/**
 * Deletes the oldest confirmed batches claimed more than `retentionMs` ago, with their fires —
 * whole batches, about `batchSize` fires per call (at least one batch) — and skipped-occurrence
 * records and fire SLO verdicts as old. Batches still in the outbox are never touched. Returns
 * the rows deleted: a pass ends when a call comes back short.
 */
export async function purgeFireLog(db: Db, retentionMs: number, batchSize: number): Promise<number> {
  const { rows } = await db.query<{ fires: string; skips: string }>(PURGE_FIRE_LOG, [retentionMs, batchSize]);
  // Count skips too, or a backlog of them would end the pass.
  return Math.max(Number(rows[0]!.fires), Number(rows[0]!.skips));
}
