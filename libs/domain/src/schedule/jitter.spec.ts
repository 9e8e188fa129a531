import { defaultHerdWindowMs, jitterOffsetMs, jitteredFireTime } from './jitter';
import type { CronSchedule, IntervalSchedule, OnceSchedule } from './schedule';

const nominal = new Date('2026-01-01T09:00:00Z');

describe('jitterOffsetMs', () => {
  it('is deterministic: a re-claim computes the same offset', () => {
    const first = jitterOffsetMs('job-42', nominal, 30_000);
    for (let i = 0; i < 5; i++)
      expect(jitterOffsetMs('job-42', new Date(nominal.getTime()), 30_000)).toBe(first);
  });

  it('pins known values, so a change of hash (which would move every fire) is noticed', () => {
    expect([
      jitterOffsetMs('job-42', nominal, 30_000),
      jitterOffsetMs('job-43', nominal, 30_000),
      jitterOffsetMs('job-42', new Date(nominal.getTime() + 60_000), 30_000),
    ]).toEqual([4744, 10808, 18069]);
  });

  it('depends on the job and on the occurrence', () => {
    const offsets = new Set<number>();
    for (let i = 0; i < 100; i++) offsets.add(jitterOffsetMs(`job-${i}`, nominal, 1_000_000));
    expect(offsets.size).toBeGreaterThan(95);
    const perOccurrence = new Set<number>();
    for (let i = 0; i < 100; i++)
      perOccurrence.add(jitterOffsetMs('job-1', new Date(nominal.getTime() + i * 60_000), 1_000_000));
    expect(perOccurrence.size).toBeGreaterThan(95);
  });

  it('stays in [0, window) and is an integer', () => {
    const outside: string[] = [];
    for (const window of [1, 2, 7, 1_000, 30_000, 3_600_000]) {
      for (let i = 0; i < 2_000; i++) {
        const offset = jitterOffsetMs(`job-${i}`, nominal, window);
        if (!Number.isInteger(offset) || offset < 0 || offset >= window)
          outside.push(`job-${i}/${window}: ${offset}`);
      }
    }
    expect(outside).toEqual([]);
    // Both ends of a small window are reached.
    const seen = new Set(Array.from({ length: 200 }, (_, i) => jitterOffsetMs(`job-${i}`, nominal, 3)));
    expect([...seen].sort()).toEqual([0, 1, 2]);
  });

  it('is 0 without a window', () => {
    expect(jitterOffsetMs('job', nominal, 0)).toBe(0);
    expect(jitterOffsetMs('job', nominal, -5)).toBe(0);
    expect(jitterOffsetMs('job', nominal, 0.5)).toBe(0);
    expect(jitterOffsetMs('job', nominal, Number.NaN)).toBe(0);
  });

  it('is uniform: 40,000 sequential job ids over 20 buckets pass a chi-square test', () => {
    const buckets = new Array<number>(20).fill(0);
    const n = 40_000;
    for (let i = 0; i < n; i++) {
      const offset = jitterOffsetMs(`tenant-a:job-${i}`, nominal, 60_000);
      buckets[Math.floor(offset / 3_000)]! += 1;
    }
    const expected = n / buckets.length;
    const chiSquare = buckets.reduce((sum, observed) => sum + (observed - expected) ** 2 / expected, 0);
    // 19 degrees of freedom: p = 0.001 at 43.8.
    expect(chiSquare).toBeLessThan(43.8);
  });

  it('jitteredFireTime is nominal + offset', () => {
    expect(jitteredFireTime('job-42', nominal, 30_000).getTime()).toBe(
      nominal.getTime() + jitterOffsetMs('job-42', nominal, 30_000),
    );
  });
});

describe('defaultHerdWindowMs', () => {
  const cron = (expression: string, timeZone = 'UTC'): CronSchedule => ({
    kind: 'cron',
    expression,
    timeZone,
    dstGap: 'AUTO',
    dstRepeat: 'AUTO',
  });

  it('spreads cron fires that land on a whole minute', () => {
    expect(defaultHerdWindowMs(cron('0 9 * * *'), nominal, 10_000)).toBe(10_000);
    expect(
      defaultHerdWindowMs(cron('0 * * * *', 'Asia/Kathmandu'), new Date('2026-01-01T03:15:00Z'), 10_000),
    ).toBe(10_000);
  });

  it('leaves fires off the whole minute alone', () => {
    expect(defaultHerdWindowMs(cron('30 0 9 * * *'), new Date('2026-01-01T09:00:30Z'), 10_000)).toBe(0);
  });

  it('never spreads a fire past half the schedule spacing', () => {
    expect(defaultHerdWindowMs(cron('* * * * * *'), nominal, 10_000)).toBe(500);
    expect(defaultHerdWindowMs(cron('*/10 * * * * *'), nominal, 10_000)).toBe(5_000);
    expect(defaultHerdWindowMs(cron('* * * * *'), nominal, 10_000)).toBe(10_000);
  });

  it('applies to intervals on the minute grid too, but never to one-shots', () => {
    const interval: IntervalSchedule = { kind: 'interval', everyMs: 300_000, anchor: nominal };
    expect(defaultHerdWindowMs(interval, nominal, 10_000)).toBe(10_000);
    expect(
      defaultHerdWindowMs(
        { ...interval, anchor: new Date(nominal.getTime() + 123) },
        new Date(nominal.getTime() + 123),
        10_000,
      ),
    ).toBe(0);
    const once: OnceSchedule = { kind: 'once', at: nominal };
    expect(defaultHerdWindowMs(once, nominal, 10_000)).toBe(0);
  });

  it('is 0 when the cluster has no default', () => {
    expect(defaultHerdWindowMs(cron('0 9 * * *'), nominal, 0)).toBe(0);
  });
});
