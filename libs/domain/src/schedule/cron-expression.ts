/**
 * Cron expressions: parsing and wall-clock matching (no time zones here; see cron-fires.ts).
 *
 * Grammar (case-insensitive), 5 fields `minute hour day-of-month month day-of-week`, or 6 with leading seconds:
 * - every field: `*`, `n`, `a-b`, `*\/s`, `a-b/s`, `a/s` (from a to the field's maximum), comma lists;
 * - month: JAN–DEC; day-of-week: 0–7 (0 and 7 are Sunday) or SUN–SAT, where the open-ended forms `*`, `*\/s`
 *   and `a/s` cover 0–6 (so `5/2` is Friday only, as in croner) and `7` is only a value or a range end;
 * - day-of-month: `L` (last day), `L-n` (n days before the last), `nW` (weekday nearest day n, never leaving the
 *   month; no match when the month has no day n), `LW` (last weekday), `?` (same as `*`);
 * - day-of-week: `d#n` (n-th weekday d of the month, n 1–5), `dL` or `d#L` (last weekday d), `?` (same as `*`);
 * - macros: @yearly @annually @monthly @weekly @daily @midnight @hourly;
 * - Jenkins-style hashed values, stable per job (the `hashSeed`, a job id): `H` (one value of the field,
 *   day-of-month 1–28 so every month has it), `H/s` (every s, from a hashed start below s), `H(a-b)` (one
 *   value in a–b), `H(a-b)/s` (every s in a–b, from a hashed start). `H 9 * * *` fires at a minute of 9
 *   o'clock that is the same for the job every day and differs between jobs, spreading herds of identical
 *   crons. Each H is replaced by plain numbers before the fields are parsed (`resolvedExpression`).
 * Day-of-month and day-of-week combine as in Vixie cron: when both are restricted (neither is exactly `*` or `?`)
 * a day matches if EITHER matches; otherwise the restricted one decides. Unlike Vixie, `*\/2` counts as restricted
 * (croner and cron-parser agree), so `0 0 *\/2 * MON` fires on odd days and on Mondays.
 */

import { DAY_MS, civilFromDays, daysFromCivil, daysInMonth, weekdayOfDays, type CivilDate } from './calendar';

// Module-level aliases: inside Jest's vm sandbox every global lookup (Math.*) is slow, so alias once.
const { floor, clz32 } = Math;

const MACROS: Readonly<Record<string, string>> = {
  '@YEARLY': '0 0 1 1 *',
  '@ANNUALLY': '0 0 1 1 *',
  '@MONTHLY': '0 0 1 * *',
  '@WEEKLY': '0 0 * * 0',
  '@DAILY': '0 0 * * *',
  '@MIDNIGHT': '0 0 * * *',
  '@HOURLY': '0 * * * *',
};

// prettier-ignore
const MONTH_NAMES: Readonly<Record<string, number>> = {
  JAN: 1, FEB: 2, MAR: 3, APR: 4, MAY: 5, JUN: 6, JUL: 7, AUG: 8, SEP: 9, OCT: 10, NOV: 11, DEC: 12,
};
const DAY_NAMES: Readonly<Record<string, number>> = {
  SUN: 0,
  MON: 1,
  TUE: 2,
  WED: 3,
  THU: 4,
  FRI: 5,
  SAT: 6,
};

interface FieldSpec {
  readonly label: string;
  readonly min: number;
  readonly max: number;
  /** Where `*`, `*\/s` and `a/s` stop: day-of-week accepts 7 for Sunday but its week runs 0–6 (as croner). */
  readonly openMax: number;
  readonly names?: Readonly<Record<string, number>>;
}

const SECOND: FieldSpec = { label: 'second', min: 0, max: 59, openMax: 59 };
const MINUTE: FieldSpec = { label: 'minute', min: 0, max: 59, openMax: 59 };
const HOUR: FieldSpec = { label: 'hour', min: 0, max: 23, openMax: 23 };
const DAY_OF_MONTH: FieldSpec = { label: 'day-of-month', min: 1, max: 31, openMax: 31 };
const MONTH: FieldSpec = { label: 'month', min: 1, max: 12, openMax: 12, names: MONTH_NAMES };
const DAY_OF_WEEK: FieldSpec = { label: 'day-of-week', min: 0, max: 7, openMax: 6, names: DAY_NAMES };

/** A cron expression that failed to parse; `message` says which field and why. */
class CronSyntaxError extends Error {}

/** Outcome of `parseCron`. */
export type CronParseResult =
  | { readonly ok: true; readonly cron: ParsedCron }
  | { readonly ok: false; readonly message: string };

/** The six fields of a cron expression after macro expansion, seconds first. */
export interface CronFields {
  readonly second: string;
  readonly minute: string;
  readonly hour: string;
  readonly dayOfMonth: string;
  readonly month: string;
  readonly dayOfWeek: string;
}

/**
 * Parses a cron expression (5 or 6 fields, or a macro); never throws. `hashSeed` (the job id) places
 * any `H` token; without one, H is placed as for the empty id (enough to check the syntax).
 */
export function parseCron(expression: string, hashSeed = ''): CronParseResult {
  try {
    return { ok: true, cron: new ParsedCron(expression, hashSeed) };
  } catch (error) {
    if (error instanceof CronSyntaxError) return { ok: false, message: error.message };
    throw error;
  }
}

const compiled = new Map<string, ParsedCron>();
const COMPILED_CACHE_LIMIT = 50_000;

/** Whether an expression uses the hashed `H` token, so its meaning depends on the job (hashSeed). */
export function usesHashToken(expression: string): boolean {
  return HASH_ITEM.test(expression);
}

/** An `H` item inside an expression (not the H of a name such as THU). */
const HASH_ITEM = /(?:^|[\s,])H(?=$|[\s,(/])/i;

/**
 * Parsed expression from a process-wide cache (hot path); throws on an invalid expression. An
 * expression with `H` is cached per seed: each job's H lands elsewhere.
 */
export function compileCron(expression: string, hashSeed = ''): ParsedCron {
  const key = usesHashToken(expression) ? `${hashSeed}\u0000${expression}` : expression;
  let cron = compiled.get(key);
  if (cron === undefined) {
    const result = parseCron(expression, hashSeed);
    if (!result.ok) throw new Error(`invalid cron expression '${expression}': ${result.message}`);
    // Expressions come from stored jobs, so the set is bounded in practice; the limit only guards leaks.
    if (compiled.size >= COMPILED_CACHE_LIMIT) compiled.clear();
    cron = result.cron;
    compiled.set(key, cron);
  }
  return cron;
}

/** A next-value table: next[v] = the smallest allowed value ≥ v, or -1; one extra slot for overflow. */
function nextTable(allowed: readonly boolean[], size: number): Int8Array {
  const next = new Int8Array(size + 1).fill(-1);
  let upcoming = -1;
  for (let v = size - 1; v >= 0; v--) {
    if (allowed[v] === true) upcoming = v;
    next[v] = upcoming;
  }
  return next;
}

function bit(day: number): number {
  return 1 << (day - 1);
}

const scratchDate: CivilDate = { year: 0, month: 0, day: 0 };

/** A validated cron expression, compiled for fast wall-clock matching. */
export class ParsedCron {
  /** The expression as given. */
  readonly source: string;
  /** Fields after macro expansion, seconds first (`0` when the expression had 5 fields). */
  readonly fields: CronFields;
  /** Whether the expression had an explicit seconds field. */
  readonly hasSeconds: boolean;
  /** The fields as written (after macro expansion), before `H` was replaced; seconds first. */
  readonly writtenFields: CronFields;
  /** Whether any field used the hashed `H` token. */
  readonly hashed: boolean;
  /**
   * Whether the hour field is `*` or `*\/n`: such schedules follow real time across DST changes
   * (AUTO policies skip the gap and fire in both copies of a repeated hour).
   */
  readonly hourFollowsRealTime: boolean;
  /** Whether day-of-month / day-of-week are restricted (not `*` or `?`); both restricted means OR. */
  readonly dayOfMonthRestricted: boolean;
  readonly dayOfWeekRestricted: boolean;

  private readonly nextSecond: Int8Array;
  private readonly nextMinute: Int8Array;
  private readonly nextHour: Int8Array;
  private readonly nextMonth: Int8Array;
  private readonly seconds: readonly number[];
  private readonly minutes: readonly number[];
  private readonly hours: readonly number[];
  private readonly domMask: number;
  private readonly domLast: boolean;
  private readonly domLastMinus: readonly number[];
  private readonly domNearestWeekday: readonly number[];
  private readonly domLastWeekday: boolean;
  private readonly dowMask: number;
  private readonly dowNth: readonly (readonly [weekday: number, nth: number])[];
  private readonly dowLastMask: number;
  private cachedMonthKey = -1;
  private cachedMonthMask = 0;
  private spacingMs: number | undefined;

  constructor(expression: string, hashSeed = '') {
    this.source = expression;
    let text = expression.trim().toUpperCase();
    if (text.startsWith('@')) {
      const expanded = MACROS[text];
      if (expanded === undefined) {
        throw new CronSyntaxError(
          `unknown macro '${expression.trim()}' (known: ${Object.keys(MACROS).join(' ').toLowerCase()})`,
        );
      }
      text = expanded;
    }
    const parts = text.length === 0 ? [] : text.split(/\s+/);
    if (parts.length !== 5 && parts.length !== 6) {
      throw new CronSyntaxError(
        `expected 5 fields (minute hour day-of-month month day-of-week) or 6 with leading seconds, got ${parts.length}`,
      );
    }
    this.hasSeconds = parts.length === 6;
    const six = (this.hasSeconds ? parts : ['0', ...parts]) as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const specs = [SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK];
    const written = six;
    this.hashed = written.some((f) => HASH_ITEM.test(f));
    const resolved = written.map((f, i) => resolveHashTokens(f, specs[i]!, hashSeed)) as typeof six;
    const [second, minute, hour, dayOfMonth, month, dayOfWeek] = resolved;
    this.writtenFields = {
      second: written[0],
      minute: written[1],
      hour: written[2],
      dayOfMonth: written[3],
      month: written[4],
      dayOfWeek: written[5],
    };
    this.fields = { second, minute, hour, dayOfMonth, month, dayOfWeek };

    const secondSet = parsePlainField(second, SECOND);
    const minuteSet = parsePlainField(minute, MINUTE);
    const hourSet = parsePlainField(hour, HOUR);
    const monthSet = parsePlainField(month, MONTH);
    this.nextSecond = nextTable(secondSet, 61);
    this.nextMinute = nextTable(minuteSet, 61);
    this.nextHour = nextTable(hourSet, 25);
    this.nextMonth = nextTable(monthSet, 14);
    this.seconds = valuesOf(secondSet);
    this.minutes = valuesOf(minuteSet);
    this.hours = valuesOf(hourSet);
    // `H/n` hours are a step like `*/n`: they follow real time across DST changes too.
    this.hourFollowsRealTime = hour.startsWith('*') || /^H\/\d+$/.test(written[2]);

    this.dayOfMonthRestricted = dayOfMonth !== '*' && dayOfMonth !== '?';
    let domMask = 0;
    let domLast = false;
    let domLastWeekday = false;
    const domLastMinus: number[] = [];
    const domNearestWeekday: number[] = [];
    if (this.dayOfMonthRestricted) {
      for (const item of splitList(dayOfMonth, DAY_OF_MONTH)) {
        let match: RegExpExecArray | null;
        if (item === 'L') domLast = true;
        else if (item === 'LW') domLastWeekday = true;
        else if ((match = /^L-(\d+)$/.exec(item)) !== null) {
          const back = Number(match[1]);
          if (back > 30)
            throw new CronSyntaxError(
              `day-of-month field: 'L-${back}' reaches before the 1st (at most L-30)`,
            );
          domLastMinus.push(back);
        } else if ((match = /^(\d+)W$/.exec(item)) !== null) {
          domNearestWeekday.push(checkedValue(Number(match[1]), DAY_OF_MONTH, item));
        } else {
          const set = new Array<boolean>(32).fill(false);
          addItem(item, DAY_OF_MONTH, set);
          for (let d = 1; d <= 31; d++) if (set[d] === true) domMask |= bit(d);
        }
      }
    }
    this.domMask = domMask;
    this.domLast = domLast;
    this.domLastWeekday = domLastWeekday;
    this.domLastMinus = domLastMinus;
    this.domNearestWeekday = domNearestWeekday;

    this.dayOfWeekRestricted = dayOfWeek !== '*' && dayOfWeek !== '?';
    let dowMask = 0;
    let dowLastMask = 0;
    const dowNth: (readonly [number, number])[] = [];
    if (this.dayOfWeekRestricted) {
      for (const item of splitList(dayOfWeek, DAY_OF_WEEK)) {
        let match: RegExpExecArray | null;
        if (item === 'L') {
          throw new CronSyntaxError(
            `day-of-week field: 'L' needs a weekday, e.g. '5L' or 'FRIL' for the last Friday`,
          );
        } else if (
          (match = /^([A-Z0-9]+)#L$/.exec(item)) !== null ||
          (match = /^([A-Z]{3}|\d+)L$/.exec(item)) !== null
        ) {
          dowLastMask |= 1 << parseValue(match[1] as string, DAY_OF_WEEK) % 7;
        } else if ((match = /^([A-Z0-9]+)#(\d+)$/.exec(item)) !== null) {
          const nth = Number(match[2]);
          if (nth < 1 || nth > 5) {
            throw new CronSyntaxError(
              `day-of-week field: '${item}' asks for occurrence ${nth}; a month has occurrences 1-5`,
            );
          }
          dowNth.push([parseValue(match[1] as string, DAY_OF_WEEK) % 7, nth]);
        } else {
          const set = new Array<boolean>(8).fill(false);
          addItem(item, DAY_OF_WEEK, set);
          for (let d = 0; d <= 7; d++) if (set[d] === true) dowMask |= 1 << d % 7;
        }
      }
    }
    this.dowMask = dowMask;
    this.dowLastMask = dowLastMask;
    this.dowNth = dowNth;
  }

  /** The expression with every `H` replaced by the values it stands for (5 fields unless it had seconds). */
  get resolvedExpression(): string {
    const f = this.fields;
    const five = `${f.minute} ${f.hour} ${f.dayOfMonth} ${f.month} ${f.dayOfWeek}`;
    return this.hasSeconds ? `${f.second} ${five}` : five;
  }

  /** The first wall-clock time (ms, local time read as UTC) strictly after `wall` that matches; null if none within 400 years. */
  nextWallTimeAfter(wall: number): number | null {
    const first = floor(wall / 1000) * 1000 + 1000;
    const days = floor(first / DAY_MS);
    const secondOfDay = (first - days * DAY_MS) / 1000;
    let hour = floor(secondOfDay / 3600);
    let minute = floor((secondOfDay % 3600) / 60);
    let second = secondOfDay % 60;
    civilFromDays(days, scratchDate);
    let year = scratchDate.year;
    let month = scratchDate.month;
    let day = scratchDate.day;
    // 400 years is a full Gregorian cycle: nothing by then means never.
    const lastYear = Math.min(year + 400, 9999);
    for (;;) {
      if (year > lastYear) return null;
      const m = this.nextMonth[month] as number;
      if (m < 0) {
        year++;
        month = 1;
        day = 1;
        hour = minute = second = 0;
        continue;
      }
      if (m !== month) {
        month = m;
        day = 1;
        hour = minute = second = 0;
      }
      const remaining = day > 31 ? 0 : this.daysOfMonth(year, month) & ~(bit(day) - 1);
      if (remaining === 0) {
        month++;
        day = 1;
        hour = minute = second = 0;
        continue;
      }
      const d = 32 - clz32(remaining & -remaining);
      if (d !== day) {
        day = d;
        hour = minute = second = 0;
      }
      const h = this.nextHour[hour] as number;
      if (h < 0) {
        day++;
        hour = minute = second = 0;
        continue;
      }
      if (h !== hour) {
        hour = h;
        minute = second = 0;
      }
      const mi = this.nextMinute[minute] as number;
      if (mi < 0) {
        hour++;
        minute = second = 0;
        continue;
      }
      if (mi !== minute) {
        minute = mi;
        second = 0;
      }
      const s = this.nextSecond[second] as number;
      if (s < 0) {
        minute++;
        second = 0;
        continue;
      }
      return daysFromCivil(year, month, day) * DAY_MS + (hour * 3600 + minute * 60 + s) * 1000;
    }
  }

  /** Whether the civil date matches the day fields (and month). */
  matchesDate(year: number, month: number, day: number): boolean {
    return this.nextMonth[month] === month && (this.daysOfMonth(year, month) & bit(day)) !== 0;
  }

  /**
   * Smallest gap between consecutive wall-clock matches, from the time-of-day fields only (days treated as
   * consecutive, DST ignored): what `minIntervalMs` and herd windows are checked against.
   */
  minimumSpacingMs(): number {
    if (this.spacingMs === undefined) {
      let smallest = Number.POSITIVE_INFINITY;
      let previous = -1;
      let first = -1;
      outer: for (const h of this.hours) {
        for (const m of this.minutes) {
          for (const s of this.seconds) {
            const at = h * 3600 + m * 60 + s;
            if (previous < 0) first = at;
            else if (at - previous < smallest) {
              smallest = at - previous;
              if (smallest === 1) break outer;
            }
            previous = at;
          }
        }
      }
      smallest = Math.min(smallest, 86_400 - previous + first);
      this.spacingMs = smallest * 1000;
    }
    return this.spacingMs;
  }

  /** Bit d-1 set when day d of the month matches; one-entry cache since searches stay in a month. */
  private daysOfMonth(year: number, month: number): number {
    const key = year * 16 + month;
    if (key === this.cachedMonthKey) return this.cachedMonthMask;
    const mask = this.computeDaysOfMonth(year, month);
    this.cachedMonthKey = key;
    this.cachedMonthMask = mask;
    return mask;
  }

  private computeDaysOfMonth(year: number, month: number): number {
    const length = daysInMonth(year, month);
    const all = length === 31 ? 0x7fffffff : bit(length + 1) - 1;
    const firstWeekday = weekdayOfDays(daysFromCivil(year, month, 1));
    const weekdayOf = (day: number): number => (firstWeekday + day - 1) % 7;

    let byMonthDay = all;
    if (this.dayOfMonthRestricted) {
      byMonthDay = this.domMask & all;
      if (this.domLast) byMonthDay |= bit(length);
      for (const back of this.domLastMinus) if (length - back >= 1) byMonthDay |= bit(length - back);
      for (const target of this.domNearestWeekday) {
        if (target > length) continue;
        const weekday = weekdayOf(target);
        let day = target;
        if (weekday === 6) day = target === 1 ? 3 : target - 1;
        else if (weekday === 0) day = target === length ? target - 2 : target + 1;
        byMonthDay |= bit(day);
      }
      if (this.domLastWeekday) {
        const weekday = weekdayOf(length);
        byMonthDay |= bit(weekday === 6 ? length - 1 : weekday === 0 ? length - 2 : length);
      }
    }

    let byWeekDay = all;
    if (this.dayOfWeekRestricted) {
      byWeekDay = 0;
      for (let weekday = 0; weekday < 7; weekday++) {
        const firstDay = 1 + ((weekday - firstWeekday + 7) % 7);
        if ((this.dowMask & (1 << weekday)) !== 0) {
          for (let day = firstDay; day <= length; day += 7) byWeekDay |= bit(day);
        }
        if ((this.dowLastMask & (1 << weekday)) !== 0) {
          byWeekDay |= bit(firstDay + 7 * floor((length - firstDay) / 7));
        }
      }
      for (const [weekday, nth] of this.dowNth) {
        const day = 1 + ((weekday - firstWeekday + 7) % 7) + 7 * (nth - 1);
        if (day <= length) byWeekDay |= bit(day);
      }
    }

    return this.dayOfMonthRestricted && this.dayOfWeekRestricted
      ? byMonthDay | byWeekDay
      : byMonthDay & byWeekDay;
  }
}

function valuesOf(set: readonly boolean[]): number[] {
  const values: number[] = [];
  set.forEach((allowed, value) => {
    if (allowed) values.push(value);
  });
  return values;
}

function splitList(field: string, spec: FieldSpec): string[] {
  const items = field.split(',');
  if (items.some((item) => item.length === 0)) {
    throw new CronSyntaxError(`${spec.label} field: '${field}' has an empty list item`);
  }
  if (field.includes('?')) {
    throw new CronSyntaxError(`${spec.label} field: '?' must stand alone (it means "any")`);
  }
  return items;
}

/** Second, minute, hour and month: only numbers/names, ranges, steps and lists. */
function parsePlainField(field: string, spec: FieldSpec): boolean[] {
  if (field === '?')
    throw new CronSyntaxError(`${spec.label} field: '?' is only allowed in day-of-month and day-of-week`);
  const set = new Array<boolean>(spec.max + 1).fill(false);
  for (const item of splitList(field, spec)) addItem(item, spec, set);
  return set;
}

function addItem(item: string, spec: FieldSpec, set: boolean[]): void {
  const match = /^(\*|[A-Z0-9]+(?:-[A-Z0-9]+)?)(?:\/(\d+))?$/.exec(item);
  if (match === null) throw new CronSyntaxError(`${spec.label} field: '${item}' is not valid`);
  const [, range = '', stepText] = match;
  let from = spec.min;
  let to = spec.openMax;
  if (range !== '*') {
    const dash = range.indexOf('-');
    if (dash < 0) {
      from = parseValue(range, spec);
      // `a/s` runs from a to the field's end (Quartz, croner); a bare `a` is just a.
      if (stepText === undefined) to = from;
      else if (from > spec.openMax) {
        throw new CronSyntaxError(
          `${spec.label} field: '${item}' starts after ${spec.openMax}, the end of the field (use 0 for Sunday)`,
        );
      }
    } else {
      from = parseValue(range.slice(0, dash), spec);
      to = parseValue(range.slice(dash + 1), spec);
      if (from > to) {
        throw new CronSyntaxError(
          `${spec.label} field: range '${range}' runs backwards (write it as a list of two ranges)`,
        );
      }
    }
  }
  let step = 1;
  if (stepText !== undefined) {
    step = Number(stepText);
    const span = spec.openMax - spec.min + 1;
    if (step < 1 || step > span) {
      throw new CronSyntaxError(
        `${spec.label} field: step ${stepText} in '${item}' must be between 1 and ${span}`,
      );
    }
  }
  for (let v = from; v <= to; v += step) set[v] = true;
}

function parseValue(token: string, spec: FieldSpec): number {
  let value: number | undefined;
  if (/^\d+$/.test(token)) value = Number(token);
  else value = spec.names?.[token];
  if (value === undefined) {
    const hint = spec.names ? ` or a name like ${Object.keys(spec.names)[1] ?? ''}` : '';
    throw new CronSyntaxError(`${spec.label} field: '${token}' is not a number${hint}`);
  }
  return checkedValue(value, spec, token);
}

function checkedValue(value: number, spec: FieldSpec, token: string): number {
  if (value < spec.min || value > spec.max) {
    throw new CronSyntaxError(`${spec.label} field: '${token}' is out of range ${spec.min}-${spec.max}`);
  }
  return value;
}

/** Highest day-of-month a bare `H` picks: every month has days 1–28 (as Jenkins). */
const HASHED_DAY_OF_MONTH_MAX = 28;

/**
 * Replaces the `H` items of one field by plain cron items, from a hash of (seed, field): `H` → a value,
 * `H/s` → `h-max/s` with h < s, `H(a-b)` → a value in a–b, `H(a-b)/s` → `a+h-b/s`. Other items are kept.
 */
function resolveHashTokens(field: string, spec: FieldSpec, seed: string): string {
  if (!HASH_ITEM.test(field)) return field;
  return field
    .split(',')
    .map((item) => {
      if (!/^H(?=$|[(/])/.test(item)) return item;
      const match = /^H(?:\((\d+)-(\d+)\))?(?:\/(\d+))?$/.exec(item);
      if (match === null) {
        throw new CronSyntaxError(
          `${spec.label} field: '${item}' is not a valid H form (H, H/s, H(a-b), H(a-b)/s)`,
        );
      }
      const [, fromText, toText, stepText] = match;
      const defaultMax = spec === DAY_OF_MONTH ? HASHED_DAY_OF_MONTH_MAX : spec.openMax;
      const from = fromText === undefined ? spec.min : checkedValue(Number(fromText), spec, fromText);
      const to = toText === undefined ? defaultMax : checkedValue(Number(toText), spec, toText);
      if (from > to) throw new CronSyntaxError(`${spec.label} field: range in '${item}' runs backwards`);
      const hash = hashOf(seed, spec.label);
      if (stepText === undefined) return String(from + (hash % (to - from + 1)));
      const step = Number(stepText);
      const span = to - from + 1;
      if (step < 1 || step > span)
        throw new CronSyntaxError(
          `${spec.label} field: step ${stepText} in '${item}' must be between 1 and ${span}`,
        );
      return `${from + (hash % step)}-${to}/${step}`;
    })
    .join(',');
}

/** FNV-1a of `${seed}|${label}` with murmur3's finalizer: a job's H values, stable across processes. */
function hashOf(seed: string, label: string): number {
  let hash = 0x811c9dc5;
  const key = `${seed}|${label}`;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
