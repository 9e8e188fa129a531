import {
  applyCalendarRule,
  civilDateDays,
  CompiledCalendars,
  MAX_BUSINESS_DAY_SEARCH_DAYS,
  type BusinessCalendar,
} from './business-calendar';

const weekdays: BusinessCalendar = {
  name: 'de-work',
  version: 3,
  closedWeekdays: [0, 6],
  holidays: [
    { date: '2026-12-25', name: 'Christmas Day' },
    { date: '2027-01-01', name: "New Year's Day" },
  ],
  closedDates: ['2026-12-31'],
  openDates: ['2027-01-02'],
};
const compiled = new CompiledCalendars([weekdays]);
const day = (d: string) => civilDateDays(d)!;
const iso = (ms: number) => new Date(ms).toISOString();

describe('business calendars', () => {
  it('reads civil dates and refuses ones that roll over', () => {
    expect(civilDateDays('1970-01-02')).toBe(1);
    expect(civilDateDays('2027-02-29')).toBeUndefined();
    expect(civilDateDays('2026-13-01')).toBeUndefined();
    expect(civilDateDays('26-1-1')).toBeUndefined();
  });

  it('closes weekends, holidays and extra closed dates; an extra open date wins', () => {
    expect(compiled.isBusinessDay(day('2026-12-04'))).toBe(true); // Friday
    expect(compiled.closureOf(day('2026-12-05'))?.why).toBe('Saturday');
    expect(compiled.closureOf(day('2026-12-25'))?.why).toBe('Christmas Day');
    expect(compiled.closureOf(day('2026-12-31'))?.why).toBe('closed date');
    // 2027-01-02 is a Saturday, opened by hand.
    expect(compiled.isBusinessDay(day('2027-01-02'))).toBe(true);
  });

  it('is closed when any of several calendars closes the day', () => {
    const us: BusinessCalendar = {
      ...weekdays,
      name: 'us',
      holidays: [{ date: '2026-11-26', name: 'Thanksgiving' }],
    };
    const both = new CompiledCalendars([weekdays, us]);
    expect(both.closureOf(day('2026-11-26'))?.calendar.name).toBe('us');
    expect(compiled.isBusinessDay(day('2026-11-26'))).toBe(true);
  });

  it('fires an occurrence on a business day where it is', () => {
    const at = Date.parse('2026-12-04T08:00:00Z');
    expect(applyCalendarRule(compiled, 'NEXT_BUSINESS_DAY', at, 'Europe/Berlin')).toEqual({
      kind: 'FIRE',
      at,
    });
  });

  it('skips an occurrence on a closed day under SKIP, naming the calendar and why', () => {
    const d = applyCalendarRule(compiled, 'SKIP', Date.parse('2026-12-25T08:00:00Z'), 'Europe/Berlin');
    expect(d).toMatchObject({ kind: 'SKIP', why: 'Christmas Day' });
    expect(d.kind === 'SKIP' && d.calendar.version).toBe(3);
  });

  it('moves to the next business day across the year end, keeping the wall time', () => {
    // Thu 2026-12-31 (closed), Fri 01-01 (holiday), Sat 01-02 is open by hand: 09:00 Berlin there.
    const d = applyCalendarRule(
      compiled,
      'NEXT_BUSINESS_DAY',
      Date.parse('2026-12-31T08:00:00Z'),
      'Europe/Berlin',
    );
    expect(d.kind).toBe('SHIFT');
    expect(d.kind === 'SHIFT' && iso(d.at)).toBe('2027-01-02T08:00:00.000Z');
    expect(d.kind === 'SHIFT' && d.shiftMs).toBe(2 * 86_400_000);
  });

  it('moves to the previous business day across a month end', () => {
    // Sat 2027-05-01 09:00 New York → Fri 2027-04-30 09:00 EDT.
    const d = applyCalendarRule(
      compiled,
      'PREVIOUS_BUSINESS_DAY',
      Date.parse('2027-05-01T13:00:00Z'),
      'America/New_York',
    );
    expect(d.kind === 'SHIFT' && iso(d.at)).toBe('2027-04-30T13:00:00.000Z');
    // Fri 2027-01-01 (holiday) → Wed 2026-12-30 (Thu 31 is closed).
    const e = applyCalendarRule(
      compiled,
      'PREVIOUS_BUSINESS_DAY',
      Date.parse('2027-01-01T08:00:00Z'),
      'Europe/Berlin',
    );
    expect(e.kind === 'SHIFT' && iso(e.at)).toBe('2026-12-30T08:00:00.000Z');
  });

  it('keeps the wall time across a DST change: 09:00 CET Saturday → 09:00 CEST Monday', () => {
    // Europe/Berlin springs forward on Sunday 2027-03-28.
    const d = applyCalendarRule(
      compiled,
      'NEXT_BUSINESS_DAY',
      Date.parse('2027-03-27T08:00:00Z'),
      'Europe/Berlin',
    );
    expect(d.kind === 'SHIFT' && iso(d.at)).toBe('2027-03-29T07:00:00.000Z');
    expect(d.kind === 'SHIFT' && d.shiftMs).toBe(2 * 86_400_000 - 3_600_000);
  });

  it('moves a wall time onto a DST gap past the gap, as dst_gap SHIFT does', () => {
    const saturdays = new CompiledCalendars([
      { ...weekdays, closedWeekdays: [6], holidays: [], closedDates: [] },
    ]);
    // Sat 2027-03-27 02:30 CET → Sun 02:30 does not exist → 03:30 CEST (01:30Z).
    const d = applyCalendarRule(
      saturdays,
      'NEXT_BUSINESS_DAY',
      Date.parse('2027-03-27T01:30:00Z'),
      'Europe/Berlin',
    );
    expect(d.kind === 'SHIFT' && iso(d.at)).toBe('2027-03-28T01:30:00.000Z');
  });

  it('takes the first of two instants in a fall-back overlap', () => {
    const saturdays = new CompiledCalendars([
      { ...weekdays, closedWeekdays: [6], holidays: [], closedDates: [] },
    ]);
    // Sat 2027-10-30 02:30 CEST → Sun 10-31 02:30 happens twice (CEST then CET): the first, 00:30Z.
    const d = applyCalendarRule(
      saturdays,
      'NEXT_BUSINESS_DAY',
      Date.parse('2027-10-30T00:30:00Z'),
      'Europe/Berlin',
    );
    expect(d.kind === 'SHIFT' && iso(d.at)).toBe('2027-10-31T00:30:00.000Z');
  });

  it('reads the civil date in the job zone: Friday 23:30 UTC is Saturday in Berlin', () => {
    const at = Date.parse('2026-12-04T23:30:00Z');
    expect(applyCalendarRule(compiled, 'SKIP', at, 'UTC')).toEqual({ kind: 'FIRE', at });
    expect(applyCalendarRule(compiled, 'SKIP', at, 'Europe/Berlin').kind).toBe('SKIP');
  });

  it('ONLY_CLOSED_DAYS fires on closed days and skips business days', () => {
    const sat = Date.parse('2026-12-05T08:00:00Z');
    expect(applyCalendarRule(compiled, 'ONLY_CLOSED_DAYS', sat, 'Europe/Berlin')).toEqual({
      kind: 'FIRE',
      at: sat,
    });
    const fri = applyCalendarRule(
      compiled,
      'ONLY_CLOSED_DAYS',
      Date.parse('2026-12-04T08:00:00Z'),
      'Europe/Berlin',
    );
    expect(fri).toMatchObject({ kind: 'SKIP', why: 'business day' });
  });

  it('gives up on a calendar closed every day after a bounded search, saying so', () => {
    const never = new CompiledCalendars([
      { ...weekdays, closedWeekdays: [0, 1, 2, 3, 4, 5, 6], openDates: [] },
    ]);
    for (const rule of ['NEXT_BUSINESS_DAY', 'PREVIOUS_BUSINESS_DAY'] as const) {
      const d = applyCalendarRule(never, rule, Date.parse('2026-12-04T08:00:00Z'), 'UTC');
      expect(d).toMatchObject({
        kind: 'SKIP',
        why: `no business day within ${MAX_BUSINESS_DAY_SEARCH_DAYS} days`,
      });
    }
  });
});
