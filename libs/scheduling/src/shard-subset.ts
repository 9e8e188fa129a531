/**
 * The held shards of one database of a sharded store: what that database's fire loops, sweeps and
 * runners claim from (each database's statements name only its own shards).
 */
import type { ShardEpoch } from '@tickwork/domain';
import type { ShardOwnership } from './shard-ownership';

/** A view of the claimable shards, as the fire loop, the due probe and the sweepers read it. */
export type ClaimableShards = Pick<ShardOwnership, 'claimable'>;

/**
 * The claimable shards of `ownership` that are among `shards`. The same array is answered until
 * the ownership's changes (SharedDueProbe keys its cache on the array's identity).
 */
export function claimableAmong(ownership: ClaimableShards, shards: readonly number[]): ClaimableShards {
  const mine = new Set(shards);
  let source: readonly ShardEpoch[] | undefined;
  let subset: readonly ShardEpoch[] = [];
  return {
    claimable: () => {
      const held = ownership.claimable();
      if (held !== source) {
        source = held;
        subset = held.filter((h) => mine.has(h.shard));
      }
      return subset;
    },
  };
}
