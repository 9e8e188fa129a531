/**
 * Fire SLOs: whether an occurrence started within its job's tolerance of its nominal time (on time),
 * later (LATE, with its lateness), or not by its deadline (MISSED). Pure: the store supplies when the
 * occurrence's run first started, and the clock comes in as a parameter.
 */
import { nextOccurrenceAfterOccurrence, nextOccurrencePointAfter } from './schedule/occurrences';
import type { Schedule } from './schedule/schedule';

/** The SLO marks the occurrence ledger records; on-time occurrences record none. */
export type FireSloReason = 'LATE' | 'MISSED';
export const FIRE_SLO_REASONS: readonly FireSloReason[] = ['LATE', 'MISSED'];

/** A judgement: final (ON_TIME, LATE, MISSED), or PENDING while it cannot be known yet. */
export type FireSloVerdict =
  | { readonly verdict: 'ON_TIME' }
  | { readonly verdict: 'LATE'; readonly latenessMs: number }
  | { readonly verdict: 'MISSED'; readonly latenessMs: number | null }
  | { readonly verdict: 'PENDING' };

/** The deployment's SLO defaults (TICKWORK_SLO_*), for jobs that set none of their own. */
export interface FireSloDefaults {
  /** Tolerance of a job without `tolerance_ms`. */
  readonly toleranceMs: number;
  /** An occurrence with no next occurrence (or a far one) is MISSED this long after its nominal time. */
  readonly missedAfterMs: number;
}

/** The tolerance that applies to a job: its own `tolerance_ms`, or the deployment's default. */
export function effectiveToleranceMs(jobToleranceMs: number | null | undefined, d: FireSloDefaults): number {
  return jobToleranceMs ?? d.toleranceMs;
}

/**
 * When an occurrence that has not started counts as MISSED: the job's next occurrence, but no later
 * than `missedAfterMs` after its nominal time (a yearly job is not "missed" a year later only), and
 * never before its tolerance has run out (a tolerance longer than the interval still means LATE first).
 */
export function missedDeadline(
  schedule: Schedule,
  occurrence: { readonly nominal: Date; readonly dstShiftMs: number },
  toleranceMs: number,
  missedAfterMs: number,
): Date {
  const nominalMs = occurrence.nominal.getTime();
  const cap = nominalMs + missedAfterMs;
  // The next occurrence as the schedule defines it, whether or not max_fires lets it fire; the
  // search stops at the cap, so a sparse cron costs no more than the deadline needs.
  const next =
    schedule.kind === 'once'
      ? null
      : nextOccurrencePointAfter(schedule, { at: nominalMs, shiftMs: occurrence.dstShiftMs }, 0, {
          untilMs: cap,
        });
  const byNext = next === null ? cap : Math.min(next.at, cap);
  return new Date(Math.max(byNext, nominalMs + toleranceMs));
}

/**
 * Judges one occurrence. `firstStartedAt` is when its run first started (null: not yet). Started
 * within tolerance: ON_TIME; started later but by the deadline: LATE; started after the deadline or
 * not started once the deadline has passed: MISSED; otherwise PENDING. The same inputs always give
 * the same verdict, whenever it is asked, so a sweep that is repeated after a crash records the same.
 */
export function judgeOccurrence(o: {
  readonly nominal: Date;
  readonly firstStartedAt: Date | null;
  readonly toleranceMs: number;
  readonly deadline: Date;
  readonly now: Date;
}): FireSloVerdict {
  const nominalMs = o.nominal.getTime();
  if (o.firstStartedAt !== null) {
    const latenessMs = Math.max(0, o.firstStartedAt.getTime() - nominalMs);
    if (latenessMs <= o.toleranceMs) return { verdict: 'ON_TIME' };
    if (o.firstStartedAt.getTime() <= o.deadline.getTime()) return { verdict: 'LATE', latenessMs };
    return { verdict: 'MISSED', latenessMs };
  }
  if (o.now.getTime() >= o.deadline.getTime()) return { verdict: 'MISSED', latenessMs: null };
  return { verdict: 'PENDING' };
}

/**
 * The nominal interval of a schedule in seconds, for the dead-man alert ("has not succeeded for
 * three of its intervals"): an interval job's period; for cron, the gap between the two occurrences
 * after `from`; null for a one-shot or an exhausted schedule.
 */
export function nominalIntervalSeconds(schedule: Schedule, from: Date): number | null {
  if (schedule.kind === 'once') return null;
  if (schedule.kind === 'interval') return schedule.everyMs / 1000;
  const first = nextOccurrenceAfterOccurrence(schedule, { nominal: from, dstShiftMs: 0 }, 0);
  if (!first) return null;
  const second = nextOccurrenceAfterOccurrence(schedule, first, 0);
  if (!second) return null;
  return (second.nominal.getTime() - first.nominal.getTime()) / 1000;
}
