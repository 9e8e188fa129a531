import { firstFireAtOrAfter, nextFireAfter } from './occurrences';
import type { CronSchedule, DstGapPolicy, DstRepeatPolicy } from './schedule';

const NEW_YORK = 'America/New_York';
const LONDON = 'Europe/London';
const LORD_HOWE = 'Australia/Lord_Howe';
const KATHMANDU = 'Asia/Kathmandu';
const GAPS: readonly DstGapPolicy[] = ['AUTO', 'SHIFT', 'SKIP'];
const REPEATS: readonly DstRepeatPolicy[] = ['AUTO', 'FIRST', 'LAST', 'BOTH'];
const COMBINATIONS = GAPS.flatMap((gap) => REPEATS.map((repeat) => [gap, repeat] as const));
const MINUTE = 60_000;

function cron(
  expression: string,
  timeZone: string,
  dstGap: DstGapPolicy = 'AUTO',
  dstRepeat: DstRepeatPolicy = 'AUTO',
): CronSchedule {
  return { kind: 'cron', expression, timeZone, dstGap, dstRepeat };
}

const formatters = new Map<string, Intl.DateTimeFormat>();
/** Independent rendering through Intl: "2026-03-08 03:30:00 -04:00". */
function local(instant: Date, timeZone: string): string {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'longOffset',
    });
    formatters.set(timeZone, formatter);
  }
  const part = (type: string): string =>
    formatter.formatToParts(instant).find((p) => p.type === type)?.value ?? '';
  const offset = part('timeZoneName').replace('GMT', '') || '+00:00';
  return `${part('year')}-${part('month')}-${part('day')} ${part('hour')}:${part('minute')}:${part('second')} ${offset}`;
}

/** All occurrences in [from, to) as UTC epoch ms. */
function instantsBetween(schedule: CronSchedule, from: string, to: string): number[] {
  const end = Date.parse(to);
  const out: number[] = [];
  for (
    let at = firstFireAtOrAfter(schedule, new Date(from));
    at !== null && at.getTime() < end;
    at = nextFireAfter(schedule, at)
  ) {
    out.push(at.getTime());
  }
  return out;
}

/** All occurrences in [from, to), rendered in the schedule's zone. */
function firesBetween(schedule: CronSchedule, from: string, to: string): string[] {
  return instantsBetween(schedule, from, to).map((t) => local(new Date(t), schedule.timeZone));
}

function gapsOf(instants: readonly number[]): number[] {
  return instants.slice(1).map((t, i) => (t - (instants[i] as number)) / MINUTE);
}

describe('America/New_York spring forward, 2026-03-08 (02:00 EST → 03:00 EDT)', () => {
  const day = ['2026-03-08T04:00:00Z', '2026-03-09T04:00:00Z'] as const;

  it.each(COMBINATIONS)('30 2 * * * with gap %s / repeat %s', (gap, repeat) => {
    const fires = firesBetween(cron('30 2 * * *', NEW_YORK, gap, repeat), ...day);
    // SHIFT (and AUTO, the hour being fixed) moves 02:30 forward by the gap length: 03:30 EDT.
    expect(fires).toEqual(gap === 'SKIP' ? [] : ['2026-03-08 03:30:00 -04:00']);
  });

  it('fires every day around the change exactly once (AUTO on a fixed hour)', () => {
    expect(
      firesBetween(cron('30 2 * * *', NEW_YORK), '2026-03-06T00:00:00Z', '2026-03-11T00:00:00Z'),
    ).toEqual([
      '2026-03-06 02:30:00 -05:00',
      '2026-03-07 02:30:00 -05:00',
      '2026-03-08 03:30:00 -04:00',
      '2026-03-09 02:30:00 -04:00',
      '2026-03-10 02:30:00 -04:00',
    ]);
  });

  it('SHIFT of 02:00 lands exactly on the transition instant (03:00 EDT)', () => {
    expect(
      nextFireAfter(cron('0 2 * * *', NEW_YORK, 'SHIFT'), new Date('2026-03-08T00:00:00Z'))?.toISOString(),
    ).toBe('2026-03-08T07:00:00.000Z');
  });

  it('shifts each gap occurrence of a fixed hour with a minute step, keeping their spacing', () => {
    expect(firesBetween(cron('*/15 2 * * *', NEW_YORK), ...day)).toEqual([
      '2026-03-08 03:00:00 -04:00',
      '2026-03-08 03:15:00 -04:00',
      '2026-03-08 03:30:00 -04:00',
      '2026-03-08 03:45:00 -04:00',
    ]);
    expect(firesBetween(cron('*/15 2 * * *', NEW_YORK, 'SKIP'), ...day)).toEqual([]);
    // Asking from inside the shifted stretch continues it.
    expect(
      nextFireAfter(cron('*/15 2 * * *', NEW_YORK), new Date('2026-03-08T07:15:00Z'))?.toISOString(),
    ).toBe('2026-03-08T07:30:00.000Z');
  });

  it('a shifted occurrence that lands on a real one shares its instant (both fire: see dst-shift.spec.ts)', () => {
    expect(firesBetween(cron('30 2,3 * * *', NEW_YORK, 'SHIFT'), ...day)).toEqual([
      '2026-03-08 03:30:00 -04:00',
    ]);
    expect(firesBetween(cron('30 2,3 * * *', NEW_YORK, 'SKIP'), ...day)).toEqual([
      '2026-03-08 03:30:00 -04:00',
    ]);
  });

  it.each(COMBINATIONS)('*/15 * * * * stays every 15 real minutes (gap %s / repeat %s)', (gap, repeat) => {
    const schedule = cron('*/15 * * * *', NEW_YORK, gap, repeat);
    const instants = instantsBetween(schedule, '2026-03-08T05:00:00Z', '2026-03-08T09:00:00Z');
    // AUTO skips the gap (hour is a wildcard); SHIFT's shifted times coincide with real ones and add nothing.
    expect(gapsOf(instants).every((g) => g === 15)).toBe(true);
    expect(instants).toHaveLength(16);
    expect(firesBetween(schedule, '2026-03-08T06:30:00Z', '2026-03-08T07:16:00Z')).toEqual([
      '2026-03-08 01:30:00 -05:00',
      '2026-03-08 01:45:00 -05:00',
      '2026-03-08 03:00:00 -04:00',
      '2026-03-08 03:15:00 -04:00',
    ]);
  });

  it('hourly (hour wildcard) follows real time; every-2-hours loses 02:00', () => {
    expect(firesBetween(cron('0 * * * *', NEW_YORK), '2026-03-08T05:30:00Z', '2026-03-08T08:30:00Z')).toEqual(
      ['2026-03-08 01:00:00 -05:00', '2026-03-08 03:00:00 -04:00', '2026-03-08 04:00:00 -04:00'],
    );
    expect(firesBetween(cron('0 */2 * * *', NEW_YORK), ...day)).toEqual([
      '2026-03-08 00:00:00 -05:00',
      '2026-03-08 04:00:00 -04:00',
      '2026-03-08 06:00:00 -04:00',
      '2026-03-08 08:00:00 -04:00',
      '2026-03-08 10:00:00 -04:00',
      '2026-03-08 12:00:00 -04:00',
      '2026-03-08 14:00:00 -04:00',
      '2026-03-08 16:00:00 -04:00',
      '2026-03-08 18:00:00 -04:00',
      '2026-03-08 20:00:00 -04:00',
      '2026-03-08 22:00:00 -04:00',
    ]);
  });

  it('a seconds field in the gap shifts to the same second', () => {
    expect(firesBetween(cron('15 30 2 * * *', NEW_YORK), ...day)).toEqual(['2026-03-08 03:30:15 -04:00']);
  });
});

describe('America/New_York fall back, 2026-11-01 (02:00 EDT → 01:00 EST)', () => {
  const day = ['2026-11-01T04:00:00Z', '2026-11-02T06:00:00Z'] as const;
  const first = '2026-11-01 01:30:00 -04:00';
  const last = '2026-11-01 01:30:00 -05:00';

  it.each(COMBINATIONS)('30 1 * * * with gap %s / repeat %s', (gap, repeat) => {
    const expected = { AUTO: [first], FIRST: [first], LAST: [last], BOTH: [first, last] }[repeat];
    expect(firesBetween(cron('30 1 * * *', NEW_YORK, gap, repeat), ...day)).toEqual(expected);
  });

  it('next after the first copy depends on the policy', () => {
    const afterFirst = new Date('2026-11-01T05:30:00Z');
    expect(nextFireAfter(cron('30 1 * * *', NEW_YORK, 'AUTO', 'BOTH'), afterFirst)?.toISOString()).toBe(
      '2026-11-01T06:30:00.000Z',
    );
    expect(nextFireAfter(cron('30 1 * * *', NEW_YORK, 'AUTO', 'FIRST'), afterFirst)?.toISOString()).toBe(
      '2026-11-02T06:30:00.000Z',
    );
    expect(
      nextFireAfter(
        cron('30 1 * * *', NEW_YORK, 'AUTO', 'LAST'),
        new Date('2026-11-01T00:00:00Z'),
      )?.toISOString(),
    ).toBe('2026-11-01T06:30:00.000Z');
    // Asked from inside the repeated hour (01:10 EST), FIRST has nothing left today.
    expect(
      nextFireAfter(
        cron('30 1 * * *', NEW_YORK, 'AUTO', 'FIRST'),
        new Date('2026-11-01T06:10:00Z'),
      )?.toISOString(),
    ).toBe('2026-11-02T06:30:00.000Z');
  });

  it('a fixed hour outside the repeated one is unaffected', () => {
    expect(firesBetween(cron('30 2 * * *', NEW_YORK, 'AUTO', 'BOTH'), ...day)).toEqual([
      '2026-11-01 02:30:00 -05:00',
    ]);
    expect(firesBetween(cron('30 0 * * *', NEW_YORK, 'AUTO', 'BOTH'), ...day)).toEqual([
      '2026-11-01 00:30:00 -04:00',
      '2026-11-02 00:30:00 -05:00',
    ]);
  });

  it.each(['AUTO', 'BOTH'] as const)(
    '*/15 * * * * with repeat %s fires in both copies: every 15 real minutes',
    (repeat) => {
      const instants = instantsBetween(
        cron('*/15 * * * *', NEW_YORK, 'AUTO', repeat),
        '2026-11-01T04:00:00Z',
        '2026-11-01T08:00:00Z',
      );
      expect(instants).toHaveLength(16);
      expect(gapsOf(instants).every((g) => g === 15)).toBe(true);
    },
  );

  it('*/15 * * * * with FIRST skips the second copy, with LAST the first', () => {
    expect(
      firesBetween(
        cron('*/15 * * * *', NEW_YORK, 'AUTO', 'FIRST'),
        '2026-11-01T05:30:00Z',
        '2026-11-01T07:20:00Z',
      ),
    ).toEqual([
      '2026-11-01 01:30:00 -04:00',
      '2026-11-01 01:45:00 -04:00',
      '2026-11-01 02:00:00 -05:00',
      '2026-11-01 02:15:00 -05:00',
    ]);
    expect(
      firesBetween(
        cron('*/15 * * * *', NEW_YORK, 'AUTO', 'LAST'),
        '2026-11-01T04:30:00Z',
        '2026-11-01T06:20:00Z',
      ),
    ).toEqual([
      '2026-11-01 00:30:00 -04:00',
      '2026-11-01 00:45:00 -04:00',
      '2026-11-01 01:00:00 -05:00',
      '2026-11-01 01:15:00 -05:00',
    ]);
  });

  it('hourly fires in both 01:00s', () => {
    expect(firesBetween(cron('0 * * * *', NEW_YORK), '2026-11-01T04:30:00Z', '2026-11-01T07:30:00Z')).toEqual(
      ['2026-11-01 01:00:00 -04:00', '2026-11-01 01:00:00 -05:00', '2026-11-01 02:00:00 -05:00'],
    );
  });
});

describe('Europe/London, 2026-03-29 (01:00 GMT → 02:00 BST) and 2026-10-25 (02:00 BST → 01:00 GMT)', () => {
  it.each(COMBINATIONS)('30 1 * * * with gap %s / repeat %s', (gap, repeat) => {
    const schedule = cron('30 1 * * *', LONDON, gap, repeat);
    expect(firesBetween(schedule, '2026-03-29T00:00:00Z', '2026-03-29T12:00:00Z')).toEqual(
      gap === 'SKIP' ? [] : ['2026-03-29 02:30:00 +01:00'],
    );
    const first = '2026-10-25 01:30:00 +01:00';
    const last = '2026-10-25 01:30:00 +00:00';
    expect(firesBetween(schedule, '2026-10-24T23:00:00Z', '2026-10-25T12:00:00Z')).toEqual(
      { AUTO: [first], FIRST: [first], LAST: [last], BOTH: [first, last] }[repeat],
    );
  });

  it.each(COMBINATIONS)('*/30 * * * * with gap %s / repeat %s', (gap, repeat) => {
    const schedule = cron('*/30 * * * *', LONDON, gap, repeat);
    const spring = instantsBetween(schedule, '2026-03-29T00:00:00Z', '2026-03-29T03:00:00Z');
    expect(gapsOf(spring).every((g) => g === 30)).toBe(true);
    expect(spring).toHaveLength(6);
    const fall = instantsBetween(schedule, '2026-10-24T23:00:00Z', '2026-10-25T03:00:00Z');
    // The repeated hour holds two occurrences (01:00, 01:30): FIRST/LAST drop one copy of them, BOTH/AUTO keep both.
    const dropped = repeat === 'FIRST' || repeat === 'LAST';
    expect(fall).toHaveLength(dropped ? 6 : 8);
    expect(gapsOf(fall).filter((g) => g === 90)).toHaveLength(dropped ? 1 : 0);
  });

  it('daily at 09:00 is 09:00 local on either side of both changes', () => {
    expect(firesBetween(cron('0 9 * * *', LONDON), '2026-03-28T00:00:00Z', '2026-03-31T00:00:00Z')).toEqual([
      '2026-03-28 09:00:00 +00:00',
      '2026-03-29 09:00:00 +01:00',
      '2026-03-30 09:00:00 +01:00',
    ]);
    expect(firesBetween(cron('0 9 * * *', LONDON), '2026-10-24T00:00:00Z', '2026-10-27T00:00:00Z')).toEqual([
      '2026-10-24 09:00:00 +01:00',
      '2026-10-25 09:00:00 +00:00',
      '2026-10-26 09:00:00 +00:00',
    ]);
  });
});

describe('Australia/Lord_Howe: 30-minute DST (2026-04-05 02:00 → 01:30, 2026-10-04 02:00 → 02:30)', () => {
  it.each(COMBINATIONS)('15 2 * * * on the spring day with gap %s / repeat %s', (gap, repeat) => {
    // 02:15 does not exist; shifted by the 30-minute gap it is 02:45 +11:00.
    expect(
      firesBetween(
        cron('15 2 * * *', LORD_HOWE, gap, repeat),
        '2026-10-03T12:00:00Z',
        '2026-10-04T12:00:00Z',
      ),
    ).toEqual(gap === 'SKIP' ? [] : ['2026-10-04 02:45:00 +11:00']);
  });

  it.each(COMBINATIONS)('45 1 * * * on the fall day with gap %s / repeat %s', (gap, repeat) => {
    const first = '2026-04-05 01:45:00 +11:00';
    const last = '2026-04-05 01:45:00 +10:30';
    expect(
      firesBetween(
        cron('45 1 * * *', LORD_HOWE, gap, repeat),
        '2026-04-04T12:00:00Z',
        '2026-04-05T12:00:00Z',
      ),
    ).toEqual({ AUTO: [first], FIRST: [first], LAST: [last], BOTH: [first, last] }[repeat]);
  });

  it('*/15 * * * * follows real time through both half-hour changes', () => {
    const spring = instantsBetween(
      cron('*/15 * * * *', LORD_HOWE),
      '2026-10-03T14:00:00Z',
      '2026-10-03T17:00:00Z',
    );
    expect(spring).toHaveLength(12);
    expect(gapsOf(spring).every((g) => g === 15)).toBe(true);
    const fall = instantsBetween(
      cron('*/15 * * * *', LORD_HOWE),
      '2026-04-04T14:00:00Z',
      '2026-04-04T17:00:00Z',
    );
    expect(fall).toHaveLength(12);
    expect(gapsOf(fall).every((g) => g === 15)).toBe(true);
    expect(
      firesBetween(
        cron('*/15 * * * *', LORD_HOWE, 'AUTO', 'FIRST'),
        '2026-04-04T14:30:00Z',
        '2026-04-04T15:31:00Z',
      ),
    ).toEqual(['2026-04-05 01:30:00 +11:00', '2026-04-05 01:45:00 +11:00', '2026-04-05 02:00:00 +10:30']);
  });
});

describe('Asia/Kathmandu (+05:45, no DST)', () => {
  it.each(COMBINATIONS)('0 9 * * * and */15 * * * * ignore policies (gap %s / repeat %s)', (gap, repeat) => {
    expect(
      firstFireAtOrAfter(
        cron('0 9 * * *', KATHMANDU, gap, repeat),
        new Date('2026-03-08T00:00:00Z'),
      )?.toISOString(),
    ).toBe('2026-03-08T03:15:00.000Z');
    const quarterly = instantsBetween(
      cron('*/15 * * * *', KATHMANDU, gap, repeat),
      '2026-03-08T00:00:00Z',
      '2026-03-09T00:00:00Z',
    );
    expect(quarterly).toHaveLength(96);
    expect(gapsOf(quarterly).every((g) => g === 15)).toBe(true);
    expect(local(new Date(quarterly[0] as number), KATHMANDU)).toBe('2026-03-08 05:45:00 +05:45');
  });
});

describe('zones whose midnight does not exist', () => {
  it('America/Santiago 2026-09-06: 00:00 shifts to 01:00 -03:00 (AUTO, fixed hour)', () => {
    expect(
      firesBetween(cron('0 0 * * *', 'America/Santiago'), '2026-09-05T00:00:00Z', '2026-09-08T00:00:00Z'),
    ).toEqual(['2026-09-05 00:00:00 -04:00', '2026-09-06 01:00:00 -03:00', '2026-09-07 00:00:00 -03:00']);
  });
});

describe('rare expressions in DST zones', () => {
  it('0 0 29 2 * in New York finds the leap days', () => {
    expect(
      firesBetween(cron('0 0 29 2 *', NEW_YORK), '2026-03-01T00:00:00Z', '2036-03-01T00:00:00Z'),
    ).toEqual(['2028-02-29 00:00:00 -05:00', '2032-02-29 00:00:00 -05:00', '2036-02-29 00:00:00 -05:00']);
  });

  it('a never-matching expression returns null instead of searching forever', () => {
    expect(nextFireAfter(cron('0 0 30 2 *', NEW_YORK), new Date('2026-01-01T00:00:00Z'))).toBeNull();
  });

  it('the second Sunday of March at 02:30 (the US change day itself) shifts every year', () => {
    expect(
      firesBetween(cron('30 2 * 3 SUN#2', NEW_YORK), '2026-01-01T00:00:00Z', '2028-12-31T00:00:00Z'),
    ).toEqual(['2026-03-08 03:30:00 -04:00', '2027-03-14 03:30:00 -04:00', '2028-03-12 03:30:00 -04:00']);
  });
});
