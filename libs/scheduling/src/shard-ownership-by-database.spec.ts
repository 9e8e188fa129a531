/**
 * ShardOwnershipByDatabase on a ManualClock over two scripted lease tables: each database takes its
 * part of the assignment, a database whose renewal fails fences only its own shards, and one that
 * cannot take its part retries without holding the other's shards back.
 */
import { ManualClock, type ShardEpoch } from '@tickwork/domain';
import type { ShardLeases } from './ports';
import { ShardOwnershipByDatabase } from './shard-ownership-by-database';

const LEASE_MS = 3_000;

/** One database's lease table in memory; `down` makes every statement fail as an unreachable server's. */
class Leases implements ShardLeases {
  down = false;
  readonly acquired: number[][] = [];
  private epoch = 0;

  private check(): void {
    if (this.down) throw new Error('connect ECONNREFUSED');
  }
  async acquire(shards: readonly number[]): Promise<ShardEpoch[]> {
    this.check();
    this.acquired.push([...shards]);
    return shards.map((shard) => ({ shard, epoch: ++this.epoch }));
  }
  async renew(held: readonly ShardEpoch[]): Promise<number[]> {
    if (held.length === 0) return [];
    this.check();
    return held.map((h) => h.shard);
  }
  async release(): Promise<void> {
    this.check();
  }
}

function setup() {
  const clock = new ManualClock(0);
  const first = new Leases();
  const second = new Leases();
  const fenced: number[][] = [];
  const changes: number[][] = [];
  const ownership = new ShardOwnershipByDatabase(
    [
      { shards: [0, 1], leases: first },
      { shards: [2, 3], leases: second },
    ],
    'sched-a',
    LEASE_MS,
    {
      onSelfFence: (lost) => fenced.push([...lost]),
      onChange: (held) => changes.push(held.map((h) => h.shard)),
    },
    clock,
  );
  ownership.start();
  return { clock, first, second, fenced, changes, ownership };
}

const shardsOf = (held: readonly ShardEpoch[]) => held.map((h) => h.shard);

describe('ShardOwnershipByDatabase (ManualClock)', () => {
  it('gives each database its part of the assignment and claims from all, by shard', async () => {
    const { first, second, ownership, changes } = setup();
    await ownership.assign([3, 0, 2]);
    expect(first.acquired).toEqual([[0]]);
    expect(second.acquired).toEqual([[3, 2]]);
    expect(shardsOf(ownership.claimable())).toEqual([0, 2, 3]);
    expect(shardsOf(ownership.of(1).claimable())).toEqual([2, 3]);
    // The same array until something changes (the due probes key their cache on it).
    expect(ownership.claimable()).toBe(ownership.claimable());
    expect(changes[changes.length - 1]).toEqual([0, 2, 3]);
    expect(ownership.isActive()).toBe(true);
    await ownership.stop();
  });

  it('a database whose renewal fails fences its own shards only; the other keeps claiming', async () => {
    const { clock, second, ownership, fenced } = setup();
    await ownership.assign([0, 1, 2, 3]);
    second.down = true;
    await clock.advance(LEASE_MS / 3);
    expect(fenced).toEqual([[2, 3]]);
    expect(shardsOf(ownership.claimable())).toEqual([0, 1]);
    expect(shardsOf(ownership.of(0).claimable())).toEqual([0, 1]);
    second.down = false;
    await ownership.stop();
  });

  it('a database that cannot take its part retries with backoff while the other claims at once', async () => {
    const { clock, second, ownership } = setup();
    second.down = true;
    const assigned = ownership.assign([0, 1, 2, 3]);
    await clock.advance(0);
    expect(shardsOf(ownership.claimable())).toEqual([0, 1]);
    second.down = false;
    await clock.advance(5_000);
    await assigned;
    expect(shardsOf(ownership.claimable())).toEqual([0, 1, 2, 3]);
    await ownership.stop();
  });
});
