/**
 * RFC 5545 recurrence rules (RRULE) evaluated in an IANA zone, with the same per-job DST policies as cron.
 *
 * A rule names wall times: DTSTART is a local wall time in the job's zone and the rule expands periods of it
 * (years, months, weeks, days, hours, minutes, seconds) into candidate wall times, in order, the way RFC 5545
 * §3.3.10 (and python-dateutil, rrule.js) expand them. Each wall time then becomes instants through the zone
 * exactly as a cron wall time does (see cron-fires.ts): a time in a spring-forward gap fires the gap's length
 * later under SHIFT (or not at all under SKIP); a time in a fall-back overlap fires at the first, the last or
 * both of its instants. AUTO follows real time for rules whose hour comes from the period (HOURLY, MINUTELY,
 * SECONDLY without BYHOUR: gap → SKIP, repeat → BOTH) and fires each named time once otherwise (SHIFT, FIRST).
 *
 * Supported: FREQ (all seven), INTERVAL, COUNT, UNTIL (UTC), BYMONTH, BYMONTHDAY (±), BYDAY (with ±ordinals for
 * MONTHLY and YEARLY), BYHOUR, BYMINUTE, BYSECOND, BYSETPOS, WKST; EXDATE as local wall times. Refused with a
 * message: BYYEARDAY, BYWEEKNO, RDATE, anything else, and the combinations RFC 5545 forbids. COUNT counts the
 * rule's wall times from DTSTART before EXDATE removes any (RFC 5545), and a DTSTART that the rule does not
 * match is not an occurrence (as in rrule.js and python-dateutil).
 *
 * Every search is bounded: at most MAX_PERIOD_VISITS periods are looked at per step, so a rule that never
 * matches (BYMONTH=2;BYMONTHDAY=30) answers "none" instead of looping, and validation refuses it.
 */

import {
  DAY_MS,
  HOUR_MS,
  MINUTE_MS,
  SECOND_MS,
  civilFromDays,
  daysFromCivil,
  daysInMonth,
  isLeapYear,
  weekdayOfDays,
  type CivilDate,
} from './calendar';
import type { EffectiveGapPolicy, EffectiveRepeatPolicy } from './cron-fires';
import type { DstGapPolicy, DstRepeatPolicy } from './schedule';
import type { ZoneRules } from './time-zone';

const { floor, ceil, max, min } = Math;
const INFINITY = Number.POSITIVE_INFINITY;

/** The frequencies of RFC 5545, coarsest first. */
export const RRULE_FREQUENCIES = [
  'YEARLY',
  'MONTHLY',
  'WEEKLY',
  'DAILY',
  'HOURLY',
  'MINUTELY',
  'SECONDLY',
] as const;
export type RruleFrequency = (typeof RRULE_FREQUENCIES)[number];

/** RFC 5545 weekday codes, indexed like `weekdayOfDays` (0 = Sunday). */
export const RRULE_WEEKDAYS = ['SU', 'MO', 'TU', 'WE', 'TH', 'FR', 'SA'] as const;

/** Largest COUNT accepted: the COUNT-th wall time is worked out once per rule, so it must stay cheap. */
export const MAX_RRULE_COUNT = 100_000;
/** Largest INTERVAL accepted (every 1,000,000 seconds is 11.5 days; every 1,000,000 years is never). */
export const MAX_RRULE_INTERVAL = 1_000_000;
/** Most periods one search step looks at before answering that there is no further occurrence. */
export const MAX_PERIOD_VISITS = 50_000;

/** A BYDAY entry: a weekday (0 = Sunday), every one in the period (nth 0) or the nth (±) of the month or year. */
export interface RruleWeekday {
  readonly weekday: number;
  readonly nth: number;
}

/** A rule's parts, validated. */
export interface RruleParts {
  readonly freq: RruleFrequency;
  readonly interval: number;
  readonly count?: number;
  /** UNTIL as an instant (epoch ms), inclusive. */
  readonly untilMs?: number;
  readonly byMonth?: readonly number[];
  readonly byMonthDay?: readonly number[];
  readonly byDay?: readonly RruleWeekday[];
  readonly byHour?: readonly number[];
  readonly byMinute?: readonly number[];
  readonly bySecond?: readonly number[];
  readonly bySetPos?: readonly number[];
  /** Week start, 0 = Sunday (default Monday). */
  readonly wkst: number;
}

/** Outcome of `parseRrule`: the parts, or why the text is refused. */
export type RruleParseResult =
  | { readonly ok: true; readonly parts: RruleParts }
  | { readonly ok: false; readonly message: string };

const UNSUPPORTED: Readonly<Record<string, string>> = {
  BYYEARDAY: 'BYYEARDAY is not supported; use BYMONTH with BYMONTHDAY',
  BYWEEKNO: 'BYWEEKNO is not supported',
  RSCALE: 'RSCALE (RFC 7529) is not supported: rules use the Gregorian calendar',
  SKIP: 'SKIP (RFC 7529) is not supported',
  DTSTART: 'DTSTART is not a rule part: give it as schedule.dtstart',
  TZID: 'TZID is not a rule part: give the zone as schedule.time_zone',
  EXDATE: 'EXDATE is not a rule part: list the excluded wall times in schedule.exdates',
  RDATE: 'RDATE is not supported',
};

/**
 * Parses the value of an RRULE property (`FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17`, an `RRULE:` prefix allowed),
 * refusing what this engine does not support and what RFC 5545 forbids, each with a message naming the part.
 */
export function parseRrule(text: string): RruleParseResult {
  const fail = (message: string): RruleParseResult => ({ ok: false, message });
  const body = text.trim().replace(/^RRULE:/i, '');
  if (body === '') return fail('is empty; e.g. FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0');
  if (/[\r\n]/.test(body))
    return fail('must be one RRULE value on one line (DTSTART and EXDATE are fields of their own)');
  const seen = new Map<string, string>();
  for (const part of body.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return fail(`part '${part}' is not NAME=VALUE`);
    const name = part.slice(0, eq).trim().toUpperCase();
    const value = part
      .slice(eq + 1)
      .trim()
      .toUpperCase();
    if (UNSUPPORTED[name] !== undefined) return fail(UNSUPPORTED[name] as string);
    if (!KNOWN_PARTS.includes(name))
      return fail(`${name} is not an RRULE part (known: ${KNOWN_PARTS.join(', ')})`);
    if (seen.has(name)) return fail(`${name} is given twice`);
    if (value === '') return fail(`${name} has no value`);
    seen.set(name, value);
  }
  const freqText = seen.get('FREQ');
  if (freqText === undefined) return fail(`FREQ is required (one of ${RRULE_FREQUENCIES.join(', ')})`);
  if (!(RRULE_FREQUENCIES as readonly string[]).includes(freqText))
    return fail(`FREQ must be one of ${RRULE_FREQUENCIES.join(', ')}; got ${freqText}`);
  const freq = freqText as RruleFrequency;

  let problem: string | undefined;
  const numbers = (name: string, lo: number, hi: number, nonZero: boolean): number[] | undefined => {
    const value = seen.get(name);
    if (value === undefined || problem !== undefined) return undefined;
    const out = new Set<number>();
    for (const item of value.split(',')) {
      if (!/^[+-]?\d{1,7}$/.test(item)) {
        problem = `${name} must be a comma-separated list of integers; got '${item}'`;
        return undefined;
      }
      const n = Number(item);
      if (n < lo || n > hi || (nonZero && n === 0)) {
        problem = `${name} values must be ${nonZero ? `between ${lo} and ${hi}, not 0` : `between ${lo} and ${hi}`}; got ${item}`;
        return undefined;
      }
      out.add(n);
    }
    return [...out].sort((a, b) => a - b);
  };
  const single = (name: string, lo: number, hi: number): number | undefined => {
    const list = numbers(name, lo, hi, false);
    if (list !== undefined && seen.get(name)?.includes(',')) problem ??= `${name} takes one value`;
    return list?.[0];
  };

  const interval = single('INTERVAL', 1, MAX_RRULE_INTERVAL) ?? 1;
  const count = single('COUNT', 1, MAX_RRULE_COUNT);
  const byMonth = numbers('BYMONTH', 1, 12, false);
  const byMonthDay = numbers('BYMONTHDAY', -31, 31, true);
  const byHour = numbers('BYHOUR', 0, 23, false);
  const byMinute = numbers('BYMINUTE', 0, 59, false);
  const bySecond = numbers('BYSECOND', 0, 59, false);
  const bySetPos = numbers('BYSETPOS', -366, 366, true);
  if (problem !== undefined) return fail(problem);
  if (count !== undefined && seen.has('COUNT') && !/^\+?\d+$/.test(seen.get('COUNT') as string))
    return fail('COUNT must be a positive integer');

  let untilMs: number | undefined;
  const untilText = seen.get('UNTIL');
  if (untilText !== undefined) {
    const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(untilText);
    if (m === null)
      return fail(
        `UNTIL must be a UTC date-time like 20261231T235959Z (RFC 5545: with a zoned DTSTART, UNTIL is in UTC); got ${untilText}`,
      );
    const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 59)
      return fail(`UNTIL is not a date-time between 1970 and 9999; got ${untilText}`);
    untilMs = daysFromCivil(y, mo, d) * DAY_MS + h * HOUR_MS + mi * MINUTE_MS + s * SECOND_MS;
    if (count !== undefined) return fail('COUNT and UNTIL must not both be given (RFC 5545)');
  }

  let byDay: RruleWeekday[] | undefined;
  const byDayText = seen.get('BYDAY');
  if (byDayText !== undefined) {
    const entries = new Map<string, RruleWeekday>();
    for (const item of byDayText.split(',')) {
      const m = /^([+-]?\d{1,2})?(SU|MO|TU|WE|TH|FR|SA)$/.exec(item);
      if (m === null)
        return fail(
          `BYDAY entries must be a weekday (SU..SA) with an optional ordinal like -1FR or 2MO; got '${item}'`,
        );
      const nth = m[1] === undefined ? 0 : Number(m[1]);
      if (m[1] !== undefined) {
        if (nth === 0) return fail(`BYDAY ordinal must not be 0; got '${item}'`);
        if (freq !== 'MONTHLY' && freq !== 'YEARLY')
          return fail(
            `BYDAY with an ordinal ('${item}') is only allowed with FREQ=MONTHLY or FREQ=YEARLY (RFC 5545)`,
          );
        const limit = freq === 'MONTHLY' || byMonth !== undefined ? 5 : 53;
        if (Math.abs(nth) > limit)
          return fail(`BYDAY ordinal must be between -${limit} and ${limit} here; got '${item}'`);
      }
      const weekday = RRULE_WEEKDAYS.indexOf(m[2] as (typeof RRULE_WEEKDAYS)[number]);
      entries.set(`${nth}${weekday}`, { weekday, nth });
    }
    byDay = [...entries.values()];
  }
  let wkst = 1;
  const wkstText = seen.get('WKST');
  if (wkstText !== undefined) {
    wkst = RRULE_WEEKDAYS.indexOf(wkstText as (typeof RRULE_WEEKDAYS)[number]);
    if (wkst < 0) return fail(`WKST must be one of ${RRULE_WEEKDAYS.join(', ')}; got ${wkstText}`);
  }
  if (freq === 'WEEKLY' && byMonthDay !== undefined)
    return fail('BYMONTHDAY must not be used with FREQ=WEEKLY (RFC 5545)');
  if (
    bySetPos !== undefined &&
    !['BYMONTH', 'BYMONTHDAY', 'BYDAY', 'BYHOUR', 'BYMINUTE', 'BYSECOND'].some((p) => seen.has(p))
  )
    return fail('BYSETPOS must be used with another BYxxx part (RFC 5545)');

  return {
    ok: true,
    parts: {
      freq,
      interval,
      wkst,
      ...(count !== undefined ? { count } : {}),
      ...(untilMs !== undefined ? { untilMs } : {}),
      ...(byMonth !== undefined ? { byMonth } : {}),
      ...(byMonthDay !== undefined ? { byMonthDay } : {}),
      ...(byDay !== undefined ? { byDay } : {}),
      ...(byHour !== undefined ? { byHour } : {}),
      ...(byMinute !== undefined ? { byMinute } : {}),
      ...(bySecond !== undefined ? { bySecond } : {}),
      ...(bySetPos !== undefined ? { bySetPos } : {}),
    },
  };
}

const KNOWN_PARTS = [
  'FREQ',
  'INTERVAL',
  'COUNT',
  'UNTIL',
  'BYMONTH',
  'BYMONTHDAY',
  'BYDAY',
  'BYHOUR',
  'BYMINUTE',
  'BYSECOND',
  'BYSETPOS',
  'WKST',
];

const LOCAL_WALL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

/**
 * A local wall time `YYYY-MM-DDTHH:MM[:SS]` (no offset: the zone gives it) as "wall ms" (the epoch ms of the
 * same fields read as UTC), or undefined when it is not one (years 1970–9999).
 */
export function parseLocalWallTime(text: string): number | undefined {
  const m = LOCAL_WALL.exec(text);
  if (m === null) return undefined;
  const [y, mo, d, h, mi] = m.slice(1, 6).map(Number) as [number, number, number, number, number];
  const s = m[6] === undefined ? 0 : Number(m[6]);
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 59)
    return undefined;
  return daysFromCivil(y, mo, d) * DAY_MS + h * HOUR_MS + mi * MINUTE_MS + s * SECOND_MS;
}

/** Wall ms as `YYYY-MM-DDTHH:MM:SS`, the form schedules store. */
export function formatLocalWallTime(wall: number): string {
  return new Date(wall).toISOString().slice(0, 19);
}

type DayScope = 'month' | 'year' | 'none';

/**
 * A rule bound to its DTSTART and EXDATEs: the ordered wall times it names. Build through `compileRrule`
 * (cached); all answers are pure functions of the rule.
 */
export class CompiledRrule {
  /** Whether the hour comes from the period (AUTO DST handling follows real time, as cron's `*` hour). */
  readonly followsRealTime: boolean;
  private readonly dtstart: number;
  private readonly base: number;
  private readonly byMonth: readonly number[] | undefined;
  private readonly byMonthDay: readonly number[] | undefined;
  private readonly byDay: readonly RruleWeekday[] | undefined;
  private readonly hours: readonly number[];
  private readonly minutes: readonly number[];
  private readonly seconds: readonly number[];
  /** Times of day (ms) for DAILY and coarser; within an hour for HOURLY; within a minute for MINUTELY. */
  private readonly timeset: readonly number[];
  private readonly scope: DayScope;
  private readonly wkOffset: number;
  private readonly exdates: ReadonlySet<number>;
  private countLimit: number | null | undefined;
  private cachedIndex = Number.NaN;
  private cachedList: readonly number[] = [];
  private readonly civil: CivilDate = { year: 0, month: 0, day: 0 };

  constructor(
    readonly parts: RruleParts,
    dtstartWall: number,
    exdateWalls: readonly number[] = [],
  ) {
    this.dtstart = dtstartWall;
    this.exdates = new Set(exdateWalls);
    const days = floor(dtstartWall / DAY_MS);
    const dt = civilFromDays(days, { year: 0, month: 0, day: 0 });
    const tod = dtstartWall - days * DAY_MS;
    const dtHour = floor(tod / HOUR_MS);
    const dtMinute = floor((tod % HOUR_MS) / MINUTE_MS);
    const dtSecond = floor((tod % MINUTE_MS) / SECOND_MS);
    const { freq } = parts;
    let { byMonth, byMonthDay, byDay } = parts;
    // Defaults from DTSTART when the rule names no day (RFC 5545 §3.3.10, as python-dateutil applies them).
    if (byMonthDay === undefined && byDay === undefined) {
      if (freq === 'YEARLY') {
        byMonth ??= [dt.month];
        byMonthDay = [dt.day];
      } else if (freq === 'MONTHLY') byMonthDay = [dt.day];
      else if (freq === 'WEEKLY') byDay = [{ weekday: weekdayOfDays(days), nth: 0 }];
    }
    this.byMonth = byMonth;
    this.byMonthDay = byMonthDay;
    this.byDay = byDay;
    this.scope =
      freq === 'MONTHLY' || (freq === 'YEARLY' && byMonth !== undefined)
        ? 'month'
        : freq === 'YEARLY'
          ? 'year'
          : 'none';
    this.hours = parts.byHour ?? [dtHour];
    this.minutes = parts.byMinute ?? [dtMinute];
    this.seconds = parts.bySecond ?? [dtSecond];
    const times: number[] = [];
    if (freq === 'HOURLY') {
      for (const m of this.minutes) for (const s of this.seconds) times.push(m * MINUTE_MS + s * SECOND_MS);
    } else if (freq === 'MINUTELY') {
      for (const s of this.seconds) times.push(s * SECOND_MS);
    } else if (freq !== 'SECONDLY') {
      for (const h of this.hours)
        for (const m of this.minutes)
          for (const s of this.seconds) times.push(h * HOUR_MS + m * MINUTE_MS + s * SECOND_MS);
    }
    this.timeset = times.sort((a, b) => a - b);
    this.followsRealTime =
      (freq === 'HOURLY' || freq === 'MINUTELY' || freq === 'SECONDLY') && parts.byHour === undefined;
    // Days since the epoch of a week start: weekdayOfDays(wkOffset) === wkst (1970-01-01 was a Thursday).
    this.wkOffset = (((parts.wkst - 4) % 7) + 7) % 7;
    this.base = this.indexOf(dtstartWall);
  }

  /** The first wall time the rule names at or after `low` (wall ms), not excluded, within COUNT; null past `maxWall`. */
  nextWallAtOrAfter(low: number, maxWall = INFINITY): number | null {
    const limit = this.countLimitWall();
    const bound = limit === null ? maxWall : min(maxWall, limit);
    let c = this.rawAtOrAfter(max(low, this.dtstart), bound);
    // Each excluded wall time is passed once, so this ends after at most exdates.size + 1 steps.
    while (c !== null && this.exdates.has(c)) c = this.rawAtOrAfter(c + 1, bound);
    return c;
  }

  /**
   * A lower bound on the time between two consecutive wall times (ms), for the minimum-interval rule: the
   * closest two times within a period, or across a period boundary.
   */
  minimumSpacingMs(): number {
    const { freq, interval } = this.parts;
    if (freq === 'SECONDLY') return interval * SECOND_MS;
    const unit = freq === 'MINUTELY' ? MINUTE_MS : freq === 'HOURLY' ? HOUR_MS : DAY_MS;
    // Coarser than DAILY, two days in a row can both be chosen: the day is the period that matters.
    const step = freq === 'MINUTELY' || freq === 'HOURLY' || freq === 'DAILY' ? interval * unit : unit;
    const t = this.timeset;
    let best = step - ((t[t.length - 1] as number) - (t[0] as number));
    for (let i = 1; i < t.length; i++) best = min(best, (t[i] as number) - (t[i - 1] as number));
    return best;
  }

  /** The wall time of the COUNT-th occurrence (null: no COUNT, or fewer occurrences than COUNT), worked out once. */
  private countLimitWall(): number | null {
    if (this.countLimit !== undefined) return this.countLimit;
    const count = this.parts.count;
    let limit: number | null = null;
    if (count !== undefined) {
      let c = this.rawAtOrAfter(this.dtstart, INFINITY);
      for (let i = 1; i < count && c !== null; i++) c = this.rawAtOrAfter(c + 1, INFINITY);
      // Fewer than COUNT before the search gives up: the rule ends where its wall times do.
      limit = c ?? INFINITY;
    }
    this.countLimit = limit;
    return limit;
  }

  /** The first wall time of the rule at or after `low` (≥ DTSTART), ignoring COUNT and EXDATE. */
  private rawAtOrAfter(low: number, maxWall: number): number | null {
    const { interval } = this.parts;
    let k = this.alignDown(this.indexOf(low));
    for (let visits = 0; visits < MAX_PERIOD_VISITS; visits++) {
      const start = this.periodStart(k);
      if (start > maxWall) return null;
      const skipTo = this.subDailySkip(start);
      if (skipTo !== undefined) {
        k = max(k + interval, this.alignUp(this.indexOf(skipTo)));
        continue;
      }
      for (const c of this.expand(k)) {
        if (c > maxWall) return null;
        if (c >= low) return c;
      }
      k += interval;
    }
    return null;
  }

  private alignDown(index: number): number {
    const { interval } = this.parts;
    return this.base + floor((index - this.base) / interval) * interval;
  }

  private alignUp(index: number): number {
    const { interval } = this.parts;
    return this.base + ceil((index - this.base) / interval) * interval;
  }

  /** The period (in FREQ's unit, counted from the epoch) that holds wall time `wall`. */
  private indexOf(wall: number): number {
    const days = floor(wall / DAY_MS);
    switch (this.parts.freq) {
      case 'YEARLY':
        return civilFromDays(days, this.civil).year;
      case 'MONTHLY': {
        const c = civilFromDays(days, this.civil);
        return c.year * 12 + c.month - 1;
      }
      case 'WEEKLY':
        return floor((days - this.wkOffset) / 7);
      case 'DAILY':
        return days;
      case 'HOURLY':
        return floor(wall / HOUR_MS);
      case 'MINUTELY':
        return floor(wall / MINUTE_MS);
      case 'SECONDLY':
        return floor(wall / SECOND_MS);
    }
  }

  /** The first wall time of period `k`. */
  private periodStart(k: number): number {
    switch (this.parts.freq) {
      case 'YEARLY':
        return daysFromCivil(k, 1, 1) * DAY_MS;
      case 'MONTHLY':
        return daysFromCivil(floor(k / 12), (k % 12) + 1, 1) * DAY_MS;
      case 'WEEKLY':
        return (k * 7 + this.wkOffset) * DAY_MS;
      case 'DAILY':
        return k * DAY_MS;
      case 'HOURLY':
        return k * HOUR_MS;
      case 'MINUTELY':
        return k * MINUTE_MS;
      case 'SECONDLY':
        return k * SECOND_MS;
    }
  }

  /**
   * For HOURLY, MINUTELY and SECONDLY: when the period's day (or hour, or minute) is ruled out, where the
   * next one starts, so the search jumps there instead of visiting every hour, minute or second of it.
   */
  private subDailySkip(start: number): number | undefined {
    const { freq, byHour, byMinute } = this.parts;
    if (freq !== 'HOURLY' && freq !== 'MINUTELY' && freq !== 'SECONDLY') return undefined;
    const days = floor(start / DAY_MS);
    if (!this.dayMatches(days)) return (days + 1) * DAY_MS;
    if (freq === 'HOURLY') return undefined;
    const hour = floor((start - days * DAY_MS) / HOUR_MS);
    if (byHour !== undefined && !byHour.includes(hour)) return (floor(start / HOUR_MS) + 1) * HOUR_MS;
    if (freq === 'MINUTELY') return undefined;
    const minute = floor((start % HOUR_MS) / MINUTE_MS);
    if (byMinute !== undefined && !byMinute.includes(minute))
      return (floor(start / MINUTE_MS) + 1) * MINUTE_MS;
    return undefined;
  }

  /** The wall times of period `k`, sorted, after BYSETPOS (including those before DTSTART: BYSETPOS counts them). */
  private expand(k: number): readonly number[] {
    if (k === this.cachedIndex) return this.cachedList;
    const out: number[] = [];
    const { freq } = this.parts;
    const addDay = (days: number) => {
      if (!this.dayMatches(days)) return;
      for (const t of this.timeset) out.push(days * DAY_MS + t);
    };
    switch (freq) {
      case 'YEARLY': {
        const months = this.byMonth ?? [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        for (const m of months) {
          const from = daysFromCivil(k, m, 1);
          const to = from + daysInMonth(k, m);
          for (let d = from; d < to; d++) addDay(d);
        }
        break;
      }
      case 'MONTHLY': {
        const year = floor(k / 12);
        const month = (k % 12) + 1;
        if (this.byMonth !== undefined && !this.byMonth.includes(month)) break;
        const from = daysFromCivil(year, month, 1);
        const to = from + daysInMonth(year, month);
        for (let d = from; d < to; d++) addDay(d);
        break;
      }
      case 'WEEKLY': {
        const from = k * 7 + this.wkOffset;
        for (let d = from; d < from + 7; d++) addDay(d);
        break;
      }
      case 'DAILY':
        addDay(k);
        break;
      case 'HOURLY': {
        const start = k * HOUR_MS;
        const hour = floor((start % DAY_MS) / HOUR_MS);
        if (this.parts.byHour !== undefined && !this.parts.byHour.includes(hour)) break;
        if (!this.dayMatches(floor(start / DAY_MS))) break;
        for (const t of this.timeset) out.push(start + t);
        break;
      }
      case 'MINUTELY': {
        const start = k * MINUTE_MS;
        if (!this.timeMatches(start, true, false)) break;
        for (const t of this.timeset) out.push(start + t);
        break;
      }
      case 'SECONDLY': {
        const start = k * SECOND_MS;
        if (!this.timeMatches(start, true, true)) break;
        out.push(start);
        break;
      }
    }
    out.sort((a, b) => a - b);
    const list = this.parts.bySetPos === undefined ? out : this.setPositions(out);
    this.cachedIndex = k;
    this.cachedList = list;
    return list;
  }

  private setPositions(all: readonly number[]): number[] {
    const picked = new Set<number>();
    for (const pos of this.parts.bySetPos as readonly number[]) {
      const c = pos > 0 ? all[pos - 1] : all[all.length + pos];
      if (c !== undefined) picked.add(c);
    }
    return [...picked].sort((a, b) => a - b);
  }

  /** Whether the hour (and minute, and second) of `wall` pass BYHOUR (BYMINUTE, BYSECOND), and its day the day parts. */
  private timeMatches(wall: number, minute: boolean, second: boolean): boolean {
    const { byHour, byMinute, bySecond } = this.parts;
    const days = floor(wall / DAY_MS);
    const tod = wall - days * DAY_MS;
    if (byHour !== undefined && !byHour.includes(floor(tod / HOUR_MS))) return false;
    if (minute && byMinute !== undefined && !byMinute.includes(floor((tod % HOUR_MS) / MINUTE_MS)))
      return false;
    if (second && bySecond !== undefined && !bySecond.includes(floor((tod % MINUTE_MS) / SECOND_MS)))
      return false;
    return this.dayMatches(days);
  }

  /** Whether day `days` passes BYMONTH, BYMONTHDAY and BYDAY (ordinals within the month or the year). */
  private dayMatches(days: number): boolean {
    const c = civilFromDays(days, this.civil);
    const { year, month, day } = c;
    if (this.byMonth !== undefined && !this.byMonth.includes(month)) return false;
    const monthLength = daysInMonth(year, month);
    if (this.byMonthDay !== undefined) {
      let hit = false;
      for (const v of this.byMonthDay) if (v === day || monthLength + 1 + v === day) hit = true;
      if (!hit) return false;
    }
    if (this.byDay !== undefined) {
      const weekday = weekdayOfDays(days);
      let hit = false;
      for (const e of this.byDay) {
        if (e.weekday !== weekday) continue;
        if (e.nth === 0 || this.scope === 'none') hit = true;
        else if (this.scope === 'month') {
          hit ||=
            e.nth > 0 ? floor((day - 1) / 7) + 1 === e.nth : floor((monthLength - day) / 7) + 1 === -e.nth;
        } else {
          const dayOfYear = days - daysFromCivil(year, 1, 1);
          const yearLength = isLeapYear(year) ? 366 : 365;
          hit ||=
            e.nth > 0
              ? floor(dayOfYear / 7) + 1 === e.nth
              : floor((yearLength - 1 - dayOfYear) / 7) + 1 === -e.nth;
        }
        if (hit) break;
      }
      if (!hit) return false;
    }
    return true;
  }
}

const compiled = new Map<string, CompiledRrule>();
const COMPILED_CACHE_LIMIT = 10_000;

/** The cached CompiledRrule of a validated rule, DTSTART and EXDATEs (local wall times); throws on bad input. */
export function compileRrule(rule: string, dtstart: string, exdates: readonly string[]): CompiledRrule {
  const key = `${rule}\u0000${dtstart}\u0000${exdates.join(',')}`;
  let found = compiled.get(key);
  if (found === undefined) {
    const parsed = parseRrule(rule);
    if (!parsed.ok) throw new Error(`invalid RRULE '${rule}': ${parsed.message}`);
    const start = parseLocalWallTime(dtstart);
    if (start === undefined) throw new Error(`invalid DTSTART '${dtstart}'`);
    const walls = exdates.map((e) => {
      const w = parseLocalWallTime(e);
      if (w === undefined) throw new Error(`invalid EXDATE '${e}'`);
      return w;
    });
    found = new CompiledRrule(parsed.parts, start, walls);
    // Rules come from stored jobs, so the set is bounded in practice; the limit only guards leaks.
    if (compiled.size >= COMPILED_CACHE_LIMIT) compiled.clear();
    compiled.set(key, found);
  }
  return found;
}

/** Resolves AUTO gap handling for a rule: skip when the hour follows real time, shift when it is named. */
export function rruleGapPolicy(rule: CompiledRrule, policy: DstGapPolicy): EffectiveGapPolicy {
  if (policy !== 'AUTO') return policy;
  return rule.followsRealTime ? 'SKIP' : 'SHIFT';
}

/** Resolves AUTO repeat handling for a rule: both copies when the hour follows real time, else the first. */
export function rruleRepeatPolicy(rule: CompiledRrule, policy: DstRepeatPolicy): EffectiveRepeatPolicy {
  if (policy !== 'AUTO') return policy;
  return rule.followsRealTime ? 'BOTH' : 'FIRST';
}

/** An occurrence: its instant and how far SHIFT moved its wall time past a gap (see occurrences.ts). */
export interface RrulePoint {
  readonly at: number;
  readonly shiftMs: number;
}

function pointBefore(a: RrulePoint, b: RrulePoint): boolean {
  return a.at < b.at || (a.at === b.at && a.shiftMs > b.shiftMs);
}

/** Most wall times one step looks at: near a transition a few more than one can map below the best found. */
const MAX_WALLS_PER_STEP = 100_000;

/**
 * The first occurrence strictly after `after` (instant, then nominal order) of the rule's wall times mapped
 * through `zone` under the policies, or null when there is none up to `until` (epoch ms).
 */
export function nextRrulePointAfter(
  rule: CompiledRrule,
  zone: ZoneRules,
  gap: EffectiveGapPolicy,
  repeat: EffectiveRepeatPolicy,
  after: RrulePoint,
  until: number,
): RrulePoint | null {
  const untilMs = rule.parts.untilMs === undefined ? until : min(until, rule.parts.untilMs);
  if (after.at >= untilMs) return null;
  // No wall time below this maps to an instant after `after.at` (wall = instant + an offset in force there).
  const lowWall = after.at + lowOffsetAfter(zone, after.at) + 1;
  // Offsets are within a day of UTC: no wall time past this maps to an instant at or before `untilMs`.
  const maxWall = untilMs + DAY_MS;
  let best: RrulePoint | null = null;
  let stopWall = maxWall;
  let wall = rule.nextWallAtOrAfter(lowWall - 1, stopWall);
  for (let steps = 0; wall !== null && steps < MAX_WALLS_PER_STEP; steps++) {
    for (const p of wallToPoints(zone, gap, repeat, wall)) {
      if (pointBefore(after, p) && (best === null || pointBefore(p, best))) {
        best = p;
        // A later wall time maps below `best` only through an offset larger than the one in force here.
        stopWall = min(stopWall, p.at + highOffsetAt(zone, p.at));
      }
    }
    wall = rule.nextWallAtOrAfter(wall + 1, stopWall);
  }
  return best !== null && best.at <= untilMs ? best : null;
}

/**
 * The smallest offset through which a wall time can give an instant after `t`: the offset in force, less
 * where a fall-back just ahead repeats wall times already passed (its second copy is read with the lower
 * offset) or a spring-forward just behind still shifts gap wall times (read with the offset before it).
 */
function lowOffsetAfter(zone: ZoneRules, t: number): number {
  const { offset, previous, next } = zone.segmentAt(t + 1);
  let o = offset;
  if (
    previous !== null &&
    previous.after > previous.before &&
    t + 1 < previous.at + (previous.after - previous.before)
  )
    o = min(o, previous.before);
  if (next !== null && next.after < next.before && next.at - t <= next.before - next.after)
    o = min(o, next.after);
  return o;
}

/**
 * The largest offset through which a later wall time can give an instant at or before `at`: the offset in
 * force, or, in the second copy of a fall-back's repeated hour, the higher offset of the first copy.
 */
function highOffsetAt(zone: ZoneRules, at: number): number {
  const { offset, previous } = zone.segmentAt(at);
  if (
    previous !== null &&
    previous.after < previous.before &&
    at - previous.at < previous.before - previous.after
  )
    return max(offset, previous.before);
  return offset;
}

/** The occurrences a wall time gives under the policies: none (SKIP in a gap), one, or two (BOTH in an overlap). */
export function wallToPoints(
  zone: ZoneRules,
  gap: EffectiveGapPolicy,
  repeat: EffectiveRepeatPolicy,
  wall: number,
): RrulePoint[] {
  const segment = zone.segmentAt(wall - zone.offsetAt(wall));
  const { previous, next } = segment;
  const offsets = new Set<number>([segment.offset]);
  for (const t of [previous, next]) {
    if (t !== null) {
      offsets.add(t.before);
      offsets.add(t.after);
    }
  }
  const instants: number[] = [];
  for (const o of offsets) if (zone.offsetAt(wall - o) === o) instants.push(wall - o);
  instants.sort((a, b) => a - b);
  if (instants.length === 0) {
    if (gap === 'SKIP') return [];
    for (const t of [previous, next]) {
      if (t !== null && t.after > t.before && wall >= t.at + t.before && wall < t.at + t.after)
        return [{ at: wall - t.before, shiftMs: t.after - t.before }];
    }
    return [];
  }
  const first = instants[0] as number;
  const last = instants[instants.length - 1] as number;
  if (first === last || repeat === 'FIRST') return [{ at: first, shiftMs: 0 }];
  if (repeat === 'LAST') return [{ at: last, shiftMs: 0 }];
  return instants.map((at) => ({ at, shiftMs: 0 }));
}
