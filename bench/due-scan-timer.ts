/**
 * The scheduler's due-scan as the benchmarks time it: the tenant walk over every shard, then a
 * fair share of `limit` due rows locked as a claim locks them; timed per run, then rolled back so
 * the store is unchanged. Shared by bench:scheduler and the side-by-side suite (W1).
 */
import type { Pool } from '@tickwork/store';

/** Times `runs` due-scans over shards 0..shards-1; returns the durations in ms, sorted. */
export async function dueScanMs(pool: Pool, shards: number, limit: number, runs: number): Promise<number[]> {
  const shardIds = Array.from({ length: shards }, (_, i) => i);
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const t = process.hrtime.bigint();
      const tenants = await client.query<{ shard: number; tenant_id: string }>(
        `WITH RECURSIVE t(shard, tenant_id) AS (
           SELECT s, (SELECT tenant_id FROM jobs WHERE shard = s AND status = 'SCHEDULED' ORDER BY tenant_id LIMIT 1) FROM unnest($1::int[]) AS s
           UNION ALL
           SELECT t.shard, (SELECT j.tenant_id FROM jobs j WHERE j.shard = t.shard AND j.status = 'SCHEDULED' AND j.tenant_id > t.tenant_id ORDER BY j.tenant_id LIMIT 1)
             FROM t WHERE t.tenant_id IS NOT NULL)
         SELECT t.shard, t.tenant_id FROM t WHERE t.tenant_id IS NOT NULL
           AND EXISTS (SELECT 1 FROM jobs j WHERE j.shard = t.shard AND j.tenant_id = t.tenant_id AND j.status = 'SCHEDULED' AND j.next_run_at <= now())`,
        [shardIds],
      );
      const cap = Math.max(1, Math.ceil(limit / Math.max(1, tenants.rows.length)));
      await client.query(
        `SELECT d.job_id FROM unnest($1::int[], $2::text[]) AS q(shard, tenant_id)
           CROSS JOIN LATERAL (SELECT j.job_id FROM jobs j WHERE j.shard = q.shard AND j.tenant_id = q.tenant_id AND j.status = 'SCHEDULED'
                                 AND j.next_run_at <= now() ORDER BY j.next_run_at LIMIT $3 FOR UPDATE OF j SKIP LOCKED) d`,
        [tenants.rows.map((x) => x.shard), tenants.rows.map((x) => x.tenant_id), cap],
      );
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  }
  return times.sort((a, b) => a - b);
}
