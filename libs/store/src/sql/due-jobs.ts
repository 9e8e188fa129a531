/**
 * The claim's scan: per (shard, tenant) lane, up to its cap of due SCHEDULED jobs, oldest due
 * first, locked FOR UPDATE SKIP LOCKED (a concurrent claim takes other rows, never waits), with
 * what planning them needs: overlap FORBID's in-flight check, the resolved calendars, and the
 * trace of the request that last scheduled the job.
 */
import { MAX_EVENT_AGE_MS, type DueJob, type JobTraceOrigin, type UnplannableJob } from '@tickwork/domain';
import type { PoolClient } from 'pg';
import { JOB_CALENDARS_SQL } from '../repositories/calendar-rows';
import { CLAIM_COLUMNS, claimableJobFromRow, type ClaimRow } from '../repositories/rows';

/**
 * max_event_age_ms of a job's retry policy as SQL, bounded: a value the validation would refuse
 * (not a number, or beyond double precision or an interval) must not fail the claim's statement
 * for every job of its lane.
 */
const MAX_EVENT_AGE_SQL = `(CASE WHEN jsonb_typeof(j.policies->'retry'->'max_event_age_ms') = 'number'
      THEN least(greatest((j.policies->'retry'->>'max_event_age_ms')::numeric, 0), ${MAX_EVENT_AGE_MS})::double precision
      ELSE 86400000 END)`;

const LOCK_DUE_JOBS = `SELECT d.*, q.cap AS slot
  FROM unnest($1::int[], $2::text[], $3::int[]) AS q(shard, tenant_id, cap)
  CROSS JOIN LATERAL (
    SELECT ${CLAIM_COLUMNS.split(', ')
      .map((c) => `j.${c}`)
      .join(', ')},
           (j.policies->>'overlap' = 'FORBID' AND EXISTS (
             SELECT 1 FROM fires f
               LEFT JOIN job_runs r ON r.job_id = f.job_id AND r.fence_token = f.fence_token
              WHERE f.job_id = j.job_id AND f.fence_token = j.fence_token
                AND (   (r.status IS NULL AND f.claimed_at > now() - make_interval(secs => ${MAX_EVENT_AGE_SQL} / 1000))
                     OR (r.status = 'RUNNING' AND r.lease_expires_at > now())
                     OR r.status = 'RETRYING'))) AS in_flight,
           ${JOB_CALENDARS_SQL} AS calendars,
           j.trace_context AS origin_trace
      FROM jobs j
     WHERE j.shard = q.shard AND j.tenant_id = q.tenant_id AND j.status = 'SCHEDULED'
       AND j.next_run_at <= now() + make_interval(secs => $4::double precision / 1000)
     ORDER BY j.next_run_at
     LIMIT q.cap
     FOR UPDATE OF j SKIP LOCKED
  ) d`;

/** One (shard, tenant) lane of the scan and its cap. */
export interface DueLanes {
  readonly shard: readonly number[];
  readonly tenant: readonly string[];
  readonly cap: readonly number[];
}

/** What the scan locked: the jobs as the claim plans them, the rows it could not read, per-lane counts. */
export interface LockedDueJobs {
  readonly due: DueJob[];
  readonly unreadable: UnplannableJob[];
  /** Rows locked per `${shard}|${tenant}` lane. */
  readonly perLane: ReadonlyMap<string, number>;
  readonly scanned: number;
}

/** Locks the due jobs of `lanes` (their caps) due within `lookaheadMs`. */
export async function lockDueJobs(
  client: PoolClient,
  lanes: DueLanes,
  lookaheadMs: number,
): Promise<LockedDueJobs> {
  const { rows } = await client.query<
    ClaimRow & { in_flight: boolean; slot: number; origin_trace: JobTraceOrigin | null }
  >(LOCK_DUE_JOBS, [lanes.shard, lanes.tenant, lanes.cap, lookaheadMs]);
  const perLane = new Map<string, number>();
  const due: DueJob[] = [];
  const unreadable: UnplannableJob[] = [];
  for (const r of rows) {
    const lane = `${r.shard}|${r.tenant_id}`;
    perLane.set(lane, (perLane.get(lane) ?? 0) + 1);
    try {
      due.push({
        job: claimableJobFromRow(r),
        previousFireInFlight: r.in_flight === true,
        ...(r.origin_trace ? { traceOrigin: r.origin_trace } : {}),
      });
    } catch (e) {
      unreadable.push({
        jobId: r.job_id,
        tenantId: r.tenant_id,
        nominal: r.next_nominal_at,
        error: (e as Error).message,
      });
    }
  }
  return { due, unreadable, perLane, scanned: rows.length };
}
