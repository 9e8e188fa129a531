/**
 * The claim's write, one statement for a group of planned jobs: advance the jobs, open one outbox
 * batch per shard of the group (a relay takes over a shard's batches whole) and record the fires
 * in them. The fire rows take the job's tenant and version from the UPDATE's RETURNING, not from
 * a second read of the jobs. They store no event: a claimed fire's event is its own columns and
 * its job's target and payload (fireEventOfRow, libs/domain fire-snapshot.ts), so no fire row
 * copies the job's JSON (measured: that copy was 15 % of this statement's time).
 * An occurrence that already has a fire (a schedule changed or a job re-created after its
 * occurrence was claimed early) is not fired twice: its row is not inserted and it comes back
 * among the refired, which dropRefired takes out of their batches.
 */
import { fireIdOf, type ClaimColumns } from '@tickwork/domain';
import type { PoolClient } from 'pg';

const WRITE_CLAIMS = `WITH u AS (
  UPDATE jobs j
     SET fence_token = j.fence_token + v.n,
         fires_count = j.fires_count + v.n,
         next_run_at = v.next,
         next_nominal_at = v.nominal,
         next_dst_shift_ms = v.shift,
         next_calendar_shift_ms = v.cal_shift,
         status = v.status,
         -- A resume's catch-up choice applies to this claim, the first after the resume.
         resume_catch_up = NULL,
         last_fired_at = CASE WHEN v.n > 0 THEN now() ELSE j.last_fired_at END,
         updated_at = now()
    FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::timestamptz[], $5::text[], $13::int[], $16::bigint[])
         AS v(job_id, n, next, nominal, status, shift, cal_shift)
   WHERE j.job_id = v.job_id
  RETURNING j.job_id, j.tenant_id, j.shard, j.version
), b AS (
  -- A batch claimed ahead is due on Kafka at its latest fire's time (the relay waits for it).
  INSERT INTO fire_batches (shard, trigger, claimed_by, fires, release_at)
  SELECT x.shard, 'SCHEDULE', $11, count(*), greatest(now(), max(x.scheduled::timestamptz))
    FROM unnest($12::int[], $9::text[]) AS x(shard, scheduled) GROUP BY x.shard
  RETURNING batch_id, shard
), f AS (
  -- Each fire records the job version it was claimed under; its event is its columns and the
  -- job's target and payload (no copy here: a trigger freezes them should they change).
  INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, dst_shift_ms, scheduled_for, spread_offset_ms,
                     claimed_by, trace_context, batch_id, job_version, calendar_shift_ms, calendar)
  SELECT v.job_id, v.token, u.tenant_id, u.shard, v.nominal::timestamptz, v.shift, v.scheduled::timestamptz, v.spread,
         $11, v.trace, b.batch_id, u.version, v.cal_shift, v.calendar
    FROM unnest($6::text[], $7::bigint[], $8::text[], $9::text[], $10::jsonb[], $14::int[], $15::bigint[],
                $17::bigint[], $18::text[])
         AS v(job_id, token, nominal, scheduled, trace, shift, spread, cal_shift, calendar)
    JOIN u ON u.job_id = v.job_id
    JOIN b ON b.shard = u.shard
  -- An occurrence is (nominal instant, DST shift, calendar shift): two at one instant are both fired.
  ON CONFLICT (job_id, nominal_time, dst_shift_ms, calendar_shift_ms) WHERE trigger = 'SCHEDULE' DO NOTHING
  RETURNING job_id, fence_token
)
SELECT batch_id, shard, NULL AS job_id, NULL AS token FROM b
UNION ALL
SELECT NULL, NULL, v.job_id, v.token
  FROM unnest($6::text[], $7::bigint[]) AS v(job_id, token)
 WHERE NOT EXISTS (SELECT 1 FROM f WHERE f.job_id = v.job_id AND f.fence_token = v.token)`;

/** What the write made: the batch of each shard, and the fire ids of occurrences that already had a fire. */
export interface WrittenClaims {
  readonly batchOfShard: ReadonlyMap<number, number>;
  readonly refired: ReadonlySet<string>;
}

/** Writes a group's claim (its column arrays) as `owner`. */
export async function writeClaims(
  client: PoolClient,
  owner: string,
  c: ClaimColumns,
): Promise<WrittenClaims> {
  const { rows } = await client.query<{
    batch_id: string | null;
    shard: number | null;
    job_id: string | null;
    token: string | null;
  }>(WRITE_CLAIMS, [
    c.jobs.jobId,
    c.jobs.n,
    c.jobs.next,
    c.jobs.nextNominal,
    c.jobs.status,
    c.fires.jobId,
    c.fires.token,
    c.fires.nominal,
    c.fires.scheduled,
    c.fires.trace,
    owner,
    c.fires.shard,
    c.jobs.nextShift,
    c.fires.shift,
    c.fires.spread,
    c.jobs.nextCalendarShift,
    c.fires.calendarShift,
    c.fires.calendar,
  ]);
  const batchOfShard = new Map<number, number>();
  const refired = new Set<string>();
  for (const r of rows)
    if (r.job_id !== null) refired.add(fireIdOf({ jobId: r.job_id, fenceToken: Number(r.token) }));
    else batchOfShard.set(r.shard!, Number(r.batch_id));
  return { batchOfShard, refired };
}

const DROP_REFIRED = `WITH d AS (SELECT * FROM unnest($1::bigint[], $2::int[]) AS d(batch_id, n)),
     emptied AS (DELETE FROM fire_batches b USING d WHERE b.batch_id = d.batch_id AND b.fires <= d.n)
UPDATE fire_batches b SET fires = b.fires - d.n FROM d WHERE b.batch_id = d.batch_id AND b.fires > d.n`;

/**
 * Takes `dropped` fires (count per batch) out of their batches' counts; a batch left with no fire
 * is deleted, so no empty batch waits for a relay.
 */
export async function dropRefired(client: PoolClient, dropped: ReadonlyMap<number, number>): Promise<void> {
  await client.query(DROP_REFIRED, [[...dropped.keys()], [...dropped.values()]]);
}
