/**
 * ShardOwnership on a ManualClock, against a scripted lease table: leases renewed every third of
 * the lease time, a lease found gone at renewal self-fences it (quietly during a rebalance), a
 * renewal that fails fences every shard, and a takeover that fails is tried again with backoff.
 */
import { ManualClock, type ShardEpoch } from '@tickwork/domain';
import type { ShardLeases } from './ports';
import { ShardOwnership } from './shard-ownership';

const LEASE_MS = 3_000;

/** A lease table in memory: `lost` shards are someone else's at the next renewal. */
class Leases {
  readonly renewals: { at: number; shards: number[] }[] = [];
  readonly lost = new Set<number>();
  failRenew = false;
  failAcquire = 0;
  private epoch = 0;

  constructor(private readonly clock: ManualClock) {}

  async acquire(shards: readonly number[]): Promise<ShardEpoch[]> {
    if (this.failAcquire > 0) {
      this.failAcquire--;
      throw new Error('lock timeout');
    }
    return shards.map((shard) => ({ shard, epoch: ++this.epoch }));
  }
  async renew(held: readonly ShardEpoch[]): Promise<number[]> {
    if (held.length === 0) return []; // as the repository: no statement
    this.renewals.push({ at: this.clock.now(), shards: held.map((h) => h.shard) });
    if (this.failRenew) throw new Error('connection terminated');
    return held.map((h) => h.shard).filter((s) => !this.lost.has(s));
  }
  async release(): Promise<void> {}
}

function setup() {
  const clock = new ManualClock(0);
  const leases = new Leases(clock);
  const fenced: number[][] = [];
  const errors: string[] = [];
  const ownership = new ShardOwnership(
    leases as unknown as ShardLeases,
    'sched-a',
    LEASE_MS,
    { onSelfFence: (lost) => fenced.push([...lost]), onError: (e) => errors.push(e.message) },
    clock,
  );
  return { clock, leases, fenced, errors, ownership };
}

const shardsOf = (o: ShardOwnership) => o.claimable().map((h) => h.shard);

describe('ShardOwnership (ManualClock)', () => {
  it('claims nothing until an assignment is in, then the assigned shards', async () => {
    const { ownership } = setup();
    expect(shardsOf(ownership)).toEqual([]);
    await ownership.assign([2, 0]);
    expect(shardsOf(ownership)).toEqual([0, 2]);
    expect(ownership.isActive()).toBe(true);
  });

  it('renews the held leases every third of the lease time', async () => {
    const { clock, leases, ownership } = setup();
    await ownership.assign([0, 1]);
    ownership.start();
    await clock.advance(999);
    expect(leases.renewals).toEqual([]);
    await clock.advance(1);
    await clock.advance(2_000);
    expect(leases.renewals).toEqual([
      { at: 1_000, shards: [0, 1] },
      { at: 2_000, shards: [0, 1] },
      { at: 3_000, shards: [0, 1] },
    ]);
    await ownership.stop();
    await clock.advance(5_000);
    expect(leases.renewals).toHaveLength(3);
  });

  it('self-fences a shard whose lease was gone at renewal, and keeps the rest', async () => {
    const { clock, leases, fenced, ownership } = setup();
    await ownership.assign([0, 1]);
    ownership.start();
    leases.lost.add(1);
    await clock.advance(1_000);
    expect(fenced).toEqual([[1]]);
    expect(shardsOf(ownership)).toEqual([0]);
    await ownership.stop();
  });

  it('a renewal that fails fences every shard: it cannot prove it owns any', async () => {
    const { clock, leases, fenced, errors, ownership } = setup();
    await ownership.assign([0, 1]);
    ownership.start();
    leases.failRenew = true;
    await clock.advance(1_000);
    expect(fenced).toEqual([[0, 1]]);
    expect(shardsOf(ownership)).toEqual([]);
    expect(errors).toEqual(['connection terminated']);
    await ownership.stop();
  });

  it('during a rebalance a lease taken by the next owner is dropped quietly', async () => {
    const { clock, leases, fenced, ownership } = setup();
    await ownership.assign([0, 1]);
    ownership.start();
    ownership.rebalancing();
    leases.lost.add(0);
    await clock.advance(1_000);
    expect(fenced).toEqual([]);
    expect(shardsOf(ownership)).toEqual([1]);
    await ownership.stop();
  });

  it('a takeover that fails is tried again after a growing pause, until it succeeds', async () => {
    const { clock, leases, errors, ownership } = setup();
    leases.failAcquire = 2;
    const taking = ownership.assign([3]);
    await clock.advance(0);
    expect(errors).toHaveLength(1);
    await clock.advance(249);
    expect(errors).toHaveLength(1);
    await clock.advance(1); // 250 ms after the first failure: the second try fails
    expect(errors).toHaveLength(2);
    expect(shardsOf(ownership)).toEqual([]);
    await clock.advance(500); // 500 ms after the second: the third succeeds
    await taking;
    expect(shardsOf(ownership)).toEqual([3]);
  });
});
