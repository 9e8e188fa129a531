/**
 * The claim's fence: the shards of the request whose lease the caller still holds (owner, epoch,
 * not expired), locked FOR KEY SHARE. A takeover (it bumps the epoch, a key column since
 * migration 8) waits for the claim and then fences it out; the owner's renewals (expires_at only)
 * do not wait, so they never stall the claim lanes.
 */
import type { ShardEpoch } from '@tickwork/domain';
import type { PoolClient } from 'pg';

const LOCK_HELD_LEASES = `SELECT l.shard, now() AS db_now
  FROM shard_leases l
  JOIN unnest($1::int[], $2::bigint[]) AS o(shard, epoch) ON o.shard = l.shard AND o.epoch = l.epoch
 WHERE l.owner = $3 AND l.expires_at > now()
   FOR KEY SHARE OF l`;

/** Locks the held leases of `shards`; returns the shards held and the database time (in the transaction). */
export async function lockHeldLeases(
  client: PoolClient,
  owner: string,
  shards: readonly ShardEpoch[],
): Promise<{ held: number[]; now: Date }> {
  const { rows } = await client.query<{ shard: number; db_now: Date }>(LOCK_HELD_LEASES, [
    shards.map((s) => s.shard),
    shards.map((s) => s.epoch),
    owner,
  ]);
  const now = rows[0]?.db_now ?? (await client.query<{ now: Date }>('SELECT now()')).rows[0]!.now;
  return { held: rows.map((r) => r.shard), now };
}
