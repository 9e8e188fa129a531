import type { FieldViolation } from '../validation';
import { parseIsoInstant, parseSchedule, type ScheduleParseOptions } from './parse-schedule';

const options: ScheduleParseOptions = { minIntervalMs: 1_000, now: new Date('2026-06-01T12:00:00Z') };

function violations(raw: unknown, opts: ScheduleParseOptions = options): FieldViolation[] {
  const result = parseSchedule(raw, opts);
  if (result.ok) throw new Error(`expected ${JSON.stringify(raw)} to be rejected`);
  return result.violations;
}

function only(raw: unknown, opts: ScheduleParseOptions = options): string {
  const found = violations(raw, opts);
  expect(found).toHaveLength(1);
  const [first] = found;
  return `${first?.field}: ${first?.message}`;
}

describe('parseSchedule accepts', () => {
  it('a one-shot, even in the past', () => {
    expect(parseSchedule({ kind: 'once', at: '2026-07-01T09:30:00+02:00' }, options)).toEqual({
      ok: true,
      schedule: { kind: 'once', at: new Date('2026-07-01T07:30:00Z') },
    });
    expect(parseSchedule({ kind: 'once', at: '2020-01-01T00:00:00Z' }, options).ok).toBe(true);
  });

  it('an interval, anchored at start_at, else at now', () => {
    expect(parseSchedule({ kind: 'interval', every_ms: 60_000 }, options)).toEqual({
      ok: true,
      schedule: { kind: 'interval', everyMs: 60_000, anchor: options.now },
    });
    expect(
      parseSchedule(
        {
          kind: 'interval',
          every_ms: 60_000,
          start_at: '2026-06-02T00:00:00Z',
          end_at: '2026-06-03T00:00:00Z',
          max_fires: 10,
        },
        options,
      ),
    ).toEqual({
      ok: true,
      schedule: {
        kind: 'interval',
        everyMs: 60_000,
        anchor: new Date('2026-06-02T00:00:00Z'),
        startAt: new Date('2026-06-02T00:00:00Z'),
        endAt: new Date('2026-06-03T00:00:00Z'),
        maxFires: 10,
      },
    });
    expect(
      parseSchedule({ kind: 'interval', every_ms: 5_000, anchor: '2026-01-01T00:00:00.5Z' }, options),
    ).toEqual({
      ok: true,
      schedule: { kind: 'interval', everyMs: 5_000, anchor: new Date('2026-01-01T00:00:00.500Z') },
    });
  });

  it('a cron with defaults (UTC, AUTO, AUTO) and with everything set', () => {
    expect(parseSchedule({ kind: 'cron', expression: '0 9 * * MON-FRI' }, options)).toEqual({
      ok: true,
      schedule: {
        kind: 'cron',
        expression: '0 9 * * MON-FRI',
        timeZone: 'UTC',
        dstGap: 'AUTO',
        dstRepeat: 'AUTO',
      },
    });
    const full = parseSchedule(
      {
        kind: 'cron',
        expression: '30 2 * * *',
        time_zone: 'America/New_York',
        dst_gap: 'SKIP',
        dst_repeat: 'BOTH',
        start_at: '2026-06-01T00:00:00Z',
        end_at: '2027-06-01T00:00:00Z',
        max_fires: 5,
      },
      options,
    );
    expect(full.ok && full.schedule).toMatchObject({
      timeZone: 'America/New_York',
      dstGap: 'SKIP',
      dstRepeat: 'BOTH',
      maxFires: 5,
    });
  });

  it('a per-second cron when the floor allows it, and nulls as absent', () => {
    expect(
      parseSchedule({ kind: 'cron', expression: '* * * * * *', start_at: null, max_fires: null }, options).ok,
    ).toBe(true);
  });
});

describe('parseSchedule rejects, naming the field', () => {
  it.each([
    [undefined, 'schedule: is required'],
    ['daily', 'schedule: must be an object'],
    [[1], 'schedule: must be an object'],
    [{}, 'schedule.kind: is required (one of once, interval, cron, rrule)'],
    [{ kind: 'weekly' }, 'schedule.kind: must be one of once, interval, cron, rrule; got "weekly"'],
  ])('%j', (raw, message) => {
    expect(only(raw)).toBe(message);
  });

  it('a one-shot without a valid instant', () => {
    expect(only({ kind: 'once' })).toMatch(/^schedule\.at: is required; an ISO-8601 timestamp/);
    expect(only({ kind: 'once', at: '2026-07-01T09:30:00' })).toMatch(
      /^schedule\.at: must be an ISO-8601 timestamp with an explicit offset or Z, e\.g\. .*; got "2026-07-01T09:30:00"$/,
    );
    expect(only({ kind: 'once', at: '2026-02-30T09:30:00Z' })).toMatch(/^schedule\.at: must be an ISO-8601/);
    expect(only({ kind: 'once', at: 1767225600000 })).toMatch(/^schedule\.at: must be an ISO-8601/);
    expect(only({ kind: 'once', at: 'tomorrow' })).toMatch(/^schedule\.at: must be an ISO-8601/);
  });

  it('unknown fields (typos must not fall back to defaults)', () => {
    expect(only({ kind: 'cron', expression: '0 9 * * *', timezone: 'Europe/Paris' })).toBe(
      'schedule.timezone: is not a known field of a cron schedule (known: kind, expression, time_zone, dst_gap, dst_repeat, start_at, end_at, max_fires)',
    );
    expect(only({ kind: 'once', at: '2026-07-01T00:00:00Z', every_ms: 5 })).toMatch(
      /^schedule\.every_ms: is not a known field of a once/,
    );
  });

  it('every_ms below the configured floor, or not a positive integer', () => {
    expect(only({ kind: 'interval', every_ms: 500 })).toBe(
      'schedule.every_ms: must be at least 1000 ms (the configured minimum interval); got 500',
    );
    expect(only({ kind: 'interval', every_ms: 0 })).toBe(
      'schedule.every_ms: must be a positive integer number of milliseconds; got 0',
    );
    expect(only({ kind: 'interval', every_ms: 1.5 })).toMatch(
      /^schedule\.every_ms: must be a positive integer/,
    );
    expect(only({ kind: 'interval', every_ms: '60000' })).toMatch(
      /^schedule\.every_ms: must be a positive integer/,
    );
    expect(only({ kind: 'interval' })).toBe(
      'schedule.every_ms: is required (milliseconds between occurrences)',
    );
    expect(only({ kind: 'interval', every_ms: 1e15 })).toMatch(/^schedule\.every_ms: must be at most/);
  });

  it('end_at not after start_at', () => {
    expect(
      only({
        kind: 'interval',
        every_ms: 60_000,
        start_at: '2026-07-01T00:00:00Z',
        end_at: '2026-07-01T00:00:00Z',
      }),
    ).toBe('schedule.end_at: must be after schedule.start_at');
    expect(
      only({
        kind: 'cron',
        expression: '* * * * *',
        start_at: '2026-07-02T00:00:00Z',
        end_at: '2026-07-01T00:00:00+02:00',
      }),
    ).toBe('schedule.end_at: must be after schedule.start_at');
  });

  it('a window that is already over', () => {
    expect(only({ kind: 'interval', every_ms: 60_000, end_at: '2026-05-01T00:00:00Z' })).toMatch(
      /^schedule\.end_at: is before the first occurrence at or after 2026-06-01T12:00:00\.000Z, so it would never fire$/,
    );
    expect(only({ kind: 'cron', expression: '0 9 1 1 *', end_at: '2026-12-31T00:00:00Z' })).toMatch(
      /^schedule\.end_at: is before/,
    );
  });

  it('max_fires not a positive integer', () => {
    expect(only({ kind: 'interval', every_ms: 60_000, max_fires: 0 })).toBe(
      'schedule.max_fires: must be a positive integer; got 0',
    );
    expect(only({ kind: 'cron', expression: '* * * * *', max_fires: -2 })).toMatch(
      /^schedule\.max_fires: must be a positive integer/,
    );
  });

  it('a bad cron expression, with the field and the reason', () => {
    expect(only({ kind: 'cron', expression: '61 * * * *' })).toBe(
      "schedule.expression: minute field: '61' is out of range 0-59 (in '61 * * * *')",
    );
    expect(only({ kind: 'cron' })).toBe("schedule.expression: is required, e.g. '0 9 * * MON-FRI'");
    expect(only({ kind: 'cron', expression: 42 })).toBe('schedule.expression: must be a string');
    expect(only({ kind: 'cron', expression: '* * *' })).toMatch(/^schedule\.expression: expected 5 fields/);
    expect(only({ kind: 'cron', expression: `0 ${'1,'.repeat(300)}2 * * *` })).toBe(
      'schedule.expression: must be at most 512 characters',
    );
  });

  it('a cron that never matches a date', () => {
    expect(only({ kind: 'cron', expression: '0 0 30 2 *' })).toBe(
      'schedule.expression: never matches a calendar date (like February 30), so it would never fire',
    );
  });

  it('a cron denser than the floor: per-second needs minIntervalMs ≤ 1000, per-minute ≤ 60000', () => {
    const strict = { ...options, minIntervalMs: 60_000 };
    expect(only({ kind: 'cron', expression: '* * * * * *' }, strict)).toBe(
      'schedule.expression: fires as often as every 1 s, more often than the minimum interval of 1 min',
    );
    expect(only({ kind: 'cron', expression: '*/30 * * * * *' }, strict)).toMatch(/every 30 s/);
    expect(parseSchedule({ kind: 'cron', expression: '0 * * * * *' }, strict).ok).toBe(true);
    expect(parseSchedule({ kind: 'cron', expression: '* * * * *' }, strict).ok).toBe(true);
    expect(only({ kind: 'cron', expression: '* * * * *' }, { ...options, minIntervalMs: 300_000 })).toMatch(
      /every 1 min/,
    );
  });

  it('an unknown time zone', () => {
    expect(only({ kind: 'cron', expression: '0 9 * * *', time_zone: 'Mars/Base' })).toBe(
      "schedule.time_zone: unknown IANA time zone 'Mars/Base' (use a name like 'America/New_York' or 'UTC')",
    );
    expect(only({ kind: 'cron', expression: '0 9 * * *', time_zone: '+05:30' })).toMatch(
      /^schedule\.time_zone: unknown IANA time zone/,
    );
    expect(only({ kind: 'cron', expression: '0 9 * * *', time_zone: 5 })).toMatch(
      /^schedule\.time_zone: must be a string/,
    );
  });

  it('unknown DST policies', () => {
    expect(only({ kind: 'cron', expression: '0 9 * * *', dst_gap: 'FIRST' })).toBe(
      'schedule.dst_gap: must be one of AUTO, SHIFT, SKIP; got "FIRST"',
    );
    expect(only({ kind: 'cron', expression: '0 9 * * *', dst_repeat: 'shift' })).toBe(
      'schedule.dst_repeat: must be one of AUTO, FIRST, LAST, BOTH; got "shift"',
    );
  });

  it('reports every bad field in one pass, under a custom path', () => {
    const result = parseSchedule(
      {
        kind: 'cron',
        expression: '0 25 * * *',
        time_zone: 'Nowhere',
        dst_gap: 'X',
        max_fires: 0,
        start_at: 'x',
      },
      options,
      'jobs[3].schedule',
    );
    expect(result.ok).toBe(false);
    expect(!result.ok && result.violations.map((v) => v.field).sort()).toEqual([
      'jobs[3].schedule.dst_gap',
      'jobs[3].schedule.expression',
      'jobs[3].schedule.max_fires',
      'jobs[3].schedule.start_at',
      'jobs[3].schedule.time_zone',
    ]);
  });
});

describe('parseIsoInstant', () => {
  it.each([
    ['2026-03-08T02:30:00Z', '2026-03-08T02:30:00.000Z'],
    ['2026-03-08t02:30:00z', '2026-03-08T02:30:00.000Z'],
    ['2026-03-08T02:30Z', '2026-03-08T02:30:00.000Z'],
    ['2026-03-08T02:30:00.123456789Z', '2026-03-08T02:30:00.123Z'],
    ['2026-03-08T02:30:00.5+05:45', '2026-03-07T20:45:00.500Z'],
    ['2026-03-08T02:30:00-0500', '2026-03-08T07:30:00.000Z'],
    ['2028-02-29T00:00:00Z', '2028-02-29T00:00:00.000Z'],
  ])('%s → %s', (text, expected) => {
    expect(parseIsoInstant(text)?.toISOString()).toBe(expected);
  });

  it.each([
    '2026-03-08T02:30:00',
    '2026-03-08',
    '2026-02-29T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T00:60:00Z',
    '2026-01-01T00:00:60Z',
    '2026-01-01T00:00:00+24:00',
    ' 2026-01-01T00:00:00Z',
    '2026-01-01 00:00:00Z',
  ])('%j is rejected', (text) => {
    expect(parseIsoInstant(text)).toBeUndefined();
  });
});
