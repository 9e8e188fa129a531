/**
 * What the scheduler does with one claimed job: which occurrences fire now (and when, after
 * jitter), which are skipped or coalesced and why, and when the job is next due.
 */
import { resumeSkipReason } from './bulk-action';
import { LATEST_INSTANT_MS } from './instant';
import type { ClaimableJob } from './job';
import {
  defaultHerdWindowMs,
  firstOccurrenceAtOrAfter,
  jitteredFireTime,
  nextOccurrencePointAfter,
  planMisfire,
  spreadOffsetMs,
  type Schedule,
} from './schedule';
import type { JobPolicies } from './policies';

export interface ClaimPlanOptions {
  /** FIRE_ALL: most missed occurrences fired in one claim. */
  readonly maxCatchUp: number;
  /** Cluster-wide jitter window for recurring fires on round minutes, for jobs with no jitter of their own. */
  readonly herdJitterMs: number;
  /** Lateness that is not a misfire (tick and claim latency). */
  readonly lateToleranceMs?: number;
  /** Occurrences due up to this many ms after `now` are planned now (claimed early). */
  readonly lookaheadMs?: number;
}

export interface PlannedOccurrence {
  readonly nominalTime: Date;
  /** nominalTime plus the job's deterministic jitter. */
  readonly scheduledFor: Date;
  /**
   * How far dst_gap SHIFT moved this occurrence past a DST gap (0, or absent: not moved). Two occurrences
   * of a job may share a nominal instant (02:45 shifted onto 03:45); this tells them apart.
   */
  readonly dstShiftMs?: number;
  /**
   * The herd window's offset (policies.spread_ms): scheduledFor = nominalTime + spreadOffsetMs, the
   * occurrence's slot. Lateness is measured from nominalTime; 0 or absent for jobs without a window.
   */
  readonly spreadOffsetMs?: number;
  /**
   * How far the job's calendar rule moved this occurrence (nominalTime is the moved instant); with
   * dstShiftMs it tells apart occurrences moved onto one instant. 0 or absent: not moved.
   */
  readonly calendarShiftMs?: number;
  /** The calendar (`name@version`) whose closed day moved this occurrence (CALENDAR_SHIFT). */
  readonly calendar?: string;
}

/** How a job moves its fires off the nominal instant: jitter, or a herd window (spread). */
export type FireSpreading = Pick<JobPolicies, 'jitterMs' | 'spreadMs'>;

export interface DueOccurrencePlan {
  readonly fires: readonly PlannedOccurrence[];
  readonly skips: readonly {
    readonly reason: string;
    readonly firstNominal: Date;
    readonly lastNominal: Date;
    readonly occurrences: number;
    /** CALENDAR_SKIP: the calendar (`name@version`) that closed the day. */
    readonly calendar?: string;
  }[];
  /** The next occurrence (nominal, and when to claim it), or null when the schedule is exhausted. */
  readonly next: PlannedOccurrence | null;
}

const DEFAULT_LATE_TOLERANCE_MS = 2_000;

/**
 * When one occurrence fires: at its herd-window slot when the job has spread_ms, else jittered by the
 * job's own window or the cluster's herd window (a job with a herd window takes no cluster jitter).
 */
export function occurrenceAt(
  jobId: string,
  schedule: Schedule,
  spreading: FireSpreading | number,
  nominal: Date,
  herdJitterMs: number,
  dstShiftMs = 0,
): PlannedOccurrence {
  const { jitterMs, spreadMs = 0 } =
    typeof spreading === 'number' ? { jitterMs: spreading, spreadMs: 0 } : spreading;
  let spreadOffset = 0;
  let moved: Date;
  if (spreadMs > 0 && schedule.kind !== 'once') {
    spreadOffset = spreadOffsetMs(jobId, nominal, spreadMs, dstShiftMs);
    moved = new Date(nominal.getTime() + spreadOffset);
  } else {
    const window = jitterMs > 0 ? jitterMs : defaultHerdWindowMs(schedule, nominal, herdJitterMs);
    moved = jitteredFireTime(jobId, nominal, window);
  }
  // Neither pushes a fire past the end of the instant range (it could not be stored or sent).
  if (moved.getTime() > LATEST_INSTANT_MS) {
    moved = nominal;
    spreadOffset = 0;
  }
  return {
    nominalTime: nominal,
    scheduledFor: moved,
    ...(dstShiftMs !== 0 ? { dstShiftMs } : {}),
    ...(spreadOffset !== 0 ? { spreadOffsetMs: spreadOffset } : {}),
  };
}

/**
 * How long after its nominal time an occurrence may be claimed and still be on time (not a misfire):
 * the tick's tolerance plus the window that moves its fire (a fire claimed at its slot 4 minutes into
 * a 5-minute herd window is on time, not missed).
 */
export function onTimeToleranceMs(spreading: FireSpreading, baseToleranceMs: number): number {
  return baseToleranceMs + Math.max(spreading.jitterMs, spreading.spreadMs ?? 0);
}

/**
 * Plans a due job claimed at database time `now`; its due occurrence is `nominal` (with the job's
 * stored DST shift when it is the job's next_nominal_at). With overlap FORBID and the previous fire
 * still in flight, the due occurrences are skipped ('OVERLAP').
 */
export function planDueOccurrences(
  job: ClaimableJob,
  nominal: Date,
  now: Date,
  opts: ClaimPlanOptions,
  previousFireInFlight = false,
): DueOccurrencePlan {
  // A resume that chose what to do with the occurrences missed while paused: the same planner,
  // under that choice instead of the job's policy (one path for every missed occurrence).
  const resumed = job.resumeCatchUp ?? null;
  const rules = {
    misfire: resumed ? resumed.missed : job.policies.misfire,
    catchUpWindowMs: resumed ? resumed.windowMs : job.policies.catchUpWindowMs,
    maxCatchUp: resumed ? Math.min(resumed.limit, opts.maxCatchUp) : opts.maxCatchUp,
    lateToleranceMs: onTimeToleranceMs(job.policies, opts.lateToleranceMs ?? DEFAULT_LATE_TOLERANCE_MS),
  };
  const nominalShiftMs = job.nextNominalAt?.getTime() === nominal.getTime() ? (job.nextDstShiftMs ?? 0) : 0;
  // Misfire policy, catch-up window and lateness apply as of `now`.
  let plan = planMisfire(job.schedule, nominal, now, job.firesCount, rules, nominalShiftMs);
  // The occurrences after `now` within the lookahead are on time: each is a fire of its own. Not
  // for FORBID jobs: whether the previous fire is still running is known only for `now`.
  const lookahead = job.policies.overlap === 'FORBID' ? 0 : (opts.lookaheadMs ?? 0);
  const horizon = new Date(now.getTime() + lookahead);
  if (lookahead > 0 && plan.nextRunAt && plan.nextRunAt.getTime() <= horizon.getTime()) {
    const ahead = planMisfire(
      job.schedule,
      plan.nextRunAt,
      horizon,
      plan.firesSoFar,
      { ...rules, catchUpWindowMs: null, lateToleranceMs: lookahead },
      plan.nextDstShiftMs,
    );
    plan = {
      fires: [...plan.fires, ...ahead.fires],
      skipped: [...plan.skipped, ...ahead.skipped],
      nextRunAt: ahead.nextRunAt,
      nextDstShiftMs: ahead.nextDstShiftMs,
      firesSoFar: ahead.firesSoFar,
    };
  }
  const at = (d: Date, dstShiftMs = 0) =>
    occurrenceAt(job.jobId, job.schedule, job.policies, d, opts.herdJitterMs, dstShiftMs);
  const skips = plan.skipped.map((s) => ({
    reason: resumed ? resumeSkipReason(s.reason) : (s.reason as string),
    firstNominal: s.firstNominal,
    lastNominal: s.lastNominal,
    occurrences: s.count,
  }));
  if (job.policies.overlap === 'FORBID' && previousFireInFlight && plan.fires.length > 0) {
    const first = plan.fires[0]!.nominal;
    const last = plan.fires[plan.fires.length - 1]!.nominal;
    skips.push({ reason: 'OVERLAP', firstNominal: first, lastNominal: last, occurrences: plan.fires.length });
    // The schedule moves past them as a misfire SKIP would. They are not fires, so the next
    // occurrence is computed with the fire count unchanged (max_fires is not spent on them).
    const next = nextOccurrencePointAfter(
      job.schedule,
      { at: Math.max(last.getTime(), now.getTime()), shiftMs: 0 },
      job.firesCount,
    );
    return { fires: [], skips, next: next ? at(new Date(next.at), next.shiftMs) : null };
  }
  return {
    fires: plan.fires.map((f) => at(f.nominal, f.dstShiftMs)),
    skips,
    next: plan.nextRunAt ? at(plan.nextRunAt, plan.nextDstShiftMs) : null,
  };
}

/**
 * The first occurrence of a schedule being created or resumed at `now`. A one-shot whose instant
 * has already passed is due now (its nominal time becomes `now`), so no misfire policy can
 * swallow a job its client just asked to run.
 */
export function initialOccurrence(
  jobId: string,
  schedule: Schedule,
  spreading: FireSpreading | number,
  now: Date,
  herdJitterMs: number,
  firesSoFar = 0,
): PlannedOccurrence | null {
  const first = firstOccurrenceAtOrAfter(schedule, now, firesSoFar);
  if (!first) return null;
  const nominal = schedule.kind === 'once' && first.nominal.getTime() < now.getTime() ? now : first.nominal;
  return occurrenceAt(jobId, schedule, spreading, nominal, herdJitterMs, first.dstShiftMs);
}
