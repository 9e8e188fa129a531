/**
 * When a schedule fires: the next occurrence after an instant, the first at or after one, and previews.
 * Pure: every instant comes in as a parameter. Bounds: no occurrence before `startAt` or after `endAt`
 * (both inclusive), and none once `firesSoFar` has reached `maxFires` (maxFires counts fires, not skips).
 */

import { LATEST_INSTANT_MS } from '../instant';
import { compileCron } from './cron-expression';
import { effectiveGapPolicy, effectiveRepeatPolicy, nextCronInstantAfter } from './cron-fires';
import type { CronSchedule, IntervalSchedule, Schedule } from './schedule';
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
  if (schedule.kind === 'once') return firesSoFar >= 1 ? null : schedule.at;
  const at = nextOccurrenceAfter(schedule, from.getTime() - 1, firesSoFar);
  return at === null ? null : new Date(at);
}

/** Up to `count` (at most MAX_PREVIEW_FIRES) upcoming occurrences, starting at or after `from`. */
export function previewFires(schedule: Schedule, from: Date, count: number, firesSoFar = 0): Date[] {
  const limit = Math.min(Math.max(0, Math.floor(count)), MAX_PREVIEW_FIRES);
  const fires: Date[] = [];
  let next = limit > 0 ? firstFireAtOrAfter(schedule, from, firesSoFar) : null;
  while (next !== null && fires.length < limit) {
    fires.push(next);
    next = nextFireAfter(schedule, next, firesSoFar + fires.length);
  }
  return fires;
}

/**
 * The occurrences of a schedule one after another from `from` (inclusive), resumable: a search cut
 * short by its budget (SearchBudgetExceeded) leaves the cursor where it was, and the next call goes
 * on from there (the zone years already worked out are cached, so it makes progress).
 */
export class OccurrenceCursor {
  private after: number;
  private fires: number;

  constructor(
    private readonly schedule: Schedule,
    from: Date,
    firesSoFar = 0,
    private readonly untilMs = LATEST_INSTANT_MS,
  ) {
    this.after = from.getTime() - 1;
    this.fires = firesSoFar;
    if (schedule.kind === 'once' && firesSoFar < 1) {
      // A one-shot's instant is its only occurrence, even when it is before `from` (it fires at once).
      this.after = Math.min(this.after, schedule.at.getTime() - 1);
    }
  }

  /** The next occurrence, or null when there is none up to the horizon. */
  next(outOfBudget?: () => boolean): Date | null {
    const at = nextOccurrenceAfter(this.schedule, this.after, this.fires, {
      untilMs: this.untilMs,
      ...(outOfBudget ? { outOfBudget } : {}),
    });
    if (at === null) return null;
    this.after = at;
    this.fires++;
    return new Date(at);
  }
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
  const cron = compileCron(schedule.expression);
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

function exhausted(schedule: IntervalSchedule | CronSchedule, firesSoFar: number): boolean {
  return schedule.maxFires !== undefined && firesSoFar >= schedule.maxFires;
}

function beforeEnd(schedule: IntervalSchedule | CronSchedule, at: number | null): number | null {
  if (at === null || (schedule.endAt !== undefined && at > schedule.endAt.getTime())) return null;
  return at;
}
