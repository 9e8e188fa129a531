/**
 * Proleptic Gregorian calendar arithmetic on plain numbers (days since 1970-01-01), after Howard Hinnant's
 * `days_from_civil` / `civil_from_days`: no `Date` allocation on the cron hot path.
 */

// Module-level aliases: inside Jest's vm sandbox every global lookup (Math.*) is slow, so alias once.
const { floor } = Math;

export const SECOND_MS = 1_000;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** Days since 1970-01-01 of the civil date `year`-`month`-`day` (month 1–12). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + floor(yearOfEra / 4) - floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** A civil date: month 1–12, day 1–31. */
export interface CivilDate {
  year: number;
  month: number;
  day: number;
}

/** The civil date of `days` since 1970-01-01, written into `into` (reused to avoid allocation). */
export function civilFromDays(days: number, into: CivilDate): CivilDate {
  const z = days + 719_468;
  const era = floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = floor(
    (dayOfEra - floor(dayOfEra / 1460) + floor(dayOfEra / 36_524) - floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + floor(yearOfEra / 4) - floor(yearOfEra / 100));
  const mp = floor((5 * dayOfYear + 2) / 153);
  const month = mp < 10 ? mp + 3 : mp - 9;
  into.year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  into.month = month;
  into.day = dayOfYear - floor((153 * mp + 2) / 5) + 1;
  return into;
}

/** Whether `year` is a Gregorian leap year. */
export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

const MONTH_LENGTHS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

/** Number of days in `month` (1–12) of `year`. */
export function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeapYear(year) ? 29 : (MONTH_LENGTHS[month - 1] as number);
}

/** Day of week (0 = Sunday … 6 = Saturday) of `days` since 1970-01-01 (a Thursday). */
export function weekdayOfDays(days: number): number {
  return (((days + 4) % 7) + 7) % 7;
}
