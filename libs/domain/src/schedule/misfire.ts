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
 * Two occurrences at one instant (dst_gap SHIFT moved a gap's wall time onto one that exists) are two
 * occurrences here too: each fires, or is counted among the skipped, on its own.
 *
 * Work is bounded: interval ranges are counted arithmetically (a day of per-second occurrences costs O(1)); cron
 * and one-shot ranges are enumerated up to `enumerationLimit` occurrences, beyond which the count is reported
 * as a lower bound (`countIsLowerBound`) and the range's last occurrence is found by bisection (~40 steps).
 */

import type { MisfirePolicy } from '../policies';
import { nextOccurrencePointAfter, occurrenceBefore, type OccurrencePoint } from './occurrences';
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
  /** How far dst_gap SHIFT moved this occurrence past a gap (0: not moved); tells apart two at one instant. */
  readonly dstShiftMs: number;
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
  /** The DST shift of the occurrence at `nextRunAt` (0 when none). */
  readonly nextDstShiftMs: number;
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
  readonly first: OccurrencePoint;
  readonly last: OccurrencePoint;
  readonly count: number;
  readonly countIsLowerBound: boolean;
}

/**
 * Plans the fires, skips and next run of a job whose occurrence `nominal` (moved `nominalShiftMs` by
 * dst_gap SHIFT) is claimed at `now`.
 */
export function planMisfire(
  schedule: Schedule,
  nominal: Date,
  now: Date,
  firesSoFar: number,
  rules: MisfireRules,
  nominalShiftMs = 0,
): MisfirePlan {
  const nominalMs = nominal.getTime();
  const nowMs = now.getTime();
  const maxFires = schedule.kind === 'once' ? 1 : schedule.maxFires;
  let budget = maxFires === undefined ? Number.POSITIVE_INFINITY : maxFires - firesSoFar;
  if (budget <= 0) return { fires: [], skipped: [], nextRunAt: null, nextDstShiftMs: 0, firesSoFar };
  if (nominalMs > nowMs)
    return { fires: [], skipped: [], nextRunAt: nominal, nextDstShiftMs: nominalShiftMs, firesSoFar };

  const occurrences = new Occurrences(
    schedule,
    { at: nominalMs, shiftMs: nominalShiftMs },
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
  const from = (t: number) => occurrences.firstFrom(t);
  skip('OUTSIDE_CATCH_UP_WINDOW', occurrences.summarize(from(nominalMs), outsideEnd));
  const missed = occurrences.summarize(from(Math.max(nominalMs, windowEdge)), lateEdge);
  const onTimeStart = Math.max(nominalMs, lateEdge);
  const onTime = occurrences.summarize(from(onTimeStart), nowMs + 1);

  if (missed !== null && rules.misfire === 'FIRE_ONCE') {
    const last = onTime ?? missed;
    const count = missed.count + (onTime?.count ?? 0);
    const countIsLowerBound = missed.countIsLowerBound || (onTime?.countIsLowerBound ?? false);
    if (count > 1) skip('COALESCED', occurrences.summarize(missed.first, last.last));
    fires.push({
      nominal: new Date(last.last.at),
      dstShiftMs: last.last.shiftMs,
      late: onTime === null,
      ...(count > 1
        ? {
            coalesced: {
              count,
              countIsLowerBound,
              firstNominal: new Date(missed.first.at),
              lastNominal: new Date(last.last.at),
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
      for (const p of catchUp) fires.push({ nominal: new Date(p.at), dstShiftMs: p.shiftMs, late: true });
      budget -= catchUp.length;
      const rest = catchUp.length === 0 ? missed.first : occurrences.next(catchUp[catchUp.length - 1]!);
      skip('CATCH_UP_LIMIT', occurrences.summarize(rest, lateEdge));
    }
    if (onTime !== null) {
      const due = occurrences.list(onTime.first, nowMs + 1, Math.min(budget, occurrences.limit));
      for (const p of due) fires.push({ nominal: new Date(p.at), dstShiftMs: p.shiftMs, late: false });
      budget -= due.length;
      // Only reachable with a huge lateToleranceMs on a dense schedule, or when maxFires runs out.
      if (budget > 0 && due.length > 0)
        skip('CATCH_UP_LIMIT', occurrences.summarize(occurrences.next(due[due.length - 1]!), nowMs + 1));
    }
  }

  const total = firesSoFar + fires.length;
  const next = budget <= 0 ? null : nextOccurrencePointAfter(schedule, { at: nowMs, shiftMs: 0 }, total);
  return {
    fires,
    skipped,
    nextRunAt: next === null ? null : new Date(next.at),
    nextDstShiftMs: next?.shiftMs ?? 0,
    firesSoFar: total,
  };
}

function datesOf(range: RangeSummary): Omit<SkippedOccurrences, 'reason'> {
  return {
    firstNominal: new Date(range.first.at),
    lastNominal: new Date(range.last.at),
    count: range.count,
    countIsLowerBound: range.countIsLowerBound,
  };
}

/**
 * The due stream: the claimed `nominal` (authoritative, even off the schedule's grid) followed by the schedule's
 * occurrences after it, ignoring maxFires (the plan spends that budget itself). Ranges are of instants
 * [from, to); an instant holding two occurrences (SHIFT) counts both.
 */
class Occurrences {
  constructor(
    private readonly schedule: Schedule,
    private readonly nominal: OccurrencePoint,
    readonly limit: number,
  ) {}

  /** The first occurrence strictly after occurrence `p`. */
  next(p: OccurrencePoint): OccurrencePoint | null {
    if (occurrenceBefore(p, this.nominal)) return this.nominal;
    if (this.schedule.kind === 'once') return null;
    return nextOccurrencePointAfter(this.schedule, p, 0);
  }

  /** The first occurrence at or after instant `t`. */
  firstFrom(t: number): OccurrencePoint | null {
    return this.next({ at: t - 1, shiftMs: 0 });
  }

  /** Up to `max` occurrences from `first` (included) to instant `to` (excluded). */
  list(first: OccurrencePoint | null, to: number, max: number): OccurrencePoint[] {
    const out: OccurrencePoint[] = [];
    let at = first;
    while (at !== null && at.at < to && out.length < max) {
      out.push(at);
      at = this.next(at);
    }
    return out;
  }

  /**
   * First, last and count of the occurrences from `first` (included) to `to` (excluded: an instant, or an
   * occurrence, which leaves out only those before it at its instant); null when none.
   */
  summarize(first: OccurrencePoint | null, to: number | OccurrencePoint): RangeSummary | null {
    const beforeEnd =
      typeof to === 'number'
        ? (p: OccurrencePoint) => p.at < to
        : (p: OccurrencePoint) => occurrenceBefore(p, to);
    const toMs = typeof to === 'number' ? to : to.at;
    if (first === null || !beforeEnd(first)) return null;
    if (this.schedule.kind === 'interval') return this.summarizeInterval(this.schedule, first, toMs);
    let count = 1;
    let last = first;
    for (;;) {
      const at = this.next(last);
      if (at === null || !beforeEnd(at)) return { first, last, count, countIsLowerBound: false };
      if (count >= this.limit)
        return { first, last: this.lastBefore(last, toMs), count, countIsLowerBound: true };
      last = at;
      count++;
    }
  }

  /** Arithmetic: the grid is anchor + k·everyMs, so counting a million occurrences costs nothing. */
  private summarizeInterval(schedule: IntervalSchedule, first: OccurrencePoint, to: number): RangeSummary {
    const isNominal = first.at === this.nominal.at;
    const gridStart = isNominal ? this.next(first) : first;
    let count = isNominal ? 1 : 0;
    let last = first.at;
    if (gridStart !== null && gridStart.at < to) {
      const anchor = schedule.anchor.getTime();
      let end = to - 1;
      if (schedule.endAt !== undefined) end = Math.min(end, schedule.endAt.getTime());
      const lastGrid = anchor + Math.floor((end - anchor) / schedule.everyMs) * schedule.everyMs;
      count += (lastGrid - gridStart.at) / schedule.everyMs + 1;
      last = lastGrid;
    }
    return { first, last: { at: last, shiftMs: 0 }, count, countIsLowerBound: false };
  }

  /** The last occurrence before `to`, given `known` < `to` is one: bisects on time (next() is monotone). */
  private lastBefore(known: OccurrencePoint, to: number): OccurrencePoint {
    const after = (t: number) => this.next({ at: t, shiftMs: 0 });
    if ((after(known.at)?.at ?? Number.POSITIVE_INFINITY) >= to) return known;
    // Invariant: after(low) < to ≤ after(high); ends with high = low + 1, so after(low) is the last instant.
    let low = known.at;
    let high = to - 1;
    while (high - low > 1) {
      const mid = low + Math.floor((high - low) / 2);
      if ((after(mid)?.at ?? Number.POSITIVE_INFINITY) < to) low = mid;
      else high = mid;
    }
    return after(low) as OccurrencePoint;
  }
}
