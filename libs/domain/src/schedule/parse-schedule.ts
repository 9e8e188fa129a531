/**
 * Validation of a schedule's wire form (snake_case JSON from REST, gRPC JSON or Kafka commands) into a
 * `Schedule`. One pass reports every bad field, each named by its path (`schedule.time_zone`).
 */

import { INSTANT_RANGE, instantRangeProblem } from '../instant';
import type { FieldViolation } from '../validation';
import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS, daysFromCivil, daysInMonth } from './calendar';
import { parseCron, type ParsedCron } from './cron-expression';
import { firstFireAtOrAfter } from './occurrences';
import { compileRrule, formatLocalWallTime, parseLocalWallTime, parseRrule } from './rrule';
import type {
  CronSchedule,
  DstGapPolicy,
  DstRepeatPolicy,
  IntervalSchedule,
  RruleSchedule,
  Schedule,
  ScheduleBounds,
} from './schedule';
import { isKnownTimeZone } from './time-zone';

/** Limits and context for `parseSchedule`. */
export interface ScheduleParseOptions {
  /** Shortest allowed gap between occurrences (interval `every_ms`, densest cron spacing). */
  readonly minIntervalMs: number;
  /** The present: default interval anchor, and reference for "would never fire". */
  readonly now: Date;
  /** The job id that places the expression's `H` tokens (see CronSchedule.hashSeed). */
  readonly hashSeed?: string;
}

/** Outcome of `parseSchedule`. */
export type ScheduleParseResult =
  | { readonly ok: true; readonly schedule: Schedule }
  | { readonly ok: false; readonly violations: FieldViolation[] };

/** The wire form `parseSchedule` accepts (every field is checked, so this type is documentation). */
export type RawSchedule =
  | { kind: 'once'; at: string }
  | {
      kind: 'interval';
      every_ms: number;
      anchor?: string;
      start_at?: string;
      end_at?: string;
      max_fires?: number;
    }
  | {
      kind: 'cron';
      expression: string;
      time_zone?: string;
      dst_gap?: DstGapPolicy;
      dst_repeat?: DstRepeatPolicy;
      start_at?: string;
      end_at?: string;
      max_fires?: number;
    }
  | {
      kind: 'rrule';
      rule: string;
      dtstart: string;
      time_zone?: string;
      exdates?: string[];
      dst_gap?: DstGapPolicy;
      dst_repeat?: DstRepeatPolicy;
      start_at?: string;
      end_at?: string;
      max_fires?: number;
    };

export const SCHEDULE_KINDS = ['once', 'interval', 'cron', 'rrule'] as const;

/** Most EXDATEs one rrule schedule may list. */
export const MAX_RRULE_EXDATES = 1_000;
export const DST_GAP_POLICIES: readonly DstGapPolicy[] = ['AUTO', 'SHIFT', 'SKIP'];
export const DST_REPEAT_POLICIES: readonly DstRepeatPolicy[] = ['AUTO', 'FIRST', 'LAST', 'BOTH'];

/** Longest accepted cron expression: generous for lists, small enough to keep parsing trivially cheap. */
export const MAX_EXPRESSION_LENGTH = 512;

/** Longest accepted interval: keeps anchor + k·every_ms far inside the Date range. */
export const MAX_INTERVAL_MS = 100 * 366 * DAY_MS;

const KNOWN_FIELDS: Readonly<Record<(typeof SCHEDULE_KINDS)[number], readonly string[]>> = {
  once: ['kind', 'at'],
  interval: ['kind', 'every_ms', 'anchor', 'start_at', 'end_at', 'max_fires'],
  cron: ['kind', 'expression', 'time_zone', 'dst_gap', 'dst_repeat', 'start_at', 'end_at', 'max_fires'],
  rrule: [
    'kind',
    'rule',
    'dtstart',
    'time_zone',
    'exdates',
    'dst_gap',
    'dst_repeat',
    'start_at',
    'end_at',
    'max_fires',
  ],
};

const LOCAL_FORMAT =
  'a local wall time YYYY-MM-DDTHH:MM[:SS] without an offset (the zone is time_zone), e.g. 2026-01-30T17:00:00, in years 1970-9999';

const ISO_FORMAT = `an ISO-8601 timestamp with an explicit offset or Z, e.g. 2026-03-08T09:30:00Z, within ${INSTANT_RANGE}`;

/**
 * Validates a raw schedule. Cron: a seconds field is allowed as long as the densest spacing of the
 * expression (e.g. 1 s for `* * * * * *`) is not below `minIntervalMs`; the same rule applies to 5-field
 * expressions (60 s for `* * * * *`). Interval: `anchor` defaults to `start_at`, else `now`.
 */
export function parseSchedule(
  raw: unknown,
  options: ScheduleParseOptions,
  path = 'schedule',
): ScheduleParseResult {
  const violations: FieldViolation[] = [];
  const fail = (field: string, message: string): void => {
    violations.push({ field: field === '' ? path : `${path}.${field}`, message });
  };
  if (raw === undefined || raw === null) {
    fail('', 'is required');
    return { ok: false, violations };
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    fail('', 'must be an object');
    return { ok: false, violations };
  }
  const body = raw as Record<string, unknown>;
  const kind = body.kind;
  if (kind === undefined || kind === null) {
    fail('kind', `is required (one of ${SCHEDULE_KINDS.join(', ')})`);
    return { ok: false, violations };
  }
  if (typeof kind !== 'string' || !(SCHEDULE_KINDS as readonly string[]).includes(kind)) {
    fail('kind', `must be one of ${SCHEDULE_KINDS.join(', ')}; got ${JSON.stringify(kind)}`);
    return { ok: false, violations };
  }
  const known = KNOWN_FIELDS[kind as (typeof SCHEDULE_KINDS)[number]];
  for (const key of Object.keys(body)) {
    if (!known.includes(key))
      fail(key, `is not a known field of a ${kind} schedule (known: ${known.join(', ')})`);
  }

  const instant = (field: string, required: boolean): Date | undefined => {
    const value = body[field];
    if (value === undefined || value === null) {
      if (required) fail(field, `is required; ${ISO_FORMAT}`);
      return undefined;
    }
    const parsed = typeof value === 'string' ? parseIsoInstant(value) : undefined;
    if (parsed === undefined) {
      // An instant written with a six-digit year (+010000-…, as JavaScript writes one) is out of range.
      const extended = typeof value === 'string' && /^[+-]\d{6}-/.test(value) ? Date.parse(value) : NaN;
      if (Number.isFinite(extended)) fail(field, instantRangeProblem(new Date(extended))!);
      else fail(field, `must be ${ISO_FORMAT}; got ${JSON.stringify(value)}`);
      return undefined;
    }
    const outOfRange = instantRangeProblem(parsed);
    if (outOfRange !== undefined) {
      fail(field, outOfRange);
      return undefined;
    }
    return parsed;
  };

  if (kind === 'once') {
    const at = instant('at', true);
    if (violations.length > 0 || at === undefined) return { ok: false, violations };
    return { ok: true, schedule: { kind: 'once', at } };
  }

  const startAt = instant('start_at', false);
  const endAt = instant('end_at', false);
  if (startAt !== undefined && endAt !== undefined && endAt.getTime() <= startAt.getTime()) {
    fail('end_at', `must be after ${path}.start_at`);
  }
  let maxFires: number | undefined;
  const rawMaxFires = body.max_fires;
  if (rawMaxFires !== undefined && rawMaxFires !== null) {
    if (typeof rawMaxFires !== 'number' || !Number.isSafeInteger(rawMaxFires) || rawMaxFires < 1) {
      fail('max_fires', `must be a positive integer; got ${JSON.stringify(rawMaxFires)}`);
    } else maxFires = rawMaxFires;
  }
  const bounds: ScheduleBounds = {
    ...(startAt !== undefined ? { startAt } : {}),
    ...(endAt !== undefined ? { endAt } : {}),
    ...(maxFires !== undefined ? { maxFires } : {}),
  };

  let schedule: IntervalSchedule | CronSchedule | RruleSchedule | undefined;
  let cron: ParsedCron | undefined;
  if (kind === 'interval') {
    const everyMs = body.every_ms;
    let every: number | undefined;
    if (everyMs === undefined || everyMs === null)
      fail('every_ms', 'is required (milliseconds between occurrences)');
    else if (typeof everyMs !== 'number' || !Number.isSafeInteger(everyMs) || everyMs < 1) {
      fail('every_ms', `must be a positive integer number of milliseconds; got ${JSON.stringify(everyMs)}`);
    } else if (everyMs < options.minIntervalMs) {
      fail(
        'every_ms',
        `must be at least ${options.minIntervalMs} ms (the configured minimum interval); got ${everyMs}`,
      );
    } else if (everyMs > MAX_INTERVAL_MS) {
      fail('every_ms', `must be at most ${MAX_INTERVAL_MS} ms (100 years); got ${everyMs}`);
    } else every = everyMs;
    const anchor = instant('anchor', false) ?? startAt ?? options.now;
    if (violations.length === 0 && every !== undefined) {
      schedule = { kind: 'interval', everyMs: every, anchor, ...bounds };
    }
  } else if (kind === 'rrule') {
    const parsed = parseRruleFields(body, options, bounds, fail);
    // An unknown field or a bad bound was reported before: the schedule is refused with it.
    if (violations.length === 0) schedule = parsed;
  } else {
    const expression = body.expression;
    if (expression === undefined || expression === null)
      fail('expression', "is required, e.g. '0 9 * * MON-FRI'");
    else if (typeof expression !== 'string') fail('expression', 'must be a string');
    else if (expression.length > MAX_EXPRESSION_LENGTH)
      fail('expression', `must be at most ${MAX_EXPRESSION_LENGTH} characters`);
    else {
      const parsed = parseCron(expression, options.hashSeed);
      if (!parsed.ok) fail('expression', `${parsed.message} (in '${expression}')`);
      else {
        cron = parsed.cron;
        const spacing = cron.minimumSpacingMs();
        if (spacing < options.minIntervalMs) {
          fail(
            'expression',
            `fires as often as every ${formatDuration(spacing)}, more often than the minimum interval of ${formatDuration(options.minIntervalMs)}`,
          );
        }
      }
    }
    const timeZone = body.time_zone ?? 'UTC';
    if (typeof timeZone !== 'string')
      fail('time_zone', 'must be a string naming an IANA time zone, e.g. Europe/London');
    else if (!isKnownTimeZone(timeZone)) {
      fail('time_zone', `unknown IANA time zone '${timeZone}' (use a name like 'America/New_York' or 'UTC')`);
    }
    const dstGap = oneOf(body.dst_gap, DST_GAP_POLICIES, 'AUTO', 'dst_gap', fail);
    const dstRepeat = oneOf(body.dst_repeat, DST_REPEAT_POLICIES, 'AUTO', 'dst_repeat', fail);
    if (
      violations.length === 0 &&
      typeof expression === 'string' &&
      typeof timeZone === 'string' &&
      dstGap &&
      dstRepeat
    ) {
      schedule = {
        kind: 'cron',
        expression,
        timeZone,
        dstGap,
        dstRepeat,
        ...bounds,
        ...(options.hashSeed !== undefined && cron?.hashed ? { hashSeed: options.hashSeed } : {}),
      };
    }
  }
  if (schedule === undefined) return { ok: false, violations };

  // A schedule that can never fire is almost certainly a mistake (Feb 30, or a window already over).
  if (firstFireAtOrAfter(schedule, options.now) === null) {
    const unbounded: Schedule = { ...schedule, endAt: undefined, maxFires: undefined } as Schedule;
    const unstarted: Schedule = { ...unbounded, startAt: undefined } as Schedule;
    if (firstFireAtOrAfter(unbounded, options.now) !== null) {
      fail(
        'end_at',
        `is before the first occurrence at or after ${(startAt ?? options.now).toISOString()}, so it would never fire`,
      );
    } else if (startAt !== undefined && firstFireAtOrAfter(unstarted, options.now) !== null) {
      fail('start_at', `leaves no occurrence before the end of the instant range (${INSTANT_RANGE})`);
    } else if (schedule.kind === 'cron') {
      fail('expression', `never matches a calendar date (like February 30), so it would never fire`);
    } else if (schedule.kind === 'rrule') {
      fail(
        'rule',
        `names no wall time from dtstart ${schedule.dtstart} within a bounded look-ahead (a rule like BYMONTH=2;BYMONTHDAY=30, an UNTIL or COUNT already over), so it would never fire`,
      );
    } else {
      fail('', `has no occurrence within ${INSTANT_RANGE}`);
    }
    return { ok: false, violations };
  }
  return { ok: true, schedule };
}

/** The rrule-only fields: rule, dtstart, time_zone, exdates and the DST policies. */
function parseRruleFields(
  body: Record<string, unknown>,
  options: ScheduleParseOptions,
  bounds: ScheduleBounds,
  fail: (field: string, message: string) => void,
): RruleSchedule | undefined {
  let ok = true;
  const bad = (field: string, message: string) => {
    ok = false;
    fail(field, message);
  };
  const rule = body.rule;
  let normalized: string | undefined;
  if (rule === undefined || rule === null)
    bad('rule', "is required, e.g. 'FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0'");
  else if (typeof rule !== 'string') bad('rule', 'must be a string');
  else if (rule.length > MAX_EXPRESSION_LENGTH)
    bad('rule', `must be at most ${MAX_EXPRESSION_LENGTH} characters`);
  else {
    const parsed = parseRrule(rule);
    if (!parsed.ok) bad('rule', `${parsed.message} (in '${rule}')`);
    else
      normalized = rule
        .trim()
        .replace(/^RRULE:/i, '')
        .toUpperCase();
  }
  let dtstart: string | undefined;
  const rawStart = body.dtstart;
  if (rawStart === undefined || rawStart === null) bad('dtstart', `is required; ${LOCAL_FORMAT}`);
  else {
    const wall = typeof rawStart === 'string' ? parseLocalWallTime(rawStart) : undefined;
    if (wall === undefined) bad('dtstart', `must be ${LOCAL_FORMAT}; got ${JSON.stringify(rawStart)}`);
    else dtstart = formatLocalWallTime(wall);
  }
  const exdates: string[] = [];
  const rawExdates = body.exdates;
  if (rawExdates !== undefined && rawExdates !== null) {
    if (!Array.isArray(rawExdates)) bad('exdates', `must be an array of local wall times (${LOCAL_FORMAT})`);
    else if (rawExdates.length > MAX_RRULE_EXDATES)
      bad('exdates', `must list at most ${MAX_RRULE_EXDATES} wall times`);
    else
      rawExdates.forEach((e: unknown, i) => {
        const wall = typeof e === 'string' ? parseLocalWallTime(e) : undefined;
        if (wall === undefined) bad(`exdates[${i}]`, `must be ${LOCAL_FORMAT}; got ${JSON.stringify(e)}`);
        else exdates.push(formatLocalWallTime(wall));
      });
  }
  const timeZone = body.time_zone ?? 'UTC';
  if (typeof timeZone !== 'string')
    bad('time_zone', 'must be a string naming an IANA time zone, e.g. Europe/London');
  else if (!isKnownTimeZone(timeZone))
    bad('time_zone', `unknown IANA time zone '${timeZone}' (use a name like 'America/New_York' or 'UTC')`);
  const dstGap = oneOf(body.dst_gap, DST_GAP_POLICIES, 'AUTO', 'dst_gap', bad);
  const dstRepeat = oneOf(body.dst_repeat, DST_REPEAT_POLICIES, 'AUTO', 'dst_repeat', bad);
  if (
    !ok ||
    normalized === undefined ||
    dtstart === undefined ||
    typeof timeZone !== 'string' ||
    !dstGap ||
    !dstRepeat
  )
    return undefined;
  const uniqueExdates = [...new Set(exdates)].sort();
  const spacing = compileRrule(normalized, dtstart, uniqueExdates).minimumSpacingMs();
  if (spacing < options.minIntervalMs) {
    fail(
      'rule',
      `fires as often as every ${formatDuration(spacing)}, more often than the minimum interval of ${formatDuration(options.minIntervalMs)}`,
    );
    return undefined;
  }
  return {
    kind: 'rrule',
    rule: normalized,
    dtstart,
    timeZone,
    exdates: uniqueExdates,
    dstGap,
    dstRepeat,
    ...bounds,
  };
}

function oneOf<T extends string>(
  raw: unknown,
  allowed: readonly T[],
  fallback: T,
  field: string,
  fail: (field: string, message: string) => void,
): T | undefined {
  if (raw === undefined || raw === null) return fallback;
  if (typeof raw === 'string' && (allowed as readonly string[]).includes(raw)) return raw as T;
  fail(field, `must be one of ${allowed.join(', ')}; got ${JSON.stringify(raw)}`);
  return undefined;
}

function formatDuration(ms: number): string {
  if (ms % HOUR_MS === 0) return `${ms / HOUR_MS} h`;
  if (ms % MINUTE_MS === 0) return `${ms / MINUTE_MS} min`;
  if (ms % SECOND_MS === 0) return `${ms / SECOND_MS} s`;
  return `${ms} ms`;
}

const ISO_INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))$/i;

/**
 * Parses an RFC 3339 / ISO-8601 instant that carries an explicit offset or Z; undefined otherwise.
 * Stricter than `Date.parse`: rejects impossible dates (2026-02-30), hour 24 and local times without offset.
 */
export function parseIsoInstant(text: string): Date | undefined {
  const match = ISO_INSTANT.exec(text);
  if (match === null) return undefined;
  const [, y, mo, d, h, mi, s = '0', fraction = '', zulu, sign, offH = '0', offM = '0'] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  const offsetMinutes = zulu !== undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(offH) * 60 + Number(offM));
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || Number(offH) > 23 || Number(offM) > 59) return undefined;
  const millis = Number(fraction.padEnd(3, '0').slice(0, 3));
  const at =
    daysFromCivil(year, month, day) * DAY_MS +
    hour * HOUR_MS +
    minute * MINUTE_MS +
    second * SECOND_MS +
    millis -
    offsetMinutes * MINUTE_MS;
  return new Date(at);
}
