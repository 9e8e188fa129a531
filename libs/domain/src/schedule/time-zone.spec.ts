import { civilFromDays, daysFromCivil, daysInMonth, weekdayOfDays, type CivilDate } from './calendar';
import { isKnownTimeZone, zoneOffsetMs, zoneRules } from './time-zone';

const HOUR = 3_600_000;
const MINUTE = 60_000;

function transitions(zone: string, year: number): [string, number, number][] {
  return zoneRules(zone)
    .transitionsIn(year)
    .map((t) => [new Date(t.at).toISOString(), t.before / MINUTE, t.after / MINUTE]);
}

describe('zone transitions, found from Intl', () => {
  it('America/New_York 2026', () => {
    expect(transitions('America/New_York', 2026)).toEqual([
      ['2026-03-08T07:00:00.000Z', -300, -240],
      ['2026-11-01T06:00:00.000Z', -240, -300],
    ]);
  });

  it('Europe/London 2026', () => {
    expect(transitions('Europe/London', 2026)).toEqual([
      ['2026-03-29T01:00:00.000Z', 0, 60],
      ['2026-10-25T01:00:00.000Z', 60, 0],
    ]);
  });

  it('Australia/Lord_Howe 2026: half-hour changes', () => {
    expect(transitions('Australia/Lord_Howe', 2026)).toEqual([
      ['2026-04-04T15:00:00.000Z', 660, 630],
      ['2026-10-03T15:30:00.000Z', 630, 660],
    ]);
  });

  it('Asia/Kathmandu and UTC have none', () => {
    expect(transitions('Asia/Kathmandu', 2026)).toEqual([]);
    expect(transitions('UTC', 2026)).toEqual([]);
  });

  it('a standard-offset change: Kathmandu moved from +05:30 to +05:45 at local midnight, 1986-01-01', () => {
    expect(transitions('Asia/Kathmandu', 1985)).toEqual([['1985-12-31T18:30:00.000Z', 330, 345]]);
    expect(transitions('Asia/Kathmandu', 1986)).toEqual([]);
  });
});

describe('offsets', () => {
  it.each([
    ['America/New_York', '2026-01-15T12:00:00Z', -5 * HOUR],
    ['America/New_York', '2026-07-15T12:00:00Z', -4 * HOUR],
    ['America/New_York', '2026-03-08T06:59:59Z', -5 * HOUR],
    ['America/New_York', '2026-03-08T07:00:00Z', -4 * HOUR],
    ['Asia/Kathmandu', '2026-07-15T12:00:00Z', 5 * HOUR + 45 * MINUTE],
    ['Australia/Lord_Howe', '2026-07-15T12:00:00Z', 10 * HOUR + 30 * MINUTE],
    ['Australia/Lord_Howe', '2026-12-15T12:00:00Z', 11 * HOUR],
    ['UTC', '2026-07-15T12:00:00Z', 0],
    ['Pacific/Kiritimati', '2026-07-15T12:00:00Z', 14 * HOUR],
  ])('%s at %s', (zone, instant, offset) => {
    expect(zoneOffsetMs(zone, new Date(instant))).toBe(offset);
  });

  it('segments carry the neighbouring transitions across the UTC new year', () => {
    const segment = zoneRules('America/New_York').segmentAt(Date.parse('2027-01-10T00:00:00Z'));
    expect(new Date(segment.start).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(new Date(segment.previous?.at ?? 0).toISOString()).toBe('2026-11-01T06:00:00.000Z');
    expect(new Date(segment.next?.at ?? 0).toISOString()).toBe('2027-03-14T07:00:00.000Z');
  });
});

describe('time zone names', () => {
  it.each(['UTC', 'America/New_York', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Etc/GMT-14'])(
    '%s is known',
    (zone) => {
      expect(isKnownTimeZone(zone)).toBe(true);
    },
  );

  it.each(['Mars/Base', '', '+05:30', 'America/NewYork', '-05:00'])('%j is not', (zone) => {
    expect(isKnownTimeZone(zone)).toBe(false);
  });
});

describe('calendar arithmetic', () => {
  it('round-trips every day from 1900 to 2400 and agrees with Date', () => {
    const date: CivilDate = { year: 0, month: 0, day: 0 };
    for (let days = daysFromCivil(1900, 1, 1); days <= daysFromCivil(2400, 12, 31); days += 1) {
      civilFromDays(days, date);
      const reference = new Date(days * 86_400_000);
      if (
        date.year !== reference.getUTCFullYear() ||
        date.month !== reference.getUTCMonth() + 1 ||
        date.day !== reference.getUTCDate() ||
        weekdayOfDays(days) !== reference.getUTCDay() ||
        daysFromCivil(date.year, date.month, date.day) !== days
      ) {
        throw new Error(`calendar mismatch at day ${days}: ${JSON.stringify(date)}`);
      }
    }
  });

  it('knows month lengths, leap years included', () => {
    expect([2024, 2025, 2100, 2000].map((y) => daysInMonth(y, 2))).toEqual([29, 28, 28, 29]);
    expect(daysInMonth(2026, 4)).toBe(30);
    expect(daysInMonth(2026, 12)).toBe(31);
  });
});
