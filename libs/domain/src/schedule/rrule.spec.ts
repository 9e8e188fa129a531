import { previewOccurrences } from './occurrences';
import { parseSchedule } from './parse-schedule';
import { parseRrule } from './rrule';
import type { DstGapPolicy, DstRepeatPolicy, RruleSchedule } from './schedule';

const NOW = new Date('2026-01-01T00:00:00Z');
const OPTIONS = { minIntervalMs: 1_000, now: NOW };

function rrule(
  rule: string,
  dtstart: string,
  timeZone = 'UTC',
  extra: { exdates?: string[]; dstGap?: DstGapPolicy; dstRepeat?: DstRepeatPolicy } = {},
): RruleSchedule {
  return {
    kind: 'rrule',
    rule,
    dtstart,
    timeZone,
    exdates: extra.exdates ?? [],
    dstGap: extra.dstGap ?? 'AUTO',
    dstRepeat: extra.dstRepeat ?? 'AUTO',
  };
}

/** The first `n` occurrences as ISO instants, a SHIFT-moved one marked with its shift in minutes. */
function fires(schedule: RruleSchedule, n: number, from = new Date(0)): string[] {
  return previewOccurrences(schedule, from, n).map(
    (o) =>
      o.nominal.toISOString().replace('.000', '') + (o.dstShiftMs === 0 ? '' : ` +${o.dstShiftMs / 60_000}m`),
  );
}

describe('RRULE parsing refuses what it does not support, naming the part', () => {
  it.each([
    ['BYDAY=MO', 'FREQ is required'],
    ['FREQ=FORTNIGHTLY', 'FREQ must be one of'],
    ['FREQ=YEARLY;BYWEEKNO=20', 'BYWEEKNO is not supported'],
    ['FREQ=YEARLY;BYYEARDAY=100', 'BYYEARDAY is not supported'],
    ['FREQ=WEEKLY;BYDAY=-1FR', 'only allowed with FREQ=MONTHLY or FREQ=YEARLY'],
    ['FREQ=MONTHLY;BYDAY=6MO', 'between -5 and 5'],
    ['FREQ=DAILY;COUNT=3;UNTIL=20270101T000000Z', 'COUNT and UNTIL must not both be given'],
    ['FREQ=DAILY;UNTIL=20270101', 'UNTIL must be a UTC date-time'],
    ['FREQ=DAILY;UNTIL=20270101T000000', 'UNTIL must be a UTC date-time'],
    ['FREQ=WEEKLY;BYMONTHDAY=1', 'BYMONTHDAY must not be used with FREQ=WEEKLY'],
    ['FREQ=DAILY;BYSETPOS=1', 'BYSETPOS must be used with another BYxxx part'],
    ['FREQ=DAILY;BYHOUR=24', 'BYHOUR values must be between 0 and 23'],
    ['FREQ=MONTHLY;BYMONTHDAY=0', 'not 0'],
    ['FREQ=DAILY;INTERVAL=0', 'INTERVAL values must be between 1'],
    ['FREQ=DAILY;COUNT=100001', 'COUNT values must be between 1 and 100000'],
    ['FREQ=DAILY;FREQ=WEEKLY', 'FREQ is given twice'],
    ['FREQ=DAILY;X-NAME=1', 'X-NAME is not an RRULE part'],
    ['FREQ=DAILY;WKST=XX', 'WKST must be one of'],
    ['FREQ=DAILY;BYDAY=MONDAY', 'BYDAY entries must be a weekday'],
    ['FREQ=DAILY;TZID=Europe/London', 'give the zone as schedule.time_zone'],
  ])('%s', (rule, message) => {
    const parsed = parseRrule(rule);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? '' : parsed.message).toContain(message);
  });

  it('accepts an RRULE: prefix, lower case and every supported part', () => {
    const parsed = parseRrule(
      'rrule:FREQ=yearly;INTERVAL=2;COUNT=5;BYMONTH=1,3;BYMONTHDAY=-1,1;BYDAY=MO,-1FR;BYHOUR=9;BYMINUTE=0,30;BYSECOND=0;BYSETPOS=1,-1;WKST=SU',
    );
    expect(parsed).toMatchObject({ ok: true, parts: { freq: 'YEARLY', interval: 2, count: 5, wkst: 0 } });
  });
});

describe('parseSchedule: an rrule schedule', () => {
  const base = {
    kind: 'rrule',
    rule: 'FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0',
    dtstart: '2026-01-01T00:00:00',
  };

  it('is accepted and normalized (upper case, seconds, sorted exdates)', () => {
    const parsed = parseSchedule(
      {
        ...base,
        rule: 'rrule:freq=monthly;byday=-1fr;byhour=17;byminute=0',
        dtstart: '2026-01-01T00:00',
        time_zone: 'Europe/London',
        exdates: ['2026-03-27T17:00', '2026-02-27T17:00:00'],
      },
      OPTIONS,
    );
    expect(parsed).toEqual({
      ok: true,
      schedule: {
        kind: 'rrule',
        rule: 'FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0',
        dtstart: '2026-01-01T00:00:00',
        timeZone: 'Europe/London',
        exdates: ['2026-02-27T17:00:00', '2026-03-27T17:00:00'],
        dstGap: 'AUTO',
        dstRepeat: 'AUTO',
      },
    });
  });

  it.each([
    [{ ...base, rule: 'FREQ=YEARLY;BYWEEKNO=1' }, 'schedule.rule', 'BYWEEKNO is not supported'],
    [{ ...base, rule: undefined }, 'schedule.rule', 'is required'],
    [{ ...base, dtstart: '2026-01-01T00:00:00Z' }, 'schedule.dtstart', 'without an offset'],
    [{ ...base, dtstart: '2026-02-30T00:00:00' }, 'schedule.dtstart', 'must be a local wall time'],
    [{ ...base, dtstart: undefined }, 'schedule.dtstart', 'is required'],
    [
      { ...base, exdates: ['2026-01-30T17:00:00', 'soon'] },
      'schedule.exdates[1]',
      'must be a local wall time',
    ],
    [{ ...base, exdates: '2026-01-30T17:00:00' }, 'schedule.exdates', 'must be an array'],
    [{ ...base, time_zone: 'Mars/Olympus' }, 'schedule.time_zone', 'unknown IANA time zone'],
    [{ ...base, dst_gap: 'LATER' }, 'schedule.dst_gap', 'must be one of'],
    [{ ...base, expression: '* * * * *' }, 'schedule.expression', 'is not a known field of a rrule schedule'],
    [{ ...base, rule: 'FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30' }, 'schedule.rule', 'would never fire'],
    [{ ...base, rule: 'FREQ=DAILY;UNTIL=20251231T000000Z' }, 'schedule.rule', 'would never fire'],
    [{ ...base, rule: 'FREQ=SECONDLY;INTERVAL=2;BYSECOND=1' }, 'schedule.rule', 'would never fire'],
    [{ ...base, end_at: '2026-01-02T00:00:00Z' }, 'schedule.end_at', 'would never fire'],
  ])('%j is refused naming %s', (raw, field, message) => {
    const parsed = parseSchedule(raw, OPTIONS);
    expect(parsed.ok).toBe(false);
    const violations = parsed.ok ? [] : parsed.violations;
    expect(violations).toEqual(
      expect.arrayContaining([{ field, message: expect.stringContaining(message) }]),
    );
  });

  it('refuses a rule denser than the minimum interval', () => {
    const parsed = parseSchedule(
      { ...base, rule: 'FREQ=MINUTELY;BYSECOND=0,5' },
      { ...OPTIONS, minIntervalMs: 10_000 },
    );
    expect(parsed.ok ? [] : parsed.violations).toEqual([
      {
        field: 'schedule.rule',
        message: 'fires as often as every 5 s, more often than the minimum interval of 10 s',
      },
    ]);
    expect(
      parseSchedule({ ...base, rule: 'FREQ=SECONDLY;INTERVAL=10' }, { ...OPTIONS, minIntervalMs: 10_000 }).ok,
    ).toBe(true);
  });

  it('refuses a rule that never matches within a bounded search, quickly', () => {
    const started = process.hrtime.bigint();
    for (const rule of [
      'FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30',
      'FREQ=WEEKLY;BYMINUTE=37;BYSETPOS=-3',
      'FREQ=MONTHLY;BYMONTHDAY=31;BYMONTH=4,6,9,11',
    ])
      expect(parseSchedule({ ...base, rule }, OPTIONS).ok).toBe(false);
    // Bounded by MAX_PERIOD_VISITS; generous for a loaded box, far below a search to year 9999 of seconds.
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(5_000);
  });
});

describe('RRULE occurrences', () => {
  it('last Friday of each month at 17:00 in London, across both DST changes', () => {
    expect(
      fires(
        rrule('FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0', '2026-01-01T00:00:00', 'Europe/London'),
        11,
      ),
    ).toEqual([
      '2026-01-30T17:00:00Z',
      '2026-02-27T17:00:00Z',
      '2026-03-27T17:00:00Z',
      '2026-04-24T16:00:00Z',
      '2026-05-29T16:00:00Z',
      '2026-06-26T16:00:00Z',
      '2026-07-31T16:00:00Z',
      '2026-08-28T16:00:00Z',
      '2026-09-25T16:00:00Z',
      '2026-10-30T17:00:00Z',
      '2026-11-27T17:00:00Z',
    ]);
  });

  it('dst_gap in New York: 02:30 on the spring-forward day fires at 03:30 EDT (SHIFT, AUTO) or not at all (SKIP)', () => {
    const rule = 'FREQ=DAILY;BYHOUR=2;BYMINUTE=30';
    const shifted = ['2026-03-07T07:30:00Z', '2026-03-08T07:30:00Z +60m', '2026-03-09T06:30:00Z'];
    expect(fires(rrule(rule, '2026-03-07T02:30:00', 'America/New_York'), 3)).toEqual(shifted);
    expect(fires(rrule(rule, '2026-03-07T02:30:00', 'America/New_York', { dstGap: 'SHIFT' }), 3)).toEqual(
      shifted,
    );
    expect(fires(rrule(rule, '2026-03-07T02:30:00', 'America/New_York', { dstGap: 'SKIP' }), 2)).toEqual([
      '2026-03-07T07:30:00Z',
      '2026-03-09T06:30:00Z',
    ]);
  });

  it('dst_gap SHIFT never loses an occurrence: 02:30 moved onto 03:30 fires twice at one instant, the moved one first', () => {
    expect(
      fires(
        rrule('FREQ=DAILY;BYHOUR=1,2,3;BYMINUTE=30', '2026-03-08T00:00:00', 'America/New_York', {
          dstGap: 'SHIFT',
        }),
        4,
      ),
    ).toEqual([
      '2026-03-08T06:30:00Z',
      '2026-03-08T07:30:00Z +60m',
      '2026-03-08T07:30:00Z',
      '2026-03-09T05:30:00Z',
    ]);
  });

  it('dst_repeat in New York: 01:30 on the fall-back day fires FIRST (AUTO), LAST or BOTH', () => {
    const rule = 'FREQ=DAILY;BYHOUR=1;BYMINUTE=30';
    const at = (repeat: DstRepeatPolicy) =>
      fires(rrule(rule, '2026-10-31T01:30:00', 'America/New_York', { dstRepeat: repeat }), 4).slice(0, 4);
    expect(at('AUTO')).toEqual([
      '2026-10-31T05:30:00Z',
      '2026-11-01T05:30:00Z',
      '2026-11-02T06:30:00Z',
      '2026-11-03T06:30:00Z',
    ]);
    expect(at('FIRST')).toEqual(at('AUTO'));
    expect(at('LAST')).toEqual([
      '2026-10-31T05:30:00Z',
      '2026-11-01T06:30:00Z',
      '2026-11-02T06:30:00Z',
      '2026-11-03T06:30:00Z',
    ]);
    expect(at('BOTH')).toEqual([
      '2026-10-31T05:30:00Z',
      '2026-11-01T05:30:00Z',
      '2026-11-01T06:30:00Z',
      '2026-11-02T06:30:00Z',
    ]);
  });

  it('HOURLY follows real time under AUTO: no hour lost or doubled in spring, the repeated hour twice in autumn', () => {
    expect(fires(rrule('FREQ=HOURLY', '2026-03-08T00:00:00', 'America/New_York'), 4)).toEqual([
      '2026-03-08T05:00:00Z',
      '2026-03-08T06:00:00Z',
      '2026-03-08T07:00:00Z',
      '2026-03-08T08:00:00Z',
    ]);
    expect(fires(rrule('FREQ=HOURLY', '2026-11-01T00:00:00', 'America/New_York'), 4)).toEqual([
      '2026-11-01T04:00:00Z',
      '2026-11-01T05:00:00Z',
      '2026-11-01T06:00:00Z',
      '2026-11-01T07:00:00Z',
    ]);
    // Every 30 minutes through London's autumn overlap: 01:00, 01:30 BST then 01:00, 01:30 GMT.
    expect(fires(rrule('FREQ=MINUTELY;INTERVAL=30', '2026-10-25T00:30:00', 'Europe/London'), 6)).toEqual([
      '2026-10-24T23:30:00Z',
      '2026-10-25T00:00:00Z',
      '2026-10-25T00:30:00Z',
      '2026-10-25T01:00:00Z',
      '2026-10-25T01:30:00Z',
      '2026-10-25T02:00:00Z',
    ]);
  });

  it('London spring gap: Sunday 01:30 on 2026-03-29 shifts to 02:30 BST', () => {
    expect(
      fires(rrule('FREQ=WEEKLY;BYDAY=SU;BYHOUR=1;BYMINUTE=30', '2026-03-22T01:30:00', 'Europe/London'), 3),
    ).toEqual(['2026-03-22T01:30:00Z', '2026-03-29T01:30:00Z +60m', '2026-04-05T00:30:00Z']);
  });

  it('EXDATE removes local wall times; COUNT counts them before they are removed; UNTIL is inclusive', () => {
    const tz = 'America/New_York';
    expect(
      fires(
        rrule('FREQ=DAILY;BYHOUR=9;BYMINUTE=0', '2026-03-09T09:00:00', tz, {
          exdates: ['2026-03-10T09:00:00'],
        }),
        2,
      ),
    ).toEqual(['2026-03-09T13:00:00Z', '2026-03-11T13:00:00Z']);
    expect(
      fires(rrule('FREQ=DAILY;COUNT=3', '2026-03-09T09:00:00', tz, { exdates: ['2026-03-10T09:00:00'] }), 10),
    ).toEqual(['2026-03-09T13:00:00Z', '2026-03-11T13:00:00Z']);
    expect(fires(rrule('FREQ=DAILY;UNTIL=20260311T130000Z', '2026-03-09T09:00:00', tz), 10)).toEqual([
      '2026-03-09T13:00:00Z',
      '2026-03-10T13:00:00Z',
      '2026-03-11T13:00:00Z',
    ]);
  });

  it('a DTSTART the rule does not match is not an occurrence; the search starts at from', () => {
    expect(fires(rrule('FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0', '2026-01-01T12:00:00'), 2)).toEqual([
      '2026-01-05T09:00:00Z',
      '2026-01-12T09:00:00Z',
    ]);
    expect(
      fires(
        rrule('FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0', '2026-01-01T12:00:00'),
        1,
        new Date('2026-06-02T00:00:00Z'),
      ),
    ).toEqual(['2026-06-08T09:00:00Z']);
  });

  // Rules where rrule.js goes wrong (sub-daily periods filtered out, BYSETPOS past a short set): the expected
  // values are python-dateutil 2.9's (rrulestr(rule, dtstart=...)), recorded here.
  it.each([
    [
      'FREQ=MINUTELY;BYDAY=SA;BYHOUR=10,12,15;BYMINUTE=7,37,46;BYSECOND=13,46',
      '2026-09-01T05:03:00',
      [
        '2026-09-05T10:07:13',
        '2026-09-05T10:07:46',
        '2026-09-05T10:37:13',
        '2026-09-05T10:37:46',
        '2026-09-05T10:46:13',
      ],
    ],
    [
      'FREQ=SECONDLY;INTERVAL=19;BYHOUR=4,7;BYMINUTE=9,19,57;BYSECOND=47',
      '2026-03-05T19:18:31',
      [
        '2026-03-08T04:19:47',
        '2026-03-08T04:57:47',
        '2026-03-15T04:09:47',
        '2026-03-15T07:19:47',
        '2026-03-15T07:57:47',
      ],
    ],
    [
      'FREQ=SECONDLY;BYDAY=FR;BYHOUR=1,19;BYMINUTE=1,14,50;BYSECOND=25',
      '2026-03-26T19:53:00',
      [
        '2026-03-27T01:01:25',
        '2026-03-27T01:14:25',
        '2026-03-27T01:50:25',
        '2026-03-27T19:01:25',
        '2026-03-27T19:14:25',
      ],
    ],
    [
      'FREQ=WEEKLY;INTERVAL=3;BYMONTH=5;BYDAY=TU,TH;BYSETPOS=-2,2',
      '2026-08-19T18:09:00',
      [
        '2027-05-18T18:09:00',
        '2027-05-20T18:09:00',
        '2028-05-09T18:09:00',
        '2028-05-11T18:09:00',
        '2029-05-01T18:09:00',
      ],
    ],
    [
      'FREQ=HOURLY;INTERVAL=5;BYDAY=MO;BYHOUR=3,8',
      '2026-01-01T00:00:00',
      [
        '2026-01-19T03:00:00',
        '2026-01-19T08:00:00',
        '2026-02-23T03:00:00',
        '2026-02-23T08:00:00',
        '2026-03-30T03:00:00',
      ],
    ],
    [
      'FREQ=MINUTELY;INTERVAL=7;BYHOUR=3;BYMINUTE=5',
      '2026-01-01T00:00:00',
      [
        '2026-01-06T03:05:00',
        '2026-01-13T03:05:00',
        '2026-01-20T03:05:00',
        '2026-01-27T03:05:00',
        '2026-02-03T03:05:00',
      ],
    ],
    [
      'FREQ=YEARLY;BYDAY=20MO,-1SU',
      '2026-01-01T09:00:00',
      [
        '2026-05-18T09:00:00',
        '2026-12-27T09:00:00',
        '2027-05-17T09:00:00',
        '2027-12-26T09:00:00',
        '2028-05-15T09:00:00',
      ],
    ],
    [
      'FREQ=MONTHLY;BYMONTHDAY=-1,15;BYDAY=MO,FR;BYSETPOS=1',
      '2026-01-01T09:00:00',
      [
        '2026-05-15T09:00:00',
        '2026-06-15T09:00:00',
        '2026-07-31T09:00:00',
        '2026-08-31T09:00:00',
        '2026-11-30T09:00:00',
      ],
    ],
  ])('%s from %s (python-dateutil)', (rule, dtstart, expected) => {
    expect(fires(rrule(rule, dtstart), 5)).toEqual(expected.map((e) => `${e}Z`));
  });
});
