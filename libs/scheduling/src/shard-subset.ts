/** A view of the claimable shards, as the fire loop, the due probe and the sweepers read it. */
import type { ShardOwnership } from './shard-ownership';

export type ClaimableShards = Pick<ShardOwnership, 'claimable'>;
