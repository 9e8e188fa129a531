/**
 * The scheduler's shard ownership: its leases in PostgreSQL, one ownership per database of the
 * shard map, and the shards each database's claim lanes and sweeps work on.
 */
import type { TickworkConfig } from '@tickwork/config';
import {
  ShardOwnership,
  ShardOwnershipByDatabase,
  type ClaimableShards,
  type OwnershipEvents,
  type ShardOwner,
} from '@tickwork/scheduling';
import { ShardLeaseRepository, type ShardDatabasePool, type ShardPools } from '@tickwork/store';
import type { SchedulerReports } from './scheduler-reports';

/**
 * The shard ownership of this instance (not started). Each shard's lease lives in its own
 * database, beside the rows its claims lock it with; over several databases each has its own
 * ownership, so one database down fences only its shards.
 */
export function shardOwnershipOf(
  config: TickworkConfig,
  shardPools: ShardPools,
  events: OwnershipEvents,
): ShardOwner {
  const { instanceId } = config;
  const leaseMs = config.scheduler.shardLeaseMs;
  if (!shardPools.sharded)
    return new ShardOwnership(
      new ShardLeaseRepository(shardPools.ofShard(0).pool),
      instanceId,
      leaseMs,
      events,
    );
  const leaseDatabases = shardPools.databases.map((database) => ({
    shards: database.shards,
    leases: new ShardLeaseRepository(database.pool),
  }));
  return new ShardOwnershipByDatabase(leaseDatabases, instanceId, leaseMs, events);
}

/** What ownership changes are reported as; a lost lease makes the instance rejoin the group. */
export function ownershipEvents(
  { metrics, log }: SchedulerReports,
  rejoinGroup: () => void,
): OwnershipEvents {
  return {
    onChange: (held) => {
      metrics.ownershipChanged(held);
      log.log(`holding shards [${held.map((h) => `${h.shard}@${h.epoch}`).join(', ')}]`);
    },
    onSelfFence: (lost) => {
      metrics.selfFenced();
      log.warn(`lease lost for shards [${lost.join(', ')}]: stopped claiming them; rejoining the group`);
      rejoinGroup();
    },
    onLostWhileAway: (shards) =>
      log.warn(
        `lease lost for shards [${shards.join(', ')}] while this instance was away; re-acquiring them under a new epoch`,
      ),
    onError: (e) => {
      metrics.error('shard-ownership');
      log.error(`shard ownership: ${e.message}`);
    },
  };
}

/** A database of the shard map and the held shards it holds. */
export interface HeldDatabase {
  readonly database: ShardDatabasePool;
  readonly held: ClaimableShards;
}

/**
 * Each database of the shard map with the shards of `ownership` it holds: a claim, the outbox
 * relay and a sweep never span databases.
 */
export function heldShardsByDatabase(ownership: ShardOwner, shardPools: ShardPools): HeldDatabase[] {
  return shardPools.databases.map((database, index) => ({
    database,
    held: ownership instanceof ShardOwnershipByDatabase ? ownership.of(index) : ownership,
  }));
}
