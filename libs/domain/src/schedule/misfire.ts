/**
 * Misfire planning: what to do when a job's due occurrence (`nominal`, its next_run_at) is claimed at
 * database time `now`, possibly long after it was due (scheduler down, backlog).
 *
 * The due occurrences are `nominal` and every later occurrence up to `now` (inclusive). Each is:
 * - on time when nominal ≥ now − lateToleranceMs: fires normally, whatever the policy (a fire that is merely a
 *   tick late is not a misfire);
 * - outside the catch-up window when older than now − catchUpWindowMs: skipped ('OUTSIDE_CATCH_UP_WINDOW'),
 *   whatever the policy;
 * - otherwise missed, and the policy decides:
 *   FIRE_ALL  fires each missed occurrence, oldest first, up to maxCatchUp (and the enumeration limit);
 *             the rest are 'CATCH_UP_LIMIT'.
 *   FIRE_ONCE fires once for all due occurrences (missed and on-time): the fire carries the LATEST due nominal
 *             and says how many it stands for; the others are 'COALESCED'.
 *   SKIP      fires none of the missed ones ('MISFIRE_SKIP'); on-time ones still fire.
 * `maxFires` counts fires, not skipped occurrences. The next run is the first occurrence after `now`.
 *
 * Work is bounded: interval ranges are counted arithmetically (a day of per-second occurrences costs O(1)); cron
 * and one-shot ranges are enumerated up to `enumerationLimit` occurrences, beyond which the count is reported
 * as a lower bound (`countIsLowerBound`) and the range's last occurrence is found by bisection (~40 steps).
 */

import type { MisfirePolicy } from '../policies';
import { nextOccurrenceAfter } from './occurrences';
import type { IntervalSchedule, Schedule } from './schedule';

/** Why occurrences did not get a fire of their own. */
export type OccurrenceSkipReason =
  | 'MISFIRE_SKIP'
  | 'COALESCED'
  | 'OUTSIDE_CATCH_UP_WINDOW'
  | 'CATCH_UP_LIMIT';

/** Consecutive occurrences that did not fire, for one reason. */
export interface SkippedOccurrences {
  readonly reason: OccurrenceSkipReason;
  readonly firstNominal: Date;
  readonly lastNominal: Date;
  readonly count: number;
  /** True when counting stopped at the enumeration limit: there were at least `count`. */
  readonly countIsLowerBound: boolean;
}

/** One fire to publish now. */
export interface PlannedFire {
  readonly nominal: Date;
  /** Whether this fire catches up missed occurrences (rather than being on time). */
  readonly late: boolean;
  /** FIRE_ONCE: the due occurrences this single fire stands for, itself included. */
  readonly coalesced?: {
    readonly count: number;
    readonly countIsLowerBound: boolean;
    readonly firstNominal: Date;
    readonly lastNominal: Date;
  };
}

/** What to do with a claimed job now. */
export interface MisfirePlan {
  /** In nominal order. */
  readonly fires: readonly PlannedFire[];
  /** In nominal order. */
  readonly skipped: readonly SkippedOccurrences[];
  /** The first occurrence after `now`, or null when the schedule is exhausted. */
  readonly nextRunAt: Date | null;
  /** Fires made so far, including this plan's. */
  readonly firesSoFar: number;
}

/** A job's misfire policy plus the scheduler's tolerances. */
export interface MisfireRules {
  readonly misfire: MisfirePolicy;
  /** Missed occurrences older than now − catchUpWindowMs are skipped whatever the policy; null/undefined = no window. */
  readonly catchUpWindowMs?: number | null;
  /** FIRE_ALL: most missed occurrences fired in one plan. */
  readonly maxCatchUp: number;
  /** Lateness that is not a misfire (tick and claim latency). */
  readonly lateToleranceMs: number;
  /** Most occurrences enumerated per range for cron/one-shot schedules; default DEFAULT_ENUMERATION_LIMIT. */
  readonly enumerationLimit?: number;
}

/** Default cap on enumerated occurrences per range: ~10 ms of work at worst. */
export const DEFAULT_ENUMERATION_LIMIT = 10_000;

interface RangeSummary {
  readonly first: number;
  readonly last: number;
  readonly count: number;
  readonly countIsLowerBound: boolean;
}

/** Plans the fires, skips and next run of a job whose occurrence `nominal` is claimed at `now`. */
export function planMisfire(
  schedule: Schedule,
  nominal: Date,
  now: Date,
  firesSoFar: number,
  rules: MisfireRules,
): MisfirePlan {
  const nominalMs = nominal.getTime();
  const nowMs = now.getTime();
  const maxFires = schedule.kind === 'once' ? 1 : schedule.maxFires;
  let budget = maxFires === undefined ? Number.POSITIVE_INFINITY : maxFires - firesSoFar;
  if (budget <= 0) return { fires: [], skipped: [], nextRunAt: null, firesSoFar };
  if (nominalMs > nowMs) return { fires: [], skipped: [], nextRunAt: nominal, firesSoFar };

  const occurrences = new Occurrences(
    schedule,
    nominalMs,
    rules.enumerationLimit ?? DEFAULT_ENUMERATION_LIMIT,
  );
  const lateEdge = nowMs - Math.max(0, rules.lateToleranceMs);
  const windowEdge =
    rules.catchUpWindowMs === undefined || rules.catchUpWindowMs === null
      ? Number.NEGATIVE_INFINITY
      : nowMs - rules.catchUpWindowMs;

  const fires: PlannedFire[] = [];
  const skipped: SkippedOccurrences[] = [];
  const skip = (reason: OccurrenceSkipReason, range: RangeSummary | null): void => {
    if (range !== null) skipped.push({ reason, ...datesOf(range) });
  };

  // [nominal, outsideEnd): too old; [missedStart, lateEdge): missed; [onTimeStart, now]: on time.
  const outsideEnd = Math.min(windowEdge, lateEdge);
  skip('OUTSIDE_CATCH_UP_WINDOW', occurrences.summarize(nominalMs, outsideEnd));
  const missed = occurrences.summarize(Math.max(nominalMs, windowEdge), lateEdge);
  const onTimeStart = Math.max(nominalMs, lateEdge);
  const onTime = occurrences.summarize(onTimeStart, nowMs + 1);

  if (missed !== null && rules.misfire === 'FIRE_ONCE') {
    const last = onTime ?? missed;
    const count = missed.count + (onTime?.count ?? 0);
    const countIsLowerBound = missed.countIsLowerBound || (onTime?.countIsLowerBound ?? false);
    if (count > 1) skip('COALESCED', occurrences.summarize(missed.first, last.last));
    fires.push({
      nominal: new Date(last.last),
      late: onTime === null,
      ...(count > 1
        ? {
            coalesced: {
              count,
              countIsLowerBound,
              firstNominal: new Date(missed.first),
              lastNominal: new Date(last.last),
            },
          }
        : {}),
    });
    budget -= 1;
  } else {
    if (missed !== null && rules.misfire === 'SKIP') skip('MISFIRE_SKIP', missed);
    if (missed !== null && rules.misfire === 'FIRE_ALL') {
      const catchUp = occurrences.list(
        missed.first,
        lateEdge,
        Math.min(Math.max(0, rules.maxCatchUp), budget, occurrences.limit),
      );
      for (const at of catchUp) fires.push({ nominal: new Date(at), late: true });
      budget -= catchUp.length;
      const rest = catchUp.length === 0 ? missed.first : (catchUp[catchUp.length - 1] as number) + 1;
      skip('CATCH_UP_LIMIT', occurrences.summarize(rest, lateEdge));
    }
    if (onTime !== null) {
      const due = occurrences.list(onTime.first, nowMs + 1, Math.min(budget, occurrences.limit));
      for (const at of due) fires.push({ nominal: new Date(at), late: false });
      budget -= due.length;
      // Only reachable with a huge lateToleranceMs on a dense schedule, or when maxFires runs out.
      if (budget > 0 && due.length > 0)
        skip('CATCH_UP_LIMIT', occurrences.summarize((due[due.length - 1] as number) + 1, nowMs + 1));
    }
  }

  const total = firesSoFar + fires.length;
  const nextMs = budget <= 0 ? null : nextOccurrenceAfter(schedule, nowMs, total);
  return { fires, skipped, nextRunAt: nextMs === null ? null : new Date(nextMs), firesSoFar: total };
}

function datesOf(range: RangeSummary): Omit<SkippedOccurrences, 'reason'> {
  return {
    firstNominal: new Date(range.first),
    lastNominal: new Date(range.last),
    count: range.count,
    countIsLowerBound: range.countIsLowerBound,
  };
}

/**
 * The due stream: the claimed `nominal` (authoritative, even off the schedule's grid) followed by the schedule's
 * occurrences after it, ignoring maxFires (the plan spends that budget itself).
 */
class Occurrences {
  constructor(
    private readonly schedule: Schedule,
    private readonly nominal: number,
    readonly limit: number,
  ) {}

  /** The first occurrence strictly after `t`. */
  next(t: number): number | null {
    if (t < this.nominal) return this.nominal;
    if (this.schedule.kind === 'once') return null;
    return nextOccurrenceAfter(this.schedule, t, 0);
  }

  /** Up to `max` occurrences in [from, to). */
  list(from: number, to: number, max: number): number[] {
    const out: number[] = [];
    let at = this.next(from - 1);
    while (at !== null && at < to && out.length < max) {
      out.push(at);
      at = this.next(at);
    }
    return out;
  }

  /** First, last and count of the occurrences in [from, to); null when there are none. */
  summarize(from: number, to: number): RangeSummary | null {
    if (!(from < to)) return null;
    const first = this.next(from - 1);
    if (first === null || first >= to) return null;
    if (this.schedule.kind === 'interval') return this.summarizeInterval(this.schedule, first, to);
    let count = 1;
    let last = first;
    for (;;) {
      const at = this.next(last);
      if (at === null || at >= to) return { first, last, count, countIsLowerBound: false };
      if (count >= this.limit)
        return { first, last: this.lastBefore(last, to), count, countIsLowerBound: true };
      last = at;
      count++;
    }
  }

  /** Arithmetic: the grid is anchor + k·everyMs, so counting a million occurrences costs nothing. */
  private summarizeInterval(schedule: IntervalSchedule, first: number, to: number): RangeSummary {
    const gridStart = first === this.nominal ? this.next(first) : first;
    let count = first === this.nominal ? 1 : 0;
    let last = first;
    if (gridStart !== null && gridStart < to) {
      const anchor = schedule.anchor.getTime();
      let end = to - 1;
      if (schedule.endAt !== undefined) end = Math.min(end, schedule.endAt.getTime());
      const lastGrid = anchor + Math.floor((end - anchor) / schedule.everyMs) * schedule.everyMs;
      count += (lastGrid - gridStart) / schedule.everyMs + 1;
      last = lastGrid;
    }
    return { first, last, count, countIsLowerBound: false };
  }

  /** The last occurrence before `to`, given `known` < `to` is one: bisects on time (next() is monotone). */
  private lastBefore(known: number, to: number): number {
    if ((this.next(known) ?? Number.POSITIVE_INFINITY) >= to) return known;
    // Invariant: next(low) < to ≤ next(high); ends with high = low + 1, so next(low) is the last one.
    let low = known;
    let high = to - 1;
    while (high - low > 1) {
      const mid = low + Math.floor((high - low) / 2);
      if ((this.next(mid) ?? Number.POSITIVE_INFINITY) < to) low = mid;
      else high = mid;
    }
    return this.next(low) as number;
  }
}
