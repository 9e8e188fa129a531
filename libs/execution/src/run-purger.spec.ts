import { RunPurger } from './run-purger';

describe('RunPurger', () => {
  it('deletes in batches until a batch comes back short, passing retention and batch size', async () => {
    const calls: [number, number][] = [];
    const left = [100, 100, 37];
    const purger = new RunPurger(
      {
        purgeFinishedRuns: async (retentionMs, batchSize) => {
          calls.push([retentionMs, batchSize]);
          return left.shift() ?? 0;
        },
      },
      { retentionMs: 86_400_000, intervalMs: 60_000, batchSize: 100, pauseMs: 0 },
    );
    expect(await purger.purgeOnce()).toBe(237);
    expect(calls).toEqual([
      [86_400_000, 100],
      [86_400_000, 100],
      [86_400_000, 100],
    ]);
  });

  it('runs every interval, reports failures without stopping, and stops', async () => {
    jest.useFakeTimers();
    try {
      let n = 0;
      const errors: string[] = [];
      const purged: number[] = [];
      const purger = new RunPurger(
        {
          purgeFinishedRuns: async () => {
            n++;
            if (n === 1) throw new Error('database restarting');
            return 3;
          },
        },
        {
          retentionMs: 1,
          intervalMs: 1_000,
          batchSize: 10,
          onError: (e) => errors.push(e.message),
          onPurged: (k) => purged.push(k),
        },
      );
      purger.start();
      await jest.advanceTimersByTimeAsync(999);
      expect(n).toBe(0);
      await jest.advanceTimersByTimeAsync(1);
      expect(errors).toEqual(['database restarting']);
      await jest.advanceTimersByTimeAsync(1_000);
      expect(purged).toEqual([3]);
      await purger.stop();
      await jest.advanceTimersByTimeAsync(5_000);
      expect(n).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });
});
