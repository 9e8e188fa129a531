/** One pool per database of the store's shard map, and the routing of a shard or a job to its pool. */
import type { StoreShardMap } from '@tickwork/config';
import { NotShardedError, shardOf } from '@tickwork/domain';
import type { Pool } from 'pg';

/** A database of the map, open. */
export interface ShardDatabasePool {
  readonly pool: Pool;
  readonly identity: string;
  /** The shards this database holds, ascending. */
  readonly shards: readonly number[];
}

export class ShardPools {
  /** The open databases, in the order of their lowest shard. */
  readonly databases: readonly ShardDatabasePool[];

  constructor(
    private readonly map: StoreShardMap,
    pools: readonly Pool[],
  ) {
    if (pools.length !== map.databases.length) throw new Error('one pool per database of the shard map');
    this.databases = map.databases.map((d, i) => ({
      pool: pools[i]!,
      identity: d.identity,
      shards: d.shards,
    }));
  }

  /** How many shards there are (TICKWORK_SHARDS). */
  get shardCount(): number {
    return this.map.databaseOfShard.length;
  }

  /** True when more than one database holds shards. */
  get sharded(): boolean {
    return this.databases.length > 1;
  }

  /** The database of a shard. */
  ofShard(shard: number): ShardDatabasePool {
    const i = this.map.databaseOfShard[shard];
    if (i === undefined) throw new RangeError(`shard ${shard} is outside 0-${this.shardCount - 1}`);
    return this.databases[i]!;
  }

  /** The database of a job (by the shard of its id). */
  ofJob(jobId: string): ShardDatabasePool {
    return this.ofShard(shardOf(jobId, this.shardCount));
  }

  /** Splits `items` by the database each belongs to (keeping their order within a database). */
  group<T>(items: readonly T[], shardOfItem: (item: T) => number): Map<ShardDatabasePool, T[]> {
    const out = new Map<ShardDatabasePool, T[]>();
    for (const item of items) {
      const db = this.ofShard(shardOfItem(item));
      const list = out.get(db);
      if (list) list.push(item);
      else out.set(db, [item]);
    }
    return out;
  }

  /** Refuses `what` when the store is sharded (features that do not span databases yet). */
  refuseWhenSharded(what: string): void {
    if (this.sharded) throw new NotShardedError(what);
  }
}
