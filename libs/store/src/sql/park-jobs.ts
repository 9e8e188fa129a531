/**
 * Parking: a job whose stored definition cannot be planned (it should never happen: the boundary
 * validates) must not block its shard. It is paused, and its occurrence ledger says why.
 */
import { isInstantInRange, type UnplannableJob } from '@tickwork/domain';
import type { PoolClient } from 'pg';

const PAUSE_JOBS = `UPDATE jobs SET status = 'PAUSED', updated_at = now() WHERE job_id = ANY($1::text[])`;

const RECORD_INVALID = `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences)
SELECT v.id, v.tenant, 'INVALID_DEFINITION: ' || v.err, v.at, v.at, 1
  FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[]) AS v(id, tenant, at, err)`;

/** Pauses `jobs` and records why in their ledgers, at their due occurrence (or `now` when it is unusable). */
export async function parkJobs(
  client: PoolClient,
  jobs: readonly UnplannableJob[],
  now: Date,
): Promise<void> {
  const at = (b: UnplannableJob) =>
    b.nominal instanceof Date && isInstantInRange(b.nominal.getTime()) ? b.nominal : now;
  await client.query(PAUSE_JOBS, [jobs.map((b) => b.jobId)]);
  await client.query(RECORD_INVALID, [
    jobs.map((b) => b.jobId),
    jobs.map((b) => b.tenantId),
    jobs.map(at),
    // PostgreSQL text holds no NUL; the reason may quote a stored value that has one.
    jobs.map((b) => b.error.split(String.fromCharCode(0)).join('').slice(0, 500)),
  ]);
}
