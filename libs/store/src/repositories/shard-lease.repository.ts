/** Shard leases: the PostgreSQL side of shard ownership, fenced by a per-shard epoch. */
import type { Pool } from 'pg';
import type { ShardEpoch } from '@tickwork/domain';

export class ShardLeaseRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * Takes the shards for `owner` with a new, higher epoch. Changing the epoch (a key column) makes
   * the upsert wait for any claim holding the lease row FOR KEY SHARE; then every later claim by
   * the previous owner fails its check.
   */
  async acquire(shards: readonly number[], owner: string, ttlMs: number): Promise<ShardEpoch[]> {
    if (shards.length === 0) return [];
    const { rows } = await this.pool.query<ShardEpoch>(
      `INSERT INTO shard_leases (shard, owner, epoch, expires_at, updated_at)
       SELECT s, $2, 1, now() + make_interval(secs => $3::double precision / 1000), now() FROM unnest($1::int[]) AS s
       ON CONFLICT (shard) DO UPDATE
          SET owner = EXCLUDED.owner, epoch = shard_leases.epoch + 1, expires_at = EXCLUDED.expires_at, updated_at = now()
       RETURNING shard, epoch`,
      [[...shards].sort((a, b) => a - b), owner, ttlMs],
    );
    return rows.sort((a, b) => a.shard - b.shard);
  }

  /**
   * Extends the leases still held at the given epochs; returns the shards renewed (the rest are
   * lost). It leaves the epoch alone, so it does not wait for the owner's claims in flight.
   */
  async renew(held: readonly ShardEpoch[], owner: string, ttlMs: number): Promise<number[]> {
    if (held.length === 0) return [];
    const { rows } = await this.pool.query<{ shard: number }>(
      `UPDATE shard_leases l
          SET expires_at = now() + make_interval(secs => $4::double precision / 1000), updated_at = now()
         FROM unnest($1::int[], $2::bigint[]) AS o(shard, epoch)
        WHERE l.shard = o.shard AND l.epoch = o.epoch AND l.owner = $3 AND l.expires_at > now()
        RETURNING l.shard`,
      [held.map((h) => h.shard), held.map((h) => h.epoch), owner, ttlMs],
    );
    return rows.map((r) => r.shard).sort((a, b) => a - b);
  }

  /** Gives shards up (keeping their epoch), so the next owner need not wait for expiry. */
  async release(held: readonly ShardEpoch[], owner: string): Promise<void> {
    if (held.length === 0) return;
    await this.pool.query(
      `UPDATE shard_leases l SET owner = NULL, expires_at = NULL, updated_at = now()
         FROM unnest($1::int[], $2::bigint[]) AS o(shard, epoch)
        WHERE l.shard = o.shard AND l.epoch = o.epoch AND l.owner = $3`,
      [held.map((h) => h.shard), held.map((h) => h.epoch), owner],
    );
  }
}
