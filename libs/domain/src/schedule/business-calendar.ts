/**
 * Business calendars: which civil dates are business days (open weekdays, less holidays and extra
 * closed dates, plus extra open dates), and the rule a job applies to an occurrence whose civil date,
 * in the job's zone, is closed: SKIP it, move it to the NEXT or PREVIOUS business day at the same wall
 * time, or fire ONLY on closed days. Pure: holiday sets come in as dates (generated API side).
 */
import { DAY_MS, daysFromCivil, weekdayOfDays } from './calendar';
import { zoneRules, type ZoneRules } from './time-zone';

/** What a job does with an occurrence on a closed day. */
export type CalendarRule = 'SKIP' | 'NEXT_BUSINESS_DAY' | 'PREVIOUS_BUSINESS_DAY' | 'ONLY_CLOSED_DAYS';
export const CALENDAR_RULES: readonly CalendarRule[] = [
  'SKIP',
  'NEXT_BUSINESS_DAY',
  'PREVIOUS_BUSINESS_DAY',
  'ONLY_CLOSED_DAYS',
];

/** A named holiday on a civil date `YYYY-MM-DD`. */
export interface CalendarHoliday {
  readonly date: string;
  readonly name: string;
}

/** Where a calendar's holidays came from, when generated from a holiday library. */
export interface HolidaySource {
  readonly library: string;
  /** The library's (and so its data's) exact version, pinned when the holidays were generated. */
  readonly libraryVersion: string;
  readonly country: string;
  readonly region?: string;
  readonly years: readonly number[];
}

/** A named, versioned business calendar of a tenant (or shared: tenantId null). */
export interface BusinessCalendar {
  readonly name: string;
  readonly version: number;
  /** Weekdays that are closed, 0 = Sunday … 6 = Saturday. */
  readonly closedWeekdays: readonly number[];
  readonly holidays: readonly CalendarHoliday[];
  /** Extra closed civil dates `YYYY-MM-DD`. */
  readonly closedDates: readonly string[];
  /** Civil dates `YYYY-MM-DD` that are open whatever else says (a working Saturday). */
  readonly openDates: readonly string[];
  readonly holidaySource?: HolidaySource | null;
}

/** How far the search for a business day looks before giving up (a calendar closed on every day). */
export const MAX_BUSINESS_DAY_SEARCH_DAYS = 366;

const CIVIL_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Days since 1970-01-01 of a civil date `YYYY-MM-DD`, or undefined when it is not one. */
export function civilDateDays(text: string): number | undefined {
  const m = CIVIL_DATE.exec(text);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return undefined;
  const days = daysFromCivil(y, mo, d);
  // 2023-02-30 would roll into March: refuse it.
  return new Date(days * DAY_MS).toISOString().slice(0, 10) === text ? days : undefined;
}

/** Which calendar closes a day, and why (a holiday's name, "closed date", or the weekday). */
export interface Closure {
  readonly calendar: BusinessCalendar;
  readonly why: string;
}

const WEEKDAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** A job's calendars compiled for lookups by day number: a day is a business day when every calendar has it open. */
export class CompiledCalendars {
  private readonly compiled: {
    cal: BusinessCalendar;
    weekdays: ReadonlySet<number>;
    closed: ReadonlyMap<number, string>;
    open: ReadonlySet<number>;
  }[];

  constructor(readonly calendars: readonly BusinessCalendar[]) {
    this.compiled = calendars.map((cal) => {
      const closed = new Map<number, string>();
      for (const h of cal.holidays) {
        const d = civilDateDays(h.date);
        if (d !== undefined && !closed.has(d)) closed.set(d, h.name);
      }
      for (const c of cal.closedDates) {
        const d = civilDateDays(c);
        if (d !== undefined && !closed.has(d)) closed.set(d, 'closed date');
      }
      const open = new Set<number>();
      for (const o of cal.openDates) {
        const d = civilDateDays(o);
        if (d !== undefined) open.add(d);
      }
      return { cal, weekdays: new Set(cal.closedWeekdays), closed, open };
    });
  }

  /** The first calendar that closes day `days` (since 1970-01-01), or null when it is a business day. */
  closureOf(days: number): Closure | null {
    for (const c of this.compiled) {
      if (c.open.has(days)) continue;
      const holiday = c.closed.get(days);
      if (holiday !== undefined) return { calendar: c.cal, why: holiday };
      const wd = weekdayOfDays(days);
      if (c.weekdays.has(wd)) return { calendar: c.cal, why: WEEKDAY_NAMES[wd]! };
    }
    return null;
  }

  /** Whether day `days` is a business day in every calendar. */
  isBusinessDay(days: number): boolean {
    return this.closureOf(days) === null;
  }
}

/** What the calendar rule does with one occurrence. */
export type CalendarDecision =
  | { readonly kind: 'FIRE'; readonly at: number }
  | {
      readonly kind: 'SHIFT';
      /** The moved instant: the same wall time on the business day, in the job's zone. */
      readonly at: number;
      readonly shiftMs: number;
      readonly calendar: BusinessCalendar;
      readonly why: string;
    }
  | { readonly kind: 'SKIP'; readonly calendar: BusinessCalendar; readonly why: string };

/** A calendar and its version as the ledger records it: `name@version`. */
export function calendarRef(cal: Pick<BusinessCalendar, 'name' | 'version'>): string {
  return `${cal.name}@${cal.version}`;
}

/**
 * The instant of local wall time `local` (epoch ms of the wall clock read as UTC) in a zone: the
 * earlier of two in a fall-back overlap; past a spring-forward gap by the gap's length (as dst_gap SHIFT).
 */
export function instantOfLocal(rules: ZoneRules, local: number): number {
  const a = rules.offsetAt(local - DAY_MS);
  const b = rules.offsetAt(local + DAY_MS);
  const valid = [local - a, local - b].filter((t) => t + rules.offsetAt(t) === local);
  if (valid.length > 0) return Math.min(...valid);
  return local - a;
}

/**
 * Applies `rule` to the occurrence at instant `at` (epoch ms), whose civil date is read in `timeZone`.
 * The search for a business day is bounded (MAX_BUSINESS_DAY_SEARCH_DAYS): past it the occurrence is
 * skipped, naming the bound, so a calendar closing every day cannot stall a claim.
 */
export function applyCalendarRule(
  calendars: CompiledCalendars,
  rule: CalendarRule,
  at: number,
  timeZone: string,
): CalendarDecision {
  const rules = zoneRules(timeZone);
  const local = at + rules.offsetAt(at);
  const day = Math.floor(local / DAY_MS);
  const closure = calendars.closureOf(day);
  if (rule === 'ONLY_CLOSED_DAYS') {
    if (closure) return { kind: 'FIRE', at };
    const cal = calendars.calendars[0]!;
    return { kind: 'SKIP', calendar: cal, why: 'business day' };
  }
  if (!closure) return { kind: 'FIRE', at };
  if (rule === 'SKIP') return { kind: 'SKIP', calendar: closure.calendar, why: closure.why };
  const step = rule === 'NEXT_BUSINESS_DAY' ? 1 : -1;
  for (let k = 1; k <= MAX_BUSINESS_DAY_SEARCH_DAYS; k++) {
    if (!calendars.isBusinessDay(day + step * k)) continue;
    const moved = instantOfLocal(rules, local + step * k * DAY_MS);
    return { kind: 'SHIFT', at: moved, shiftMs: moved - at, calendar: closure.calendar, why: closure.why };
  }
  return {
    kind: 'SKIP',
    calendar: closure.calendar,
    why: `no business day within ${MAX_BUSINESS_DAY_SEARCH_DAYS} days`,
  };
}
