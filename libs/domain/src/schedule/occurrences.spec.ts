import {
  MAX_PREVIEW_FIRES,
  firstFireAtOrAfter,
  nextFireAfter,
  nextOccurrenceAfter,
  previewFires,
} from './occurrences';
import type { CronSchedule, IntervalSchedule, OnceSchedule } from './schedule';

const at = (iso: string): Date => new Date(iso);
const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

describe('once', () => {
  const once: OnceSchedule = { kind: 'once', at: at('2026-05-01T12:00:00Z') };

  it('fires at its instant, and only once', () => {
    expect(iso(firstFireAtOrAfter(once, at('2026-04-01T00:00:00Z')))).toBe('2026-05-01T12:00:00.000Z');
    expect(iso(nextFireAfter(once, at('2026-04-01T00:00:00Z')))).toBe('2026-05-01T12:00:00.000Z');
    expect(nextFireAfter(once, at('2026-05-01T12:00:00Z'))).toBeNull();
    expect(nextFireAfter(once, at('2026-04-01T00:00:00Z'), 1)).toBeNull();
  });

  it('a past one-shot is still its first fire: it fires immediately', () => {
    expect(iso(firstFireAtOrAfter(once, at('2027-01-01T00:00:00Z')))).toBe('2026-05-01T12:00:00.000Z');
    expect(firstFireAtOrAfter(once, at('2027-01-01T00:00:00Z'), 1)).toBeNull();
  });

  it('previews a single fire', () => {
    expect(previewFires(once, at('2026-01-01T00:00:00Z'), 5).map(iso)).toEqual(['2026-05-01T12:00:00.000Z']);
  });
});

describe('interval', () => {
  const every5: IntervalSchedule = {
    kind: 'interval',
    everyMs: 300_000,
    anchor: at('2026-01-01T00:00:00.250Z'),
  };

  it('occurrences are anchor + k·every: the anchor is the first', () => {
    expect(iso(firstFireAtOrAfter(every5, at('2025-12-01T00:00:00Z')))).toBe('2026-01-01T00:00:00.250Z');
    expect(iso(firstFireAtOrAfter(every5, at('2026-01-01T00:00:00.250Z')))).toBe('2026-01-01T00:00:00.250Z');
    expect(iso(nextFireAfter(every5, at('2026-01-01T00:00:00.250Z')))).toBe('2026-01-01T00:05:00.250Z');
    expect(iso(nextFireAfter(every5, at('2026-01-01T00:07:00Z')))).toBe('2026-01-01T00:10:00.250Z');
  });

  it('does not drift over 10,000 periods, whatever the lateness of each step', () => {
    let t = every5.anchor;
    for (let k = 1; k <= 10_000; k++) {
      // Ask from a point somewhere inside the period, as a late scheduler would.
      const next = nextFireAfter(every5, new Date(t.getTime() + (k % 7) * 1_000));
      expect(next?.getTime()).toBe(every5.anchor.getTime() + k * every5.everyMs);
      t = next as Date;
    }
    expect(iso(t)).toBe('2026-02-04T17:20:00.250Z');
  });

  it('an odd period (7 ms) stays exact far from the anchor', () => {
    const odd: IntervalSchedule = { kind: 'interval', everyMs: 7, anchor: at('2026-01-01T00:00:00Z') };
    const far = Date.parse('2030-01-01T00:00:00Z');
    const next = nextOccurrenceAfter(odd, far) as number;
    expect((next - odd.anchor.getTime()) % 7).toBe(0);
    expect(next - far).toBeGreaterThan(0);
    expect(next - far).toBeLessThanOrEqual(7);
  });

  it('starts at startAt on the anchor grid and stops after endAt (inclusive)', () => {
    const bounded: IntervalSchedule = {
      ...every5,
      startAt: at('2026-01-01T01:02:00Z'),
      endAt: at('2026-01-01T01:15:00.250Z'),
    };
    expect(previewFires(bounded, at('2026-01-01T00:00:00Z'), 10).map(iso)).toEqual([
      '2026-01-01T01:05:00.250Z',
      '2026-01-01T01:10:00.250Z',
      '2026-01-01T01:15:00.250Z',
    ]);
    expect(nextFireAfter(bounded, at('2026-01-01T01:15:00.250Z'))).toBeNull();
  });

  it('stops once maxFires fires have been made', () => {
    const limited: IntervalSchedule = { ...every5, maxFires: 3 };
    expect(previewFires(limited, at('2026-01-01T00:00:00Z'), 10)).toHaveLength(3);
    expect(nextFireAfter(limited, at('2026-01-01T00:05:00.250Z'), 2)).not.toBeNull();
    expect(nextFireAfter(limited, at('2026-01-01T00:10:00.250Z'), 3)).toBeNull();
    // A preview for a job that already fired twice shows the one remaining.
    expect(previewFires(limited, at('2026-01-01T00:06:00Z'), 10, 2).map(iso)).toEqual([
      '2026-01-01T00:10:00.250Z',
    ]);
  });
});

describe('cron bounds', () => {
  const daily: CronSchedule = {
    kind: 'cron',
    expression: '0 9 * * *',
    timeZone: 'UTC',
    dstGap: 'AUTO',
    dstRepeat: 'AUTO',
  };

  it('honours startAt (inclusive) and endAt (inclusive)', () => {
    const bounded: CronSchedule = {
      ...daily,
      startAt: at('2026-01-03T09:00:00Z'),
      endAt: at('2026-01-05T09:00:00Z'),
    };
    expect(previewFires(bounded, at('2026-01-01T00:00:00Z'), 10).map(iso)).toEqual([
      '2026-01-03T09:00:00.000Z',
      '2026-01-04T09:00:00.000Z',
      '2026-01-05T09:00:00.000Z',
    ]);
    expect(iso(firstFireAtOrAfter(bounded, at('2026-01-03T09:00:00Z')))).toBe('2026-01-03T09:00:00.000Z');
    expect(nextFireAfter(bounded, at('2026-01-05T09:00:00Z'))).toBeNull();
    expect(firstFireAtOrAfter(bounded, at('2026-02-01T00:00:00Z'))).toBeNull();
  });

  it('is exhausted after maxFires', () => {
    const limited: CronSchedule = { ...daily, maxFires: 2 };
    expect(previewFires(limited, at('2026-01-01T00:00:00Z'), 10).map(iso)).toEqual([
      '2026-01-01T09:00:00.000Z',
      '2026-01-02T09:00:00.000Z',
    ]);
    expect(nextFireAfter(limited, at('2026-01-02T09:00:00Z'), 2)).toBeNull();
    expect(firstFireAtOrAfter(limited, at('2026-01-01T00:00:00Z'), 2)).toBeNull();
  });

  it('firstFireAtOrAfter includes `from` itself, nextFireAfter excludes `after`', () => {
    expect(iso(firstFireAtOrAfter(daily, at('2026-01-01T09:00:00Z')))).toBe('2026-01-01T09:00:00.000Z');
    expect(iso(nextFireAfter(daily, at('2026-01-01T09:00:00Z')))).toBe('2026-01-02T09:00:00.000Z');
    expect(iso(firstFireAtOrAfter(daily, at('2026-01-01T09:00:00.001Z')))).toBe('2026-01-02T09:00:00.000Z');
  });
});

describe('previewFires', () => {
  const minutely: CronSchedule = {
    kind: 'cron',
    expression: '* * * * *',
    timeZone: 'UTC',
    dstGap: 'AUTO',
    dstRepeat: 'AUTO',
  };

  it('returns the next N in order, and caps N', () => {
    const fires = previewFires(minutely, at('2026-01-01T00:00:30Z'), 3).map(iso);
    expect(fires).toEqual([
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:02:00.000Z',
      '2026-01-01T00:03:00.000Z',
    ]);
    expect(previewFires(minutely, at('2026-01-01T00:00:00Z'), 1e9)).toHaveLength(MAX_PREVIEW_FIRES);
    expect(previewFires(minutely, at('2026-01-01T00:00:00Z'), 0)).toEqual([]);
    expect(previewFires(minutely, at('2026-01-01T00:00:00Z'), -3)).toEqual([]);
  });
});
