/**
 * Planning a job that refers to business calendars. The schedule's occurrences are walked in order and
 * each goes through the job's calendar rule: it fires at its instant, is moved to another business day
 * at the same wall time (CALENDAR_SHIFT), or is skipped (CALENDAR_SKIP). The misfire policy then judges
 * the moved instant, which is the occurrence's nominal time (lateness counts from it).
 *
 * The job's cursor is (next_nominal_at, next_dst_shift_ms, next_calendar_shift_ms): the schedule's own
 * point is next_nominal_at − next_calendar_shift_ms. A skipped occurrence is claimed at its schedule
 * instant, so its CALENDAR_SKIP is recorded when it would have fired. Occurrences are planned in
 * schedule order: a moved occurrence never fires before the previous one (it is held at its instant,
 * which matters only to schedules firing more than once a day). Two occurrences moved onto one instant
 * (Saturday's and Sunday's onto Monday 09:00, where Monday's own also fires) stay three occurrences,
 * told apart by their calendar shift, as dst_gap SHIFT tells apart two at one instant.
 */
import { resumeSkipReason } from './bulk-action';
import {
  initialOccurrence,
  occurrenceAt,
  onTimeToleranceMs,
  planDueOccurrences,
  type ClaimPlanOptions,
  type DueOccurrencePlan,
  type PlannedOccurrence,
} from './claim-planner';
import type { ClaimableJob } from './job';
import {
  applyCalendarRule,
  calendarRef,
  type CalendarDecision,
  type CalendarRule,
  CompiledCalendars,
} from './schedule/business-calendar';
import {
  firstOccurrenceAtOrAfter,
  nextOccurrencePointAfter,
  type OccurrencePoint,
} from './schedule/occurrences';
import type { Schedule } from './schedule/schedule';

/** A job's calendars (resolved, compiled) and its rule for closed days. */
export interface JobCalendars {
  readonly calendars: CompiledCalendars;
  readonly rule: CalendarRule;
}

/** How many schedule occurrences one claim or search walks at most; past it the walk resumes next time. */
export const CALENDAR_WALK_LIMIT = 10_000;

/** The zone whose civil dates a schedule's occurrences fall on (interval schedules: UTC). */
export function scheduleZone(schedule: Schedule): string {
  return schedule.kind === 'cron' || schedule.kind === 'rrule' ? schedule.timeZone : 'UTC';
}

/** One schedule occurrence after the calendar rule: when it is due (a skip: at its own instant). */
interface Walked {
  readonly point: OccurrencePoint;
  readonly decision: CalendarDecision;
  readonly dueAt: number;
}

function walked(schedule: Schedule, cal: JobCalendars, point: OccurrencePoint, floor: number): Walked {
  const decision = applyCalendarRule(cal.calendars, cal.rule, point.at, scheduleZone(schedule));
  const dueAt = decision.kind === 'SKIP' ? point.at : Math.max(decision.at, floor);
  return { point, decision, dueAt };
}

/** The planned occurrence of a walked one (its fire time after jitter or herd window). */
function plannedOf(
  job: Pick<ClaimableJob, 'jobId' | 'schedule' | 'policies'>,
  w: Walked,
  herdJitterMs: number,
): PlannedOccurrence {
  const base = occurrenceAt(
    job.jobId,
    job.schedule,
    job.policies,
    new Date(w.dueAt),
    herdJitterMs,
    w.point.shiftMs,
  );
  const shift = w.dueAt - w.point.at;
  return {
    ...base,
    ...(shift !== 0 ? { calendarShiftMs: shift } : {}),
    ...(w.decision.kind === 'SHIFT' ? { calendar: calendarRef(w.decision.calendar) } : {}),
  };
}

/**
 * The first occurrence of a calendar job at or after `from` (creation, resume, an edit or a calendar
 * change re-plan it from now): a fire or a move at or after `from`, or a skip (claimed at its own
 * instant, to record it). Moves to before `from` are passed over. Null when the schedule is exhausted.
 */
export function firstCalendarOccurrence(
  job: Pick<ClaimableJob, 'jobId' | 'schedule' | 'policies'>,
  cal: JobCalendars,
  from: Date,
  herdJitterMs: number,
  firesSoFar = 0,
): PlannedOccurrence | null {
  const first = firstOccurrenceAtOrAfter(job.schedule, from, firesSoFar);
  let point: OccurrencePoint | null = first && { at: first.nominal.getTime(), shiftMs: first.dstShiftMs };
  for (let i = 0; point && i < CALENDAR_WALK_LIMIT; i++) {
    const w = walked(job.schedule, cal, point, from.getTime());
    if (w.decision.kind === 'SKIP' || w.decision.at >= from.getTime()) return plannedOf(job, w, herdJitterMs);
    point = nextOccurrencePointAfter(job.schedule, point, firesSoFar);
  }
  // A walk that found only moves into the past within its limit resumes from where it stopped.
  return (
    point &&
    plannedOf(job, { point, decision: { kind: 'FIRE', at: point.at }, dueAt: point.at }, herdJitterMs)
  );
}

interface SkipRange {
  reason: string;
  firstNominal: Date;
  lastNominal: Date;
  occurrences: number;
  calendar?: string;
}

/**
 * Plans a due calendar job claimed at database time `now` (what planDueOccurrences does for a job
 * without calendars), with the same misfire rules, lookahead, overlap and resume catch-up.
 */
export function planCalendarOccurrences(
  job: ClaimableJob,
  cal: JobCalendars,
  now: Date,
  opts: ClaimPlanOptions,
  previousFireInFlight = false,
): DueOccurrencePlan {
  const resumed = job.resumeCatchUp ?? null;
  const misfire = resumed ? resumed.missed : job.policies.misfire;
  const windowMs = resumed ? resumed.windowMs : job.policies.catchUpWindowMs;
  const maxCatchUp = resumed ? Math.min(resumed.limit, opts.maxCatchUp) : opts.maxCatchUp;
  const tolerance = onTimeToleranceMs(job.policies, opts.lateToleranceMs ?? 2_000);
  const lookahead = job.policies.overlap === 'FORBID' ? 0 : (opts.lookaheadMs ?? 0);
  const nowMs = now.getTime();
  const horizon = nowMs + lookahead;
  const reason = (r: string) => (resumed ? resumeSkipReason(r) : r);

  const skips: SkipRange[] = [];
  const skip = (r: string, w: Walked, calendar?: string) => {
    const last = skips[skips.length - 1];
    const at = new Date(w.decision.kind === 'SKIP' ? w.point.at : w.dueAt);
    if (last && last.reason === r && last.calendar === calendar) {
      last.lastNominal = at;
      last.occurrences++;
    } else
      skips.push({
        reason: r,
        firstNominal: at,
        lastNominal: at,
        occurrences: 1,
        ...(calendar ? { calendar } : {}),
      });
  };

  const storedNominal = job.nextNominalAt?.getTime() ?? nowMs;
  let point: OccurrencePoint | null = {
    at: storedNominal - (job.nextCalendarShiftMs ?? 0),
    shiftMs: job.nextDstShiftMs ?? 0,
  };
  let floor = -Infinity;
  let firesSoFar = job.firesCount;
  const due: Walked[] = [];
  let next: Walked | null = null;
  for (let i = 0; point; i++) {
    const w = walked(job.schedule, cal, point, floor);
    if (w.dueAt > horizon || i >= CALENDAR_WALK_LIMIT) {
      next = w;
      break;
    }
    if (w.decision.kind === 'SKIP') skip('CALENDAR_SKIP', w, calendarRef(w.decision.calendar));
    else {
      due.push(w);
      floor = w.dueAt;
      // Counted as a fire for max_fires while walking; a missed one the policy skips is recounted below.
      firesSoFar++;
    }
    point = nextOccurrencePointAfter(job.schedule, point, firesSoFar);
  }

  // The misfire rules, as planMisfire applies them, on the occurrences' (moved) instants.
  const fires: Walked[] = [];
  const missed = due.filter((w) => w.dueAt < nowMs - tolerance && w.dueAt <= nowMs);
  let caughtUp = 0;
  for (const w of due) {
    const isMissed = w.dueAt < nowMs - tolerance;
    if (isMissed && windowMs !== null && windowMs !== undefined && w.dueAt < nowMs - windowMs) {
      skip(reason('OUTSIDE_CATCH_UP_WINDOW'), w);
      continue;
    }
    if (!isMissed) {
      if (misfire === 'FIRE_ONCE' && missed.length > 0 && w.dueAt <= nowMs && w !== lastDue(due, nowMs))
        skip('COALESCED', w);
      else fires.push(w);
      continue;
    }
    if (misfire === 'SKIP') skip(reason('MISFIRE_SKIP'), w);
    else if (misfire === 'FIRE_ALL') {
      if (caughtUp < maxCatchUp) {
        caughtUp++;
        fires.push(w);
      } else skip('CATCH_UP_LIMIT', w);
    } else if (w === lastDue(due, nowMs)) fires.push(w);
    else skip('COALESCED', w);
  }
  // A missed occurrence the policy skipped did not spend max_fires: an exhausted search recounts.
  if (!next && point === null && due.length > fires.length) {
    const last = due[due.length - 1]!.point;
    const more = nextOccurrencePointAfter(job.schedule, last, job.firesCount + fires.length);
    if (more) next = walked(job.schedule, cal, more, floor);
  }
  const at = (w: Walked) => plannedOf(job, w, opts.herdJitterMs);
  if (job.policies.overlap === 'FORBID' && previousFireInFlight && fires.length > 0) {
    for (const w of fires) skip('OVERLAP', w);
    return { fires: [], skips: skips.map(toSkip), next: next ? at(next) : null };
  }
  return { fires: fires.map(at), skips: skips.map(toSkip), next: next ? at(next) : null };
}

function lastDue(due: readonly Walked[], nowMs: number): Walked | undefined {
  for (let i = due.length - 1; i >= 0; i--) if (due[i]!.dueAt <= nowMs) return due[i];
  return undefined;
}

function toSkip(s: SkipRange): DueOccurrencePlan['skips'][number] {
  return s;
}

/** The compiled calendars of a job that refers to some and had them resolved, else null. */
export function jobCalendarsOf(
  job: Pick<ClaimableJob, 'policies' | 'calendars' | 'schedule'>,
): JobCalendars | null {
  const names = job.policies.calendars ?? [];
  if (names.length === 0 || job.schedule.kind === 'once') return null;
  const calendars = job.calendars ?? [];
  // Every named calendar must be resolved: one deleted since is closed on no day (it closes nothing).
  if (calendars.length === 0) return null;
  return { calendars: new CompiledCalendars(calendars), rule: job.policies.calendarRule ?? 'SKIP' };
}

/**
 * Plans a claimed job: through its calendars when it has some (planCalendarOccurrences), else the
 * claim planner's planDueOccurrences.
 */
export function planClaimedJob(
  job: ClaimableJob,
  nominal: Date,
  now: Date,
  opts: ClaimPlanOptions,
  previousFireInFlight = false,
): DueOccurrencePlan {
  const cal = jobCalendarsOf(job);
  if (cal) return planCalendarOccurrences(job, cal, now, opts, previousFireInFlight);
  return planDueOccurrences(job, nominal, now, opts, previousFireInFlight);
}

/** A job's first occurrence from `from`, through its calendars when it has some. */
export function firstPlannedOccurrence(
  job: Pick<ClaimableJob, 'jobId' | 'schedule' | 'policies' | 'calendars'>,
  from: Date,
  herdJitterMs: number,
  firesSoFar = 0,
): PlannedOccurrence | null {
  const cal = jobCalendarsOf(job);
  if (cal) return firstCalendarOccurrence(job, cal, from, herdJitterMs, firesSoFar);
  return initialOccurrence(job.jobId, job.schedule, job.policies, from, herdJitterMs, firesSoFar);
}
