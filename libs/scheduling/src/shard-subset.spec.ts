import type { ShardEpoch } from '@tickwork/domain';
import { claimableAmong } from './shard-subset';

describe('claimableAmong', () => {
  it("answers the held shards among a database's, the same array until the ownership changes", () => {
    let held: ShardEpoch[] = [
      { shard: 1, epoch: 3 },
      { shard: 7, epoch: 1 },
    ];
    const view = claimableAmong({ claimable: () => held }, [6, 7, 8]);
    const first = view.claimable();
    expect(first).toEqual([{ shard: 7, epoch: 1 }]);
    expect(view.claimable()).toBe(first);
    held = [{ shard: 8, epoch: 2 }];
    expect(view.claimable()).toEqual([{ shard: 8, epoch: 2 }]);
  });
});
