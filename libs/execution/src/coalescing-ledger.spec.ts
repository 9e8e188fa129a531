import type { FireKey } from '@tickwork/domain';
import { Coalescer, CoalescingLedger, type BatchRunStore } from './coalescing-ledger';

const tick = () => new Promise((r) => setImmediate(r));

/** A coalescer that answers `r<item>` for each item and records the batches it ran. */
function recordingCoalescer(maxBatch: number) {
  const batches: number[][] = [];
  const c = new Coalescer<number, string>(
    async (items) => {
      batches.push(items);
      return items.map((i) => `r${i}`);
    },
    { maxBatch, maxInFlight: 1 },
  );
  return { c, batches };
}

describe('Coalescer', () => {
  it('runs items submitted together as one batch and hands each caller its own result', async () => {
    const { c, batches } = recordingCoalescer(10);
    const results = await Promise.all([1, 2, 3].map((i) => c.submit(i)));
    expect(results).toEqual(['r1', 'r2', 'r3']);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('caps batch size and statements in flight; waiting items join the next batch', async () => {
    const batches: number[][] = [];
    let release: (() => void) | undefined;
    let running = 0;
    let maxRunning = 0;
    const c = new Coalescer<number, number>(
      async (items) => {
        batches.push(items);
        running++;
        maxRunning = Math.max(maxRunning, running);
        await new Promise<void>((r) => (release = r));
        running--;
        return items;
      },
      { maxBatch: 2, maxInFlight: 1 },
    );
    const all = [1, 2, 3, 4, 5].map((i) => c.submit(i));
    await tick();
    expect(batches).toEqual([[1, 2]]);
    for (let i = 0; i < 3; i++) {
      release!();
      await tick();
      await tick();
    }
    expect(await Promise.all(all)).toEqual([1, 2, 3, 4, 5]);
    expect(batches).toEqual([[1, 2], [3, 4], [5]]);
    expect(maxRunning).toBe(1);
  });

  it("keeps a caller's many items together in one batch, beside single items, each caller its own results", async () => {
    const { c, batches } = recordingCoalescer(4);
    const [one, many, two, more] = await Promise.all([
      c.submit(1),
      c.submitMany([2, 3, 4]),
      c.submit(5),
      c.submitMany([6, 7, 8, 9, 10]),
    ]);
    expect([one, many, two, more]).toEqual(['r1', ['r2', 'r3', 'r4'], 'r5', ['r6', 'r7', 'r8', 'r9', 'r10']]);
    // [2, 3, 4] is not split to fill a batch; [6..10] is bigger than a batch and goes alone.
    expect(batches).toEqual([[1, 2, 3, 4], [5], [6, 7, 8, 9, 10]]);
    expect(await c.submitMany([])).toEqual([]);
  });

  it('rejects every caller of a failed batch, and keeps working afterwards', async () => {
    let fail = true;
    const c = new Coalescer<number, number>(
      async (items) => {
        if (fail) throw new Error('database down');
        return items;
      },
      { maxBatch: 10, maxInFlight: 2 },
    );
    const r = await Promise.allSettled([c.submit(1), c.submit(2)]);
    expect(r.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await c.submit(3)).toBe(3);
  });
});

describe('CoalescingLedger', () => {
  it('sends heartbeats made together as one statement, each caller getting its own answer', async () => {
    const statements: { key: FireKey; leaseToken: string; leaseMs: number }[][] = [];
    const unused = () => Promise.reject(new Error('not used here'));
    const store: BatchRunStore = {
      isUnavailable: () => false,
      heartbeats: async (items) => {
        statements.push([...items]);
        return items.map((x) => x.leaseToken !== 'lost');
      },
      beginRun: unused,
      beginRuns: unused,
      completeRun: unused,
      completeRuns: unused,
      heartbeat: unused,
      markHandedOff: unused,
      releaseRun: unused,
      mayRunUnleased: unused,
      mayRunUnleasedMany: unused,
      recordUnleasedRun: unused,
      recordUnleasedRuns: unused,
    };
    const ledger = new CoalescingLedger(store);
    const key = (n: number): FireKey => ({ jobId: `job-${n}`, fenceToken: 1 });
    const answers = await Promise.all([
      ledger.heartbeat(key(1), 'a', 30_000),
      ledger.heartbeat(key(2), 'lost', 30_000),
      ledger.heartbeat(key(3), 'c', 30_000),
    ]);
    expect(answers).toEqual([true, false, true]);
    expect(statements).toHaveLength(1);
    expect(statements[0]!.map((x) => x.key.jobId)).toEqual(['job-1', 'job-2', 'job-3']);
  });
});
