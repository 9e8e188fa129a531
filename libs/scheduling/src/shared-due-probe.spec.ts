import type { ShardEpoch } from '@tickwork/domain';
import type { DueProbe, DueProbeRequest } from '@tickwork/domain';
import { SharedDueProbe } from './shared-due-probe';

const answer = (held: number[]): DueProbe => ({ now: new Date(), held, due: [], relay: [] });

/** A repository whose probes resolve when the test says so, recording what was asked. */
function probingRepository() {
  const asked: DueProbeRequest[] = [];
  const pending: { resolve(p: DueProbe): void; reject(e: Error): void }[] = [];
  return {
    asked,
    pending,
    probeDue: (req: DueProbeRequest) => {
      asked.push(req);
      return new Promise<DueProbe>((resolve, reject) => pending.push({ resolve, reject }));
    },
  };
}

describe('SharedDueProbe', () => {
  const options = { owner: 'me', lookaheadMs: 50, relayAgeMs: 5_000, maxAgeMs: 100 };
  let held: readonly ShardEpoch[];
  const ownership = { claimable: () => held };
  beforeEach(() => {
    held = [
      { shard: 0, epoch: 1 },
      { shard: 1, epoch: 1 },
    ];
  });

  it('gives every lane that asks within one tick the same probe of all claimable shards', async () => {
    const repo = probingRepository();
    const shared = new SharedDueProbe(repo, ownership, options);
    const lanes = [shared.probe(), shared.probe(), shared.probe(), shared.probe()];
    expect(repo.asked).toHaveLength(1);
    expect(repo.asked[0]).toEqual({ owner: 'me', shards: held, lookaheadMs: 50, relayAgeMs: 5_000 });
    repo.pending[0]!.resolve(answer([0, 1]));
    const seen = await Promise.all(lanes);
    expect(new Set(seen).size).toBe(1);
  });

  it('probes again once the answer is older than maxAgeMs', async () => {
    const repo = probingRepository();
    const shared = new SharedDueProbe(repo, ownership, { ...options, maxAgeMs: 20 });
    void shared.probe();
    repo.pending[0]!.resolve(answer([0, 1]));
    const start = Date.now();
    while (Date.now() - start < 25) await new Promise((r) => setTimeout(r, 5));
    void shared.probe();
    expect(repo.asked).toHaveLength(2);
  });

  it('probes again at once when the held shards change', () => {
    const repo = probingRepository();
    const shared = new SharedDueProbe(repo, ownership, options);
    void shared.probe();
    held = [{ shard: 0, epoch: 2 }];
    void shared.probe();
    expect(repo.asked.map((a) => a.shards)).toEqual([
      [
        { shard: 0, epoch: 1 },
        { shard: 1, epoch: 1 },
      ],
      [{ shard: 0, epoch: 2 }],
    ]);
  });

  it('does not share a failed probe', async () => {
    const repo = probingRepository();
    const shared = new SharedDueProbe(repo, ownership, options);
    const failed = shared.probe()!;
    repo.pending[0]!.reject(new Error('connection reset'));
    await expect(failed).rejects.toThrow('connection reset');
    void shared.probe();
    expect(repo.asked).toHaveLength(2);
  });

  it('does not probe when the instance holds no shard', () => {
    const repo = probingRepository();
    held = [];
    expect(new SharedDueProbe(repo, ownership, options).probe()).toBeUndefined();
    expect(repo.asked).toHaveLength(0);
  });
});
