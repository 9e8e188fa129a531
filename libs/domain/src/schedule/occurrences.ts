/**
 * When a schedule fires: the next occurrence after an instant, the first at or after one, and previews.
 * Pure: every instant comes in as a parameter. Bounds: no occurrence before `startAt` or after `endAt`
 * (both inclusive), and none once `firesSoFar` has reached `maxFires` (maxFires counts fires, not skips).
 */

import { compileCron } from './cron-expression';
import { effectiveGapPolicy, effectiveRepeatPolicy, nextCronInstantAfter } from './cron-fires';
import type { CronSchedule, IntervalSchedule, Schedule } from './schedule';
import { zoneRules } from './time-zone';

/** Upper bound on `previewFires` counts: previews are for humans. */
export const MAX_PREVIEW_FIRES = 1_000;

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

/** `nextFireAfter` on epoch milliseconds, for loops that should not allocate Dates. */
export function nextOccurrenceAfter(schedule: Schedule, after: number, firesSoFar = 0): number | null {
  switch (schedule.kind) {
    case 'once':
      return firesSoFar < 1 && schedule.at.getTime() > after ? schedule.at.getTime() : null;
    case 'interval':
      if (exhausted(schedule, firesSoFar)) return null;
      return beforeEnd(schedule, nextIntervalAfter(schedule, boundedAfter(schedule, after)));
    case 'cron':
      if (exhausted(schedule, firesSoFar)) return null;
      return beforeEnd(schedule, nextCronAfter(schedule, boundedAfter(schedule, after)));
  }
}

/** Interval occurrences are anchor + k·everyMs for k ≥ 0: computed, never accumulated, so they cannot drift. */
function nextIntervalAfter(schedule: IntervalSchedule, after: number): number {
  const anchor = schedule.anchor.getTime();
  if (after < anchor) return anchor;
  return anchor + (Math.floor((after - anchor) / schedule.everyMs) + 1) * schedule.everyMs;
}

function nextCronAfter(schedule: CronSchedule, after: number): number | null {
  const cron = compileCron(schedule.expression);
  return nextCronInstantAfter(
    cron,
    zoneRules(schedule.timeZone),
    effectiveGapPolicy(cron, schedule.dstGap),
    effectiveRepeatPolicy(cron, schedule.dstRepeat),
    after,
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
