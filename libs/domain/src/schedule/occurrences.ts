/**
 * When a schedule fires: the next occurrence after an instant, the first at or after one, and previews.
 * Pure: every instant comes in as a parameter. Bounds: no occurrence before `startAt` or after `endAt`
 * (both inclusive), and none once `firesSoFar` has reached `maxFires` (maxFires counts fires, not skips).
 *
 * Under dst_gap SHIFT two nominal wall times can fire at one instant (a gap's 02:45 moved onto the 03:45 that
 * exists): they are two occurrences, told apart by how far SHIFT moved each (`dstShiftMs`), in nominal order
 * (the moved one first). The Date-returning helpers that name only an instant answer its first occurrence.
 */

import { LATEST_INSTANT_MS } from '../instant';
import { compileCron } from './cron-expression';
import { cronShiftsAt, effectiveGapPolicy, effectiveRepeatPolicy, nextCronInstantAfter } from './cron-fires';
import { compileRrule, nextRrulePointAfter, rruleGapPolicy, rruleRepeatPolicy } from './rrule';
import type { CronSchedule, IntervalSchedule, RruleSchedule, Schedule } from './schedule';
import { zoneRules } from './time-zone';

/** Upper bound on `previewFires` counts: previews are for humans. */
export const MAX_PREVIEW_FIRES = 1_000;

/**
 * Bounds on one search for occurrences, for work done on a request's behalf. Every search ends at
 * the end of the instant range: a schedule has no occurrence after 9999-12-31T23:59:59.999Z.
 */
export interface OccurrenceSearch {
  /** No occurrence after this instant (epoch ms) is looked for: the search answers null past it. */
  readonly untilMs?: number;
  /** Asked as a cron search visits the zone's timeline; true stops it with SearchBudgetExceeded. */
  readonly outOfBudget?: () => boolean;
}

/**
 * One occurrence of a schedule: its instant (epoch ms) and how far dst_gap SHIFT moved its wall time past a
 * gap (0 when it did not). Occurrences are ordered by instant, then by nominal wall time: at one instant the
 * moved one (larger shift) comes first. `{ at: t, shiftMs: 0 }` is the last occurrence an instant t can hold,
 * so "after it" means "strictly after the instant t".
 */
export interface OccurrencePoint {
  readonly at: number;
  readonly shiftMs: number;
}

/** An occurrence as Dates: its nominal instant and how far SHIFT moved it past a DST gap (0: not moved). */
export interface Occurrence {
  readonly nominal: Date;
  readonly dstShiftMs: number;
}

/** Whether occurrence `a` comes before `b` (instant, then nominal wall time). */
export function occurrenceBefore(a: OccurrencePoint, b: OccurrencePoint): boolean {
  return a.at < b.at || (a.at === b.at && a.shiftMs > b.shiftMs);
}

/**
 * The first occurrence strictly after `after`, or null when the schedule is exhausted (one-shot already due,
 * past `endAt`, or `firesSoFar` ≥ `maxFires`). `firesSoFar` counts fires already made, including one at `after`.
 */
export function nextFireAfter(schedule: Schedule, after: Date, firesSoFar = 0): Date | null {
  const at = nextOccurrenceAfter(schedule, after.getTime(), firesSoFar);
  return at === null ? null : new Date(at);
}

/**
 * The first occurrence at or after `from`, honouring `startAt`/`endAt`/`maxFires`.
 * A one-shot returns its `at` even when that is before `from`: a past one-shot fires immediately.
 */
export function firstFireAtOrAfter(schedule: Schedule, from: Date, firesSoFar = 0): Date | null {
  return firstOccurrenceAtOrAfter(schedule, from, firesSoFar)?.nominal ?? null;
}

/** `firstFireAtOrAfter` with the occurrence's DST shift: the first of the occurrences at its instant. */
export function firstOccurrenceAtOrAfter(schedule: Schedule, from: Date, firesSoFar = 0): Occurrence | null {
  if (schedule.kind === 'once') return firesSoFar >= 1 ? null : { nominal: schedule.at, dstShiftMs: 0 };
  const p = nextOccurrencePointAfter(schedule, { at: from.getTime() - 1, shiftMs: 0 }, firesSoFar);
  return p === null ? null : { nominal: new Date(p.at), dstShiftMs: p.shiftMs };
}

/** The occurrence right after `after` (another one at the same instant, or the first of a later instant). */
export function nextOccurrenceAfterOccurrence(
  schedule: Schedule,
  after: Occurrence,
  firesSoFar = 0,
): Occurrence | null {
  const p = nextOccurrencePointAfter(
    schedule,
    { at: after.nominal.getTime(), shiftMs: after.dstShiftMs },
    firesSoFar,
  );
  return p === null ? null : { nominal: new Date(p.at), dstShiftMs: p.shiftMs };
}

/**
 * Up to `count` (at most MAX_PREVIEW_FIRES) upcoming occurrences, starting at or after `from`. Two occurrences
 * at one instant (SHIFT) are listed both, so the instant appears twice.
 */
export function previewFires(schedule: Schedule, from: Date, count: number, firesSoFar = 0): Date[] {
  return previewOccurrences(schedule, from, count, firesSoFar).map((o) => o.nominal);
}

/** `previewFires` with each occurrence's DST shift. */
export function previewOccurrences(
  schedule: Schedule,
  from: Date,
  count: number,
  firesSoFar = 0,
): Occurrence[] {
  const limit = Math.min(Math.max(0, Math.floor(count)), MAX_PREVIEW_FIRES);
  const fires: Occurrence[] = [];
  let next = limit > 0 ? firstOccurrenceAtOrAfter(schedule, from, firesSoFar) : null;
  while (next !== null && fires.length < limit) {
    fires.push(next);
    next = nextOccurrenceAfterOccurrence(schedule, next, firesSoFar + fires.length);
  }
  return fires;
}

/**
 * The occurrences of a schedule one after another from `from` (inclusive), resumable: a search cut
 * short by its budget (SearchBudgetExceeded) leaves the cursor where it was, and the next call goes
 * on from there (the zone years already worked out are cached, so it makes progress).
 */
export class OccurrenceCursor {
  private after: OccurrencePoint;
  private fires: number;

  constructor(
    private readonly schedule: Schedule,
    from: Date,
    firesSoFar = 0,
    private readonly untilMs = LATEST_INSTANT_MS,
  ) {
    let after = from.getTime() - 1;
    this.fires = firesSoFar;
    if (schedule.kind === 'once' && firesSoFar < 1) {
      // A one-shot's instant is its only occurrence, even when it is before `from` (it fires at once).
      after = Math.min(after, schedule.at.getTime() - 1);
    }
    this.after = { at: after, shiftMs: 0 };
  }

  /** The next occurrence, or null when there is none up to the horizon. */
  next(outOfBudget?: () => boolean): Occurrence | null {
    const p = nextOccurrencePointAfter(this.schedule, this.after, this.fires, {
      untilMs: this.untilMs,
      ...(outOfBudget ? { outOfBudget } : {}),
    });
    if (p === null) return null;
    this.after = p;
    this.fires++;
    return { nominal: new Date(p.at), dstShiftMs: p.shiftMs };
  }
}

/**
 * The first occurrence strictly after the occurrence `after` (see OccurrencePoint), or null when the
 * schedule is exhausted or has none up to the search's horizon.
 */
export function nextOccurrencePointAfter(
  schedule: Schedule,
  after: OccurrencePoint,
  firesSoFar = 0,
  search?: OccurrenceSearch,
): OccurrencePoint | null {
  if (schedule.kind === 'rrule') return nextRrulePoint(schedule, after, firesSoFar, search);
  if (schedule.kind === 'cron' && after.shiftMs > 0 && !exhausted(schedule, firesSoFar)) {
    // A wall time SHIFT moved may share its instant with one that exists: that one comes next.
    const later = cronShiftsOf(schedule, after.at).find((s) => s < after.shiftMs);
    if (later !== undefined && withinBounds(schedule, after.at)) return { at: after.at, shiftMs: later };
  }
  const at = nextOccurrenceAfter(schedule, after.at, firesSoFar, search);
  if (at === null) return null;
  return { at, shiftMs: schedule.kind === 'cron' ? (cronShiftsOf(schedule, at)[0] ?? 0) : 0 };
}

/** The next occurrence of an rrule schedule: the rule's own search, within the schedule's bounds. */
function nextRrulePoint(
  schedule: RruleSchedule,
  after: OccurrencePoint,
  firesSoFar: number,
  search: OccurrenceSearch | undefined,
): OccurrencePoint | null {
  if (exhausted(schedule, firesSoFar)) return null;
  const until = Math.min(
    search?.untilMs ?? LATEST_INSTANT_MS,
    LATEST_INSTANT_MS,
    schedule.endAt?.getTime() ?? Infinity,
  );
  const start = schedule.startAt?.getTime();
  // Strictly after `startAt − 1 ms` (the last occurrence that instant can hold) makes `startAt` eligible.
  const from = start !== undefined && after.at < start - 1 ? { at: start - 1, shiftMs: 0 } : after;
  const rule = compileRrule(schedule.rule, schedule.dtstart, schedule.exdates);
  return nextRrulePointAfter(
    rule,
    zoneRules(schedule.timeZone),
    rruleGapPolicy(rule, schedule.dstGap),
    rruleRepeatPolicy(rule, schedule.dstRepeat),
    from,
    until,
  );
}

/** The shifts of the nominal wall times of a cron schedule that fire at instant `at`, largest first. */
function cronShiftsOf(schedule: CronSchedule, at: number): number[] {
  const cron = compileCron(schedule.expression, schedule.hashSeed);
  const gap = effectiveGapPolicy(cron, schedule.dstGap);
  // Only SHIFT moves wall times onto others: the other policies fire each instant once, unmoved.
  if (gap !== 'SHIFT') return [0];
  return cronShiftsAt(
    cron,
    zoneRules(schedule.timeZone),
    gap,
    effectiveRepeatPolicy(cron, schedule.dstRepeat),
    at,
  );
}

function withinBounds(schedule: CronSchedule, at: number): boolean {
  return (
    (schedule.startAt === undefined || at >= schedule.startAt.getTime()) &&
    (schedule.endAt === undefined || at <= schedule.endAt.getTime())
  );
}

/** `nextFireAfter` on epoch milliseconds, for loops that should not allocate Dates. */
export function nextOccurrenceAfter(
  schedule: Schedule,
  after: number,
  firesSoFar = 0,
  search?: OccurrenceSearch,
): number | null {
  const until = Math.min(search?.untilMs ?? LATEST_INSTANT_MS, LATEST_INSTANT_MS);
  switch (schedule.kind) {
    case 'once': {
      const at = schedule.at.getTime();
      return firesSoFar < 1 && at > after && at <= until ? at : null;
    }
    case 'interval': {
      if (exhausted(schedule, firesSoFar)) return null;
      const at = beforeEnd(schedule, nextIntervalAfter(schedule, boundedAfter(schedule, after)));
      // Past the end of the instant range the schedule is over (never an unstorable instant).
      return at !== null && at <= until ? at : null;
    }
    case 'cron':
      if (exhausted(schedule, firesSoFar)) return null;
      return beforeEnd(schedule, nextCronAfter(schedule, boundedAfter(schedule, after), until, search));
    case 'rrule':
      return nextRrulePoint(schedule, { at: after, shiftMs: 0 }, firesSoFar, search)?.at ?? null;
  }
}

/** Interval occurrences are anchor + k·everyMs for k ≥ 0: computed, never accumulated, so they cannot drift. */
function nextIntervalAfter(schedule: IntervalSchedule, after: number): number {
  const anchor = schedule.anchor.getTime();
  if (after < anchor) return anchor;
  return anchor + (Math.floor((after - anchor) / schedule.everyMs) + 1) * schedule.everyMs;
}

function nextCronAfter(
  schedule: CronSchedule,
  after: number,
  until: number,
  search: OccurrenceSearch | undefined,
): number | null {
  const cron = compileCron(schedule.expression, schedule.hashSeed);
  return nextCronInstantAfter(
    cron,
    zoneRules(schedule.timeZone),
    effectiveGapPolicy(cron, schedule.dstGap),
    effectiveRepeatPolicy(cron, schedule.dstRepeat),
    after,
    until,
    search?.outOfBudget,
  );
}

/** Searching strictly after `startAt − 1 ms` makes `startAt` itself eligible. */
function boundedAfter(schedule: IntervalSchedule | CronSchedule, after: number): number {
  return schedule.startAt !== undefined ? Math.max(after, schedule.startAt.getTime() - 1) : after;
}

function exhausted(schedule: IntervalSchedule | CronSchedule | RruleSchedule, firesSoFar: number): boolean {
  return schedule.maxFires !== undefined && firesSoFar >= schedule.maxFires;
}

function beforeEnd(schedule: IntervalSchedule | CronSchedule, at: number | null): number | null {
  if (at === null || (schedule.endAt !== undefined && at > schedule.endAt.getTime())) return null;
  return at;
}
