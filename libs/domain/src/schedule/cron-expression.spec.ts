import { compileCron, parseCron, ParsedCron } from './cron-expression';

/** The next `count` wall-clock matches strictly after `from` (wall times are written as UTC ISO strings). */
function nextWalls(expression: string, from: string, count: number): string[] {
  const cron = compileCron(expression);
  const out: string[] = [];
  let wall = Date.parse(from);
  for (let i = 0; i < count; i++) {
    const next = cron.nextWallTimeAfter(wall);
    if (next === null) break;
    out.push(new Date(next).toISOString().replace('.000Z', ''));
    wall = next;
  }
  return out;
}

function dates(expression: string, from: string, count: number): string[] {
  return nextWalls(expression, from, count).map((iso) => iso.slice(0, 10));
}

function errorOf(expression: string): string {
  const result = parseCron(expression);
  if (result.ok) throw new Error(`expected '${expression}' to be rejected`);
  return result.message;
}

describe('cron fields', () => {
  it('reads 5 fields as minute hour day-of-month month day-of-week, firing at second 0', () => {
    expect(nextWalls('* * * * *', '2026-01-01T00:00:30Z', 2)).toEqual([
      '2026-01-01T00:01:00',
      '2026-01-01T00:02:00',
    ]);
    expect(compileCron('5 4 3 2 1').fields).toEqual({
      second: '0',
      minute: '5',
      hour: '4',
      dayOfMonth: '3',
      month: '2',
      dayOfWeek: '1',
    });
    expect(compileCron('5 4 3 2 1').hasSeconds).toBe(false);
  });

  it('reads 6 fields with leading seconds', () => {
    expect(nextWalls('*/20 * * * * *', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-01T00:00:20',
      '2026-01-01T00:00:40',
      '2026-01-01T00:01:00',
    ]);
    expect(nextWalls('15 30 9 * * *', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-01T09:30:15']);
    expect(compileCron('0 * * * * *').hasSeconds).toBe(true);
  });

  it('is strictly after: a match exactly at `from` is not returned', () => {
    expect(nextWalls('0 9 * * *', '2026-01-01T09:00:00Z', 1)).toEqual(['2026-01-02T09:00:00']);
    expect(nextWalls('0 9 * * *', '2026-01-01T08:59:59.999Z', 1)).toEqual(['2026-01-01T09:00:00']);
  });

  it('expands ranges, steps over ranges, start/step and lists', () => {
    expect(nextWalls('10-50/20 * * * *', '2026-01-01T00:00:00Z', 4).map((s) => s.slice(14, 16))).toEqual([
      '10',
      '30',
      '50',
      '10',
    ]);
    expect(nextWalls('5/20 * * * *', '2026-01-01T00:00:00Z', 4).map((s) => s.slice(14, 16))).toEqual([
      '05',
      '25',
      '45',
      '05',
    ]);
    expect(nextWalls('*/15 * * * *', '2026-01-01T00:00:00Z', 3).map((s) => s.slice(14, 16))).toEqual([
      '15',
      '30',
      '45',
    ]);
    expect(nextWalls('0,30 9,17 * * *', '2026-01-01T00:00:00Z', 5)).toEqual([
      '2026-01-01T09:00:00',
      '2026-01-01T09:30:00',
      '2026-01-01T17:00:00',
      '2026-01-01T17:30:00',
      '2026-01-02T09:00:00',
    ]);
    expect(nextWalls('0 0 1-3,20-21 * *', '2026-01-01T00:00:00Z', 5).map((s) => s.slice(0, 10))).toEqual([
      '2026-01-02',
      '2026-01-03',
      '2026-01-20',
      '2026-01-21',
      '2026-02-01',
    ]);
  });

  it('accepts month names, in any case, in lists, ranges and steps', () => {
    expect(dates('0 0 1 JAN,JUL *', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-07-01',
      '2027-01-01',
      '2027-07-01',
    ]);
    expect(dates('0 0 1 jan-may/2 *', '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-03-01',
      '2026-05-01',
      '2027-01-01',
      '2027-03-01',
    ]);
  });

  it('accepts day names and 0/7 for Sunday', () => {
    // 2026-01-02 is a Friday.
    expect(nextWalls('0 9 * * MON-FRI', '2026-01-02T10:00:00Z', 2)).toEqual([
      '2026-01-05T09:00:00',
      '2026-01-06T09:00:00',
    ]);
    expect(dates('0 0 * * SUN', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-04', '2026-01-11']);
    expect(dates('0 0 * * 7', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-04', '2026-01-11']);
    expect(dates('0 0 * * 0', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-04', '2026-01-11']);
    expect(dates('0 0 * * 5-7', '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-02',
      '2026-01-03',
      '2026-01-04',
      '2026-01-09',
    ]);
    expect(dates('0 0 * * sat,sun', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-03',
      '2026-01-04',
      '2026-01-10',
    ]);
  });

  it('open-ended day-of-week items (*, */s, a/s) run Sunday(0) to Saturday(6); 7 is only a value', () => {
    // 5/2 is Friday only (not Friday and "7"), as croner reads it.
    expect(dates('0 0 * * 5/2', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-02', '2026-01-09']);
    expect(dates('0 0 * * 1/3', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-05',
      '2026-01-08',
      '2026-01-12',
    ]);
    expect(dates('0 0 * * */7', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-04', '2026-01-11']);
    // An explicit range may end at 7: 4-7/3 is Thursday and Sunday.
    expect(dates('0 0 * * 4-7/3', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-04', '2026-01-08']);
  });

  it('L in day-of-month is the last day of the month, leap years included', () => {
    expect(dates('0 0 L * *', '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-31',
      '2026-02-28',
      '2026-03-31',
      '2026-04-30',
    ]);
    expect(dates('0 0 L 2 *', '2027-03-01T00:00:00Z', 2)).toEqual(['2028-02-29', '2029-02-28']);
  });

  it('L-n is n days before the last day', () => {
    expect(dates('0 0 L-2 * *', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-29',
      '2026-02-26',
      '2026-03-29',
    ]);
  });

  it('nW is the weekday nearest day n, without leaving the month', () => {
    // Jan 15 2026 is a Thursday, Feb 15 and Mar 15 Sundays (→ Monday), Aug 15 a Saturday (→ Friday).
    expect(dates('0 0 15W * *', '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-15',
      '2026-02-16',
      '2026-03-16',
      '2026-04-15',
    ]);
    expect(dates('0 0 15W 8 *', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-08-14']);
    // Aug 1 2026 is a Saturday: the nearest weekday inside August is Monday the 3rd.
    expect(dates('0 0 1W 8 *', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-08-03']);
    // May 31 2026 is a Sunday: Friday the 29th, not June 1st. 31W never fires in 30-day months.
    expect(dates('0 0 31W * *', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-30',
      '2026-03-31',
      '2026-05-29',
    ]);
  });

  it('LW is the last weekday of the month', () => {
    // Jan 31 2026 is a Saturday, Feb 28 a Saturday, Mar 31 a Tuesday, May 31 a Sunday.
    expect(dates('0 0 LW * *', '2026-01-01T00:00:00Z', 5)).toEqual([
      '2026-01-30',
      '2026-02-27',
      '2026-03-31',
      '2026-04-30',
      '2026-05-29',
    ]);
  });

  it('dL, FRIL and d#L are the last such weekday of the month', () => {
    const lastFridays = ['2026-01-30', '2026-02-27', '2026-03-27', '2026-04-24'];
    expect(dates('0 0 * * 5L', '2026-01-01T00:00:00Z', 4)).toEqual(lastFridays);
    expect(dates('0 0 * * FRIL', '2026-01-01T00:00:00Z', 4)).toEqual(lastFridays);
    expect(dates('0 0 * * FRI#L', '2026-01-01T00:00:00Z', 4)).toEqual(lastFridays);
    expect(dates('0 0 * * 5#L', '2026-01-01T00:00:00Z', 4)).toEqual(lastFridays);
  });

  it('d#n is the n-th such weekday of the month', () => {
    expect(dates('0 0 * * MON#2', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-12',
      '2026-02-09',
      '2026-03-09',
    ]);
    expect(dates('0 0 * * 1#5', '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-03-30',
      '2026-06-29',
      '2026-08-31',
      '2026-11-30',
    ]);
    expect(dates('0 0 * * 1#1,FRI#3', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-05',
      '2026-01-16',
      '2026-02-02',
    ]);
  });

  it('? means "any" in the day fields', () => {
    expect(dates('0 0 ? * MON', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-05', '2026-01-12']);
    expect(dates('0 0 1 * ?', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-02-01', '2026-03-01']);
    expect(compileCron('0 0 ? * MON').dayOfMonthRestricted).toBe(false);
  });

  it('fires when EITHER day field matches if both are restricted (Vixie), AND otherwise', () => {
    // 13th or any Friday.
    expect(dates('0 0 13 * FRI', '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-02',
      '2026-01-09',
      '2026-01-13',
      '2026-01-16',
    ]);
    // Only the day-of-month is restricted: the day-of-week wildcard does not widen it.
    expect(dates('0 0 13 * *', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-13', '2026-02-13']);
    // */2 counts as restricted (like croner and cron-parser): odd days OR Mondays.
    expect(dates('0 0 */2 * MON', '2026-01-01T00:00:00Z', 5)).toEqual([
      '2026-01-03',
      '2026-01-05',
      '2026-01-07',
      '2026-01-09',
      '2026-01-11',
    ]);
    // With L and a weekday.
    expect(dates('0 0 L * MON', '2026-01-20T00:00:00Z', 3)).toEqual([
      '2026-01-26',
      '2026-01-31',
      '2026-02-02',
    ]);
  });

  it('expands the macros', () => {
    expect(nextWalls('@yearly', '2026-01-01T00:00:00Z', 1)).toEqual(['2027-01-01T00:00:00']);
    expect(nextWalls('@annually', '2026-01-01T00:00:00Z', 1)).toEqual(['2027-01-01T00:00:00']);
    expect(nextWalls('@monthly', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-02-01T00:00:00']);
    expect(nextWalls('@weekly', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-04T00:00:00']);
    expect(nextWalls('@daily', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-02T00:00:00']);
    expect(nextWalls('@midnight', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-02T00:00:00']);
    expect(nextWalls('@hourly', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-01T01:00:00']);
    expect(nextWalls('  @Daily ', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-02T00:00:00']);
  });

  it('jumps by field for rare expressions: Feb 29 is years away', () => {
    expect(dates('0 0 29 2 *', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2028-02-29',
      '2032-02-29',
      '2036-02-29',
    ]);
    expect(dates('0 0 29 2 *', '2096-03-01T00:00:00Z', 1)).toEqual(['2104-02-29']); // 2100 is not a leap year
  });

  it('returns null for an expression that never matches', () => {
    expect(compileCron('0 0 30 2 *').nextWallTimeAfter(Date.parse('2026-01-01T00:00:00Z'))).toBeNull();
    expect(compileCron('0 0 31 4,6,9,11 *').nextWallTimeAfter(Date.parse('2026-01-01T00:00:00Z'))).toBeNull();
  });

  it('matchesDate agrees with the day fields', () => {
    const cron = compileCron('0 0 L * MON');
    expect(cron.matchesDate(2026, 1, 31)).toBe(true);
    expect(cron.matchesDate(2026, 1, 26)).toBe(true);
    expect(cron.matchesDate(2026, 1, 27)).toBe(false);
  });
});

describe('hour field and DST behaviour', () => {
  it.each([
    ['*/15 * * * *', true],
    ['0 * * * *', true],
    ['0 */2 * * *', true],
    ['@hourly', true],
    ['30 2 * * *', false],
    ['0 8-18/2 * * *', false],
    ['0 1,2,3 * * *', false],
    ['@daily', false],
  ])('%s follows real time: %s', (expression, follows) => {
    expect(compileCron(expression).hourFollowsRealTime).toBe(follows);
  });
});

describe('minimum spacing', () => {
  it.each([
    ['* * * * *', 60_000],
    ['* * * * * *', 1_000],
    ['*/7 * * * * *', 4_000], // 56 → 0 of the next minute
    ['0,30 * * * *', 1_800_000],
    ['0 0,23 * * *', 3_600_000], // 23:00 → 00:00 next day
    ['0 9 * * *', 86_400_000],
    ['0 9,10 * * MON', 3_600_000],
  ])('%s → %d ms', (expression, spacing) => {
    expect(compileCron(expression).minimumSpacingMs()).toBe(spacing);
  });
});

describe('cron syntax errors', () => {
  it.each([
    ['', /expected 5 fields .* got 0/],
    ['* * * *', /expected 5 fields .* got 4/],
    ['* * * * * * *', /got 7/],
    ['60 * * * *', /minute field: '60' is out of range 0-59/],
    ['* 24 * * *', /hour field: '24' is out of range 0-23/],
    ['0 0 0 * *', /day-of-month field: '0' is out of range 1-31/],
    ['0 0 32 * *', /day-of-month field: '32' is out of range 1-31/],
    ['0 0 * 13 *', /month field: '13' is out of range 1-12/],
    ['0 0 * * 8', /day-of-week field: '8' is out of range 0-7/],
    ['60 * * * * *', /second field: '60' is out of range 0-59/],
    ['0 0 * FOO *', /month field: 'FOO' is not a number or a name like FEB/],
    ['0 0 * * FUN', /day-of-week field: 'FUN' is not a number or a name like MON/],
    ['0 0 * * 5-1', /day-of-week field: range '5-1' runs backwards/],
    ['*/0 * * * *', /minute field: step 0 .* must be between 1 and 60/],
    ['*/61 * * * *', /step 61/],
    ['0 0 * * */8', /day-of-week field: step 8 .* must be between 1 and 7/],
    ['0 0 * * 7/1', /day-of-week field: '7\/1' starts after 6, the end of the field \(use 0 for Sunday\)/],
    ['? * * * *', /minute field: '\?' is only allowed in day-of-month and day-of-week/],
    ['0 0 1,? * *', /'\?' must stand alone/],
    ['0 0 1,,2 * *', /empty list item/],
    ['0 0 * * L', /'L' needs a weekday/],
    ['0 0 * * MON#6', /occurrence 6; a month has occurrences 1-5/],
    ['0 0 * * MON#0', /occurrence 0/],
    ['0 0 L-31 * *', /reaches before the 1st/],
    ['0 0 32W * *', /'32W' is out of range 1-31/],
    ['0 0 0W * *', /'0W' is out of range 1-31/],
    ['0 1-2-3 * * *', /hour field: '1-2-3' is not valid/],
    ['5W * * * *', /minute field: '5W' is not a number/],
    ['0 L * * *', /hour field: 'L' is not a number/],
    ['@reboot', /unknown macro '@reboot' \(known: @yearly/],
    ['@every 5m', /unknown macro/],
  ])('%j is rejected: %s', (expression, message) => {
    expect(errorOf(expression)).toMatch(message);
  });

  it('compileCron throws on an invalid expression, parseCron never does', () => {
    expect(() => compileCron('61 * * * *')).toThrow(/invalid cron expression '61 \* \* \* \*'/);
    expect(parseCron('61 * * * *').ok).toBe(false);
    expect(parseCron('0 9 * * MON-FRI')).toEqual({ ok: true, cron: expect.any(ParsedCron) });
  });
});
