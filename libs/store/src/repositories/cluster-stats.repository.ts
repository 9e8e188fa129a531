/**
 * Read-only queries behind the cluster gauges (due backlog, outbox, unowned shards). A scheduler
 * runs them on a timer; each is served by a partial index and bounded per shard, so a large
 * backlog costs at most `cap` index entries per shard and tenant, not a table scan.
 */
import type { Pool } from 'pg';
import type { ShardBacklog, ShardOutbox } from '@tickwork/domain';

/** The cluster gauges' queries (read-only): implements libs/jobs' ClusterStatsStore port. */
export class ClusterStatsRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * Every shard's due backlog: jobs with next_run_at ≤ now() still SCHEDULED, i.e. not claimed.
   * A loose index scan walks the tenants of each shard on jobs_due_idx, then counts each tenant's
   * due rows from the front of its index range.
   */
  async dueBacklog(shardCount: number, cap = 100_000): Promise<ShardBacklog[]> {
    const { rows } = await this.pool.query<{ shard: number; due: string; oldest_age: number | null }>(
      `WITH RECURSIVE t(shard, tenant_id) AS (
         SELECT s, (SELECT tenant_id FROM jobs WHERE shard = s AND status = 'SCHEDULED' ORDER BY tenant_id LIMIT 1)
           FROM generate_series(0, $1::int - 1) AS s
         UNION ALL
         SELECT t.shard, (SELECT j.tenant_id FROM jobs j
                           WHERE j.shard = t.shard AND j.status = 'SCHEDULED' AND j.tenant_id > t.tenant_id
                           ORDER BY j.tenant_id LIMIT 1)
           FROM t WHERE t.tenant_id IS NOT NULL
       )
       SELECT t.shard, sum(d.n)::bigint AS due,
              extract(epoch FROM now() - min(d.oldest))::double precision AS oldest_age
         FROM t
         CROSS JOIN LATERAL (
           SELECT count(*) AS n, min(x.next_run_at) AS oldest
             FROM (SELECT j.next_run_at FROM jobs j
                    WHERE j.shard = t.shard AND j.tenant_id = t.tenant_id AND j.status = 'SCHEDULED'
                      AND j.next_run_at <= now()
                    ORDER BY j.next_run_at LIMIT $2) x
         ) d
        WHERE t.tenant_id IS NOT NULL
        GROUP BY t.shard`,
      [shardCount, cap],
    );
    const byShard = new Map(rows.map((r) => [r.shard, r]));
    return Array.from({ length: shardCount }, (_, shard) => {
      const r = byShard.get(shard);
      return { shard, due: Number(r?.due ?? 0), oldestDueAgeSeconds: Math.max(0, r?.oldest_age ?? 0) };
    });
  }

  /**
   * Every shard's outbox: fires of batches not yet enqueued (the partial index
   * fire_batches_outbox_idx), and how long the most overdue of them has been due on Kafka. A
   * batch claimed ahead and held for its time counts as pending but not as overdue.
   */
  async outbox(shardCount: number, cap = 100_000): Promise<ShardOutbox[]> {
    const { rows } = await this.pool.query<{ shard: number; pending: string; oldest_age: number | null }>(
      `SELECT s AS shard, o.n AS pending, extract(epoch FROM now() - o.oldest)::double precision AS oldest_age
         FROM generate_series(0, $1::int - 1) AS s
         CROSS JOIN LATERAL (
           SELECT coalesce(sum(x.fires), 0) AS n, min(x.release_at) AS oldest
             FROM (SELECT b.fires, b.release_at FROM fire_batches b
                    WHERE b.shard = s AND b.enqueued_at IS NULL
                    ORDER BY b.claimed_at LIMIT $2) x
         ) o`,
      [shardCount, cap],
    );
    return rows.map((r) => ({
      shard: r.shard,
      pending: Number(r.pending),
      oldestAgeSeconds: Math.max(0, r.oldest_age ?? 0),
    }));
  }

  /** How many of the shards have no live lease (no owner, or its lease expired). */
  async unownedShards(shardCount: number): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n
         FROM generate_series(0, $1::int - 1) AS s
         LEFT JOIN shard_leases l ON l.shard = s
        WHERE l.owner IS NULL OR l.expires_at IS NULL OR l.expires_at <= now()`,
      [shardCount],
    );
    return rows[0]?.n ?? shardCount;
  }
}
