/** The occurrence ledger's skip records a claim writes (skipped runs of occurrences, parked jobs). */
import type { ClaimColumns } from '@tickwork/domain';
import type { PoolClient } from 'pg';

const RECORD_SKIPS = `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences, calendar, job_version)
-- With the job version the skip was planned under (the job row is locked by this claim).
SELECT k.*, j.version
  FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::bigint[], $7::text[])
       AS k(job_id, tenant_id, reason, first_nominal, last_nominal, occurrences, calendar)
  LEFT JOIN jobs j ON j.job_id = k.job_id`;

/** Records the skipped runs of occurrences of a group's claim. */
export async function recordSkips(client: PoolClient, k: ClaimColumns['skips']): Promise<void> {
  if (k.jobId.length === 0) return;
  await client.query(RECORD_SKIPS, [k.jobId, k.tenantId, k.reason, k.first, k.last, k.count, k.calendar]);
}
