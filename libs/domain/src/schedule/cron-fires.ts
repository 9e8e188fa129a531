/**
 * Cron occurrences as real instants: wall-clock matches of a `ParsedCron` mapped through an IANA zone,
 * with exact per-job DST policies.
 *
 * `nextCronInstantAfter` answers the smallest instant strictly after the given one that has an occurrence;
 * `cronShiftsAt` says how many nominal wall times fire at such an instant (two when SHIFT pushes a gap's wall
 * time onto one that exists, e.g. 02:45 → 03:45 on a New York spring-forward day: each fires, none is lost).
 * Per matching wall time W:
 * - W exists once: it fires at its instant.
 * - W falls in a spring-forward gap of length G (it never shows on the clock):
 *   SHIFT fires at W read with the offset before the gap, i.e. the wall clock shows W + G (02:30 in a one-hour
 *   New York gap fires at 03:30 EDT, like Quartz and systemd); SKIP does not fire.
 * - W occurs twice (fall-back overlap): FIRST fires at the earlier instant, LAST at the later one, BOTH at each.
 * - AUTO: when the hour field is `*` or `*\/n` (`hourFollowsRealTime`), follow real time: gap → SKIP,
 *   repeat → BOTH (`*\/15 * * * *` stays every 15 real minutes). Otherwise (specific hours) fire each occurrence
 *   once: gap → SHIFT, repeat → FIRST.
 */

import type { DstGapPolicy, DstRepeatPolicy } from './schedule';
import type { ParsedCron } from './cron-expression';
import { DAY_MS } from './calendar';
import type { ZoneRules } from './time-zone';

// Module-level aliases: inside Jest's vm sandbox every global lookup (Math.*) is slow, so alias once.
const { max, min } = Math;
const INFINITY = Number.POSITIVE_INFINITY;

/** A gap policy after AUTO has been resolved for a particular expression. */
export type EffectiveGapPolicy = Exclude<DstGapPolicy, 'AUTO'>;
/** A repeat policy after AUTO has been resolved for a particular expression. */
export type EffectiveRepeatPolicy = Exclude<DstRepeatPolicy, 'AUTO'>;

/** Resolves AUTO gap handling: skip for hour-wildcard/step expressions, shift for specific hours. */
export function effectiveGapPolicy(cron: ParsedCron, policy: DstGapPolicy): EffectiveGapPolicy {
  if (policy !== 'AUTO') return policy;
  return cron.hourFollowsRealTime ? 'SKIP' : 'SHIFT';
}

/** Resolves AUTO repeat handling: both copies for hour-wildcard/step expressions, the first for specific hours. */
export function effectiveRepeatPolicy(cron: ParsedCron, policy: DstRepeatPolicy): EffectiveRepeatPolicy {
  if (policy !== 'AUTO') return policy;
  return cron.hourFollowsRealTime ? 'BOTH' : 'FIRST';
}

const MAX_SEGMENTS = 4_000;

/** Thrown by a search whose `outOfBudget` said stop; the caller may search again later (work done is cached). */
export class SearchBudgetExceeded extends Error {
  constructor() {
    super('the search for occurrences ran out of its work budget');
    this.name = 'SearchBudgetExceeded';
  }
}

/**
 * The first occurrence strictly after `after` (epoch ms) of `cron` in `zone` under the given policies,
 * or null when there is none up to `until` (epoch ms; and within the 400-year search horizon).
 * `outOfBudget` is asked once per segment visited (the costly step: a new UTC year of a zone is
 * worked out with Intl); when it answers true the search throws SearchBudgetExceeded.
 *
 * Works segment by segment (constant UTC offset): inside one, wall time and instant move together, so one
 * field-jumping wall search answers it; spring-forward SHIFT candidates come from the gap just before it.
 */
export function nextCronInstantAfter(
  cron: ParsedCron,
  zone: ZoneRules,
  gap: EffectiveGapPolicy,
  repeat: EffectiveRepeatPolicy,
  after: number,
  until = INFINITY,
  outOfBudget?: () => boolean,
): number | null {
  let t = after;
  for (let guard = 0; guard < MAX_SEGMENTS; guard++) {
    // Past the horizon nothing is looked for: not even the zone's rules of that year are worked out.
    if (t >= until) return null;
    if (outOfBudget !== undefined && outOfBudget()) throw new SearchBudgetExceeded();
    const segment = zone.segmentAt(t + 1);
    const { offset, previous, next } = segment;

    // Instants of this segment whose wall time the repeat policy leaves to the neighbouring copy.
    let realStart = segment.start;
    let realEnd = segment.end;
    if (repeat === 'FIRST' && previous !== null && previous.after < previous.before) {
      realStart = max(realStart, previous.at + (previous.before - previous.after));
    }
    if (repeat === 'LAST' && next !== null && next.after < next.before) {
      realEnd = min(realEnd, next.at - (next.before - next.after));
    }

    let best = INFINITY;
    let wall: number | null | undefined;
    const lower = max(t, realStart - 1);
    if (lower < realEnd - 1) {
      wall = cron.nextWallTimeAfter(lower + offset);
      if (wall !== null && wall - offset < realEnd) best = wall - offset;
    }

    if (gap === 'SHIFT' && previous !== null && previous.after > previous.before) {
      // Wall times inside the gap [at + before, at + after) fire at wall − before ∈ [at, at + gap).
      const shiftedEnd = min(previous.at + (previous.after - previous.before), segment.end);
      const shiftedLower = max(t, previous.at - 1, segment.start - 1);
      if (shiftedLower < shiftedEnd - 1) {
        const gapWall = cron.nextWallTimeAfter(shiftedLower + previous.before);
        if (gapWall !== null) {
          const shifted = gapWall - previous.before;
          if (shifted < shiftedEnd && shifted < best) best = shifted;
        }
      }
    }

    if (best !== INFINITY) return best <= until ? best : null;

    // A fall-back right after this segment repeats wall times we already passed: it must be visited.
    const repeatsSoon = next !== null && next.after < next.before && next.at < segment.end + DAY_MS;
    if (wall === null && !repeatsSoon) return null;
    let nextT = segment.end - 1;
    // No wall match before `wall`: jump close to it instead of walking every segment (e.g. `0 0 29 2 *`).
    if (wall !== undefined && wall !== null && !repeatsSoon && wall - offset - 2 * DAY_MS > segment.end) {
      nextT = wall - offset - 2 * DAY_MS;
    }
    t = nextT;
  }
  return null;
}

/**
 * The nominal wall times of `cron` that fire at instant `at`, each as how far the gap policy moved it
 * (0: the wall time `at` shows; the gap's length: a wall time inside the gap just before, under SHIFT),
 * largest first, which is their nominal (wall-clock) order. Empty when nothing fires at `at`; at most two.
 */
export function cronShiftsAt(
  cron: ParsedCron,
  zone: ZoneRules,
  gap: EffectiveGapPolicy,
  repeat: EffectiveRepeatPolicy,
  at: number,
): number[] {
  const segment = zone.segmentAt(at);
  const { offset, previous, next } = segment;
  const shifts: number[] = [];
  if (gap === 'SHIFT' && previous !== null && previous.after > previous.before) {
    const length = previous.after - previous.before;
    if (at >= previous.at && at < previous.at + length && matchesWall(cron, at + previous.before)) {
      shifts.push(length);
    }
  }
  // The same bounds as nextCronInstantAfter: the repeat policy leaves some instants to the other copy.
  let realStart = segment.start;
  let realEnd = segment.end;
  if (repeat === 'FIRST' && previous !== null && previous.after < previous.before) {
    realStart = max(realStart, previous.at + (previous.before - previous.after));
  }
  if (repeat === 'LAST' && next !== null && next.after < next.before) {
    realEnd = min(realEnd, next.at - (next.before - next.after));
  }
  if (at >= realStart && at < realEnd && matchesWall(cron, at + offset)) shifts.push(0);
  return shifts;
}

/** Whether the wall time `wall` (whole seconds) matches the expression. */
function matchesWall(cron: ParsedCron, wall: number): boolean {
  return wall % 1000 === 0 && cron.nextWallTimeAfter(wall - 1) === wall;
}
