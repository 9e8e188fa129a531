/**
 * Edits of a job's definition and what they do to its occurrences. `stateAfterEdit` is the one rule for
 * where a job's schedule cursor stands after an edit (the jobs service applies it); `previewEdit` runs
 * that rule and the scheduler's own claim planner (planDueOccurrences) on the job before and after, so a
 * dry run answers with what the scheduler would do, not with a second copy of its rules.
 */
import {
  occurrenceAt,
  planDueOccurrences,
  type ClaimPlanOptions,
  type PlannedOccurrence,
} from './claim-planner';
import {
  firstCalendarOccurrence,
  jobCalendarsOf,
  planCalendarOccurrences,
  type JobCalendars,
} from './calendar-planner';
import type { ClaimableJob, JobDefinition, JobStatus } from './job';
import { scheduleToWire } from './job-wire';
import { firstOccurrenceAtOrAfter, nextOccurrenceAfterOccurrence } from './schedule';

/** Most occurrences a preview lists per side. */
export const MAX_EDIT_PREVIEW_OCCURRENCES = 100;
/** Occurrences listed per side when the caller names no count. */
export const DEFAULT_EDIT_PREVIEW_OCCURRENCES = 10;

/** The schedule cursor of a job: its status and next occurrence (nominal, claim time, DST shift). */
export interface ScheduleCursor {
  readonly status: JobStatus;
  readonly next: PlannedOccurrence | null;
}

/** The job fields an edit reads: its definition and where its schedule stands. */
export type EditableJob = Pick<
  ClaimableJob,
  | 'jobId'
  | 'schedule'
  | 'policies'
  | 'status'
  | 'nextRunAt'
  | 'nextNominalAt'
  | 'nextDstShiftMs'
  | 'firesCount'
  | 'target'
  | 'payload'
  | 'tenantId'
  | 'shard'
  | 'fenceToken'
  | 'nextCalendarShiftMs'
  | 'calendars'
>;

/** A definition as an edit reads it, with the business calendars its policies name (resolved) when it names some. */
export type EditedDefinition = Pick<JobDefinition, 'jobId' | 'schedule' | 'policies'> & {
  readonly calendars?: ClaimableJob['calendars'];
};

/** Whether an edit changes when the job fires (its schedule or its jitter): then its cursor restarts. */
export function editChangesTiming(
  job: Pick<EditableJob, 'schedule' | 'policies'>,
  definition: Pick<JobDefinition, 'schedule' | 'policies'>,
): boolean {
  const wire = (s: JobDefinition['schedule']) => JSON.stringify(scheduleToWire(s));
  return (
    wire(job.schedule) !== wire(definition.schedule) ||
    job.policies.jitterMs !== definition.policies.jitterMs ||
    (job.policies.spreadMs ?? 0) !== (definition.policies.spreadMs ?? 0) ||
    // A job's business calendars and their rule decide when it fires too.
    JSON.stringify([job.policies.calendars ?? [], job.policies.calendarRule ?? null]) !==
      JSON.stringify([definition.policies.calendars ?? [], definition.policies.calendarRule ?? null])
  );
}

/**
 * Where the job's schedule stands once `definition` replaces its own at `now`: 'keep' (the stored
 * next occurrence stays, so occurrences already due are caught up or coalesced by the misfire policy
 * at the next claim) when its timing is unchanged, else the first occurrence of the new schedule at or
 * after `now` (occurrences before `now` are not caught up: they belong to a schedule the job no longer
 * has). A job with no occurrence left is COMPLETED; a paused one stays paused.
 */
export function stateAfterEdit(
  job: EditableJob,
  definition: EditedDefinition,
  now: Date,
  herdJitterMs: number,
): 'keep' | ScheduleCursor {
  if (!editChangesTiming(job, definition) && job.status !== 'COMPLETED') return 'keep';
  const cal = jobCalendarsOf(definition);
  if (cal) {
    const planned = firstCalendarOccurrence(definition, cal, now, herdJitterMs, job.firesCount);
    return {
      status: !planned ? 'COMPLETED' : job.status === 'PAUSED' ? 'PAUSED' : 'SCHEDULED',
      next: planned,
    };
  }
  const first = firstOccurrenceAtOrAfter(definition.schedule, now, job.firesCount);
  const next =
    first &&
    occurrenceAt(
      definition.jobId,
      definition.schedule,
      definition.policies,
      first.nominal,
      herdJitterMs,
      first.dstShiftMs,
    );
  const status: JobStatus = !next ? 'COMPLETED' : job.status === 'PAUSED' ? 'PAUSED' : 'SCHEDULED';
  return { status, next };
}

/** One upcoming occurrence in a preview. */
export interface PreviewedOccurrence extends PlannedOccurrence {
  /** A missed occurrence the next claim fires late (misfire FIRE_ONCE / FIRE_ALL), at once. */
  readonly catchUp: boolean;
  /** Already claimed (lookahead): it goes out as claimed, under the definition of that time. */
  readonly claimed: boolean;
}

/** What the next claim does with the occurrences that are already due (none, when nothing is due). */
export interface DueOutlook {
  /** Whether the job's next occurrence is at or before `now`. */
  readonly due: boolean;
  /** The job is PAUSED: this is what happens when it is resumed (now). */
  readonly onResume: boolean;
  /** Missed occurrences fired late by the next claim. */
  readonly catchUpFires: number;
  /** Missed occurrences folded into one FIRE_ONCE fire (not counting that fire). */
  readonly coalesced: number;
  /** Occurrences the next claim does not fire, by reason (COALESCED, MISFIRE_SKIP, OUTSIDE_CATCH_UP_WINDOW…). */
  readonly skipped: readonly {
    readonly reason: string;
    readonly firstNominal: Date;
    readonly lastNominal: Date;
    readonly occurrences: number;
  }[];
}

/** One side of a preview: the job as it is, or as it would be. */
export interface EditSide {
  readonly status: JobStatus;
  readonly occurrences: readonly PreviewedOccurrence[];
  readonly due: DueOutlook;
}

/** A fire already claimed (outbox row) whose event snapshot carries the job's definition at claim time. */
export interface ClaimedAheadFire {
  readonly fenceToken: number;
  readonly nominalTime: Date;
  readonly scheduledFor: Date;
  readonly dstShiftMs: number;
  /** The job version the fire was claimed under (null: claimed before versions were recorded). */
  readonly jobVersion: number | null;
  /** Whether the fire is confirmed on Kafka (false: still in the outbox). */
  readonly enqueued: boolean;
}

/** A claimed-ahead fire as the edit sees it: it goes out under the definition it was claimed with. */
export interface ClaimedAheadOutcome extends ClaimedAheadFire {
  /**
   * Whether the edited schedule still has this occurrence. Either way the fire goes out as claimed (old
   * target and payload); when it is still scheduled the scheduler does not fire it a second time.
   */
  readonly inNewSchedule: boolean;
}

export interface EditImpact {
  readonly before: EditSide;
  readonly after: EditSide;
  /** Occurrences the edit adds, up to `comparedUntil`. */
  readonly appearing: readonly PreviewedOccurrence[];
  /** Occurrences the edit removes, up to `comparedUntil`. */
  readonly disappearing: readonly PreviewedOccurrence[];
  /** Occurrences kept whose claim time moves (a jitter change): before and after. */
  readonly moved: readonly { readonly before: PreviewedOccurrence; readonly after: PreviewedOccurrence }[];
  /** The lists are compared up to this nominal time (the end of the shorter full list); null: to their ends. */
  readonly comparedUntil: Date | null;
  /** The edit changes the timing: the schedule restarts from `now` (missed occurrences are dropped). */
  readonly replanned: boolean;
  readonly claimedAhead: readonly ClaimedAheadOutcome[];
}

/**
 * What replacing `job`'s definition with `definition` at `now` does: the next `count` occurrences before
 * and after, which appear or disappear, what the next claim does with occurrences already due (catch-up,
 * coalescing, skips), and which claimed-ahead fires still go out under the old definition. Pure.
 */
export function previewEdit(
  job: EditableJob,
  definition: EditedDefinition,
  now: Date,
  opts: ClaimPlanOptions & { readonly count?: number; readonly claimed?: readonly ClaimedAheadFire[] },
): EditImpact {
  const count = Math.min(
    Math.max(1, Math.floor(opts.count ?? DEFAULT_EDIT_PREVIEW_OCCURRENCES)),
    MAX_EDIT_PREVIEW_OCCURRENCES,
  );
  const state = stateAfterEdit(job, definition, now, opts.herdJitterMs);
  const edited: EditableJob = {
    ...job,
    schedule: definition.schedule,
    policies: definition.policies,
    calendars: definition.calendars,
    ...(state === 'keep'
      ? {}
      : {
          status: state.status,
          nextRunAt: state.next?.scheduledFor ?? null,
          nextNominalAt: state.next?.nominalTime ?? null,
          nextDstShiftMs: state.next?.dstShiftMs ?? 0,
          nextCalendarShiftMs: state.next?.calendarShiftMs ?? 0,
        }),
  };
  const claimed = opts.claimed ?? [];
  const before = withClaimed(sideOf(job, now, opts, count), claimed, count);
  const after = withClaimed(sideOf(edited, now, opts, count), claimed, count);
  const horizon = (s: EditSide) =>
    s.occurrences.length < count ? Number.POSITIVE_INFINITY : s.occurrences[count - 1]!.nominalTime.getTime();
  const until = Math.min(horizon(before), horizon(after));
  const within = (o: PreviewedOccurrence) => o.nominalTime.getTime() <= until;
  const beforeByKey = new Map(before.occurrences.filter(within).map((o) => [keyOf(o), o]));
  const afterByKey = new Map(after.occurrences.filter(within).map((o) => [keyOf(o), o]));
  const moved = [...afterByKey].flatMap(([k, a]) => {
    const b = beforeByKey.get(k);
    return b && b.scheduledFor.getTime() !== a.scheduledFor.getTime() ? [{ before: b, after: a }] : [];
  });
  const newSchedule = new Set(after.occurrences.filter((o) => !o.claimed).map(keyOf));
  return {
    before,
    after,
    appearing: [...afterByKey].filter(([k]) => !beforeByKey.has(k)).map(([, o]) => o),
    disappearing: [...beforeByKey].filter(([k]) => !afterByKey.has(k)).map(([, o]) => o),
    moved,
    comparedUntil: Number.isFinite(until) ? new Date(until) : null,
    replanned: state !== 'keep',
    claimedAhead: claimed.map((c) => ({
      ...c,
      inNewSchedule:
        newSchedule.has(keyOf({ nominalTime: c.nominalTime, dstShiftMs: c.dstShiftMs })) ||
        hasOccurrence(edited, c),
    })),
  };
}

/**
 * A side's occurrences with the fires already claimed ahead among them: those go out whatever the edit
 * (the scheduler never fires an occurrence twice), so the schedule's own copy of one is dropped.
 */
function withClaimed(side: EditSide, claimed: readonly ClaimedAheadFire[], count: number): EditSide {
  if (claimed.length === 0) return side;
  const claimedKeys = new Set(claimed.map((c) => keyOf(c)));
  const merged: PreviewedOccurrence[] = [
    ...claimed.map((c) => ({
      nominalTime: c.nominalTime,
      scheduledFor: c.scheduledFor,
      ...(c.dstShiftMs ? { dstShiftMs: c.dstShiftMs } : {}),
      catchUp: false,
      claimed: true,
    })),
    ...side.occurrences.filter((o) => !claimedKeys.has(keyOf(o))),
  ].sort(
    (a, b) => a.nominalTime.getTime() - b.nominalTime.getTime() || (b.dstShiftMs ?? 0) - (a.dstShiftMs ?? 0),
  );
  return { ...side, occurrences: merged.slice(0, count) };
}

/**
 * An occurrence's identity: its nominal instant, DST shift and calendar shift (several may share an
 * instant: under dst_gap SHIFT, and when a business calendar moves occurrences onto one).
 */
function keyOf(o: Pick<PlannedOccurrence, 'nominalTime' | 'dstShiftMs' | 'calendarShiftMs'>): string {
  return `${o.nominalTime.getTime()}:${o.dstShiftMs ?? 0}:${o.calendarShiftMs ?? 0}`;
}

/** Whether the job's schedule has the occurrence of a claimed fire (searched from just before it). */
function hasOccurrence(job: EditableJob, c: ClaimedAheadFire): boolean {
  const found = firstOccurrenceAtOrAfter(job.schedule, c.nominalTime, 0);
  let o = found;
  // At most the occurrences of one instant (SHIFT can put two there).
  for (let i = 0; o && i < 4 && o.nominal.getTime() === c.nominalTime.getTime(); i++) {
    if (o.dstShiftMs === c.dstShiftMs) return true;
    o = nextOccurrenceAfterOccurrence(job.schedule, o, 0);
  }
  return false;
}

const NOTHING_DUE = { due: false, catchUpFires: 0, coalesced: 0, skipped: [] } as const;

/** The next `count` occurrences of a job from `now`, planned by the scheduler's claim planner. */
function sideOf(job: EditableJob, now: Date, opts: ClaimPlanOptions, count: number): EditSide {
  const cal = jobCalendarsOf(job);
  if (cal) return calendarSideOf(job, cal, now, opts, count);
  const paused = job.status === 'PAUSED';
  const out: PreviewedOccurrence[] = [];
  if (job.status === 'COMPLETED' || !job.nextNominalAt || !job.nextRunAt)
    return { status: job.status, occurrences: out, due: { ...NOTHING_DUE, onResume: paused } };
  let due: DueOutlook = { ...NOTHING_DUE, onResume: paused };
  let next: PlannedOccurrence | null = {
    nominalTime: job.nextNominalAt,
    scheduledFor: job.nextRunAt,
    dstShiftMs: job.nextDstShiftMs ?? 0,
  };
  let fires = job.firesCount;
  if (job.nextRunAt.getTime() <= now.getTime()) {
    // What the next claim does, as the scheduler plans it (no lookahead: only what is due now).
    const plan = planDueOccurrences(job, job.nextNominalAt, now, { ...opts, lookaheadMs: 0 });
    const coalesced = plan.skips.filter((s) => s.reason === 'COALESCED');
    due = {
      due: true,
      onResume: paused,
      catchUpFires: plan.fires.filter((f) => f.nominalTime.getTime() < now.getTime()).length,
      coalesced: coalesced.reduce((n, s) => n + s.occurrences, 0),
      skipped: plan.skips,
    };
    for (const f of plan.fires.slice(0, count))
      out.push({ ...f, catchUp: f.nominalTime.getTime() < now.getTime(), claimed: false });
    fires += plan.fires.length;
    next = plan.next;
  }
  while (next && out.length < count) {
    out.push({ ...next, catchUp: false, claimed: false });
    fires++;
    const o = nextOccurrenceAfterOccurrence(
      job.schedule,
      { nominal: next.nominalTime, dstShiftMs: next.dstShiftMs ?? 0 },
      fires,
    );
    next =
      o && occurrenceAt(job.jobId, job.schedule, job.policies, o.nominal, opts.herdJitterMs, o.dstShiftMs);
  }
  return { status: job.status, occurrences: out, due };
}

/**
 * sideOf for a job with business calendars: the due part as the scheduler's calendar planner plans it
 * now, then each next occurrence planned at its own instant (so moved ones and skips come out as the
 * claims will make them).
 */
function calendarSideOf(
  job: EditableJob,
  cal: JobCalendars,
  now: Date,
  opts: ClaimPlanOptions,
  count: number,
): EditSide {
  const paused = job.status === 'PAUSED';
  const out: PreviewedOccurrence[] = [];
  if (job.status === 'COMPLETED' || !job.nextNominalAt || !job.nextRunAt)
    return { status: job.status, occurrences: out, due: { ...NOTHING_DUE, onResume: paused } };
  let due: DueOutlook = { ...NOTHING_DUE, onResume: paused };
  let next: PlannedOccurrence | null = {
    nominalTime: job.nextNominalAt,
    scheduledFor: job.nextRunAt,
    dstShiftMs: job.nextDstShiftMs ?? 0,
    calendarShiftMs: job.nextCalendarShiftMs ?? 0,
  };
  let fires = job.firesCount;
  const claimable = job as ClaimableJob;
  if (job.nextRunAt.getTime() <= now.getTime()) {
    const plan = planCalendarOccurrences(claimable, cal, now, { ...opts, lookaheadMs: 0 });
    const coalesced = plan.skips.filter((s) => s.reason === 'COALESCED');
    due = {
      due: true,
      onResume: paused,
      catchUpFires: plan.fires.filter((f) => f.nominalTime.getTime() < now.getTime()).length,
      coalesced: coalesced.reduce((n, s) => n + s.occurrences, 0),
      skipped: plan.skips,
    };
    for (const f of plan.fires.slice(0, count))
      out.push({ ...f, catchUp: f.nominalTime.getTime() < now.getTime(), claimed: false });
    fires += plan.fires.length;
    next = plan.next;
  }
  // Each step plans the occurrences due at the next one's instant: at least one schedule occurrence
  // a step, so the bound is on steps (a stretch of skipped days costs a step each).
  for (let steps = 0; next && out.length < count && steps < count * 50; steps++) {
    const at = new Date(Math.max(next.nominalTime.getTime(), next.scheduledFor.getTime()));
    const plan = planCalendarOccurrences(
      {
        ...claimable,
        nextNominalAt: next.nominalTime,
        nextRunAt: next.scheduledFor,
        nextDstShiftMs: next.dstShiftMs ?? 0,
        nextCalendarShiftMs: next.calendarShiftMs ?? 0,
        firesCount: fires,
        resumeCatchUp: null,
        policies: { ...job.policies, overlap: 'ALLOW', misfire: 'FIRE_ALL', catchUpWindowMs: null },
      },
      cal,
      at,
      {
        ...opts,
        lookaheadMs: 0,
        lateToleranceMs: Number.MAX_SAFE_INTEGER,
        maxCatchUp: Number.MAX_SAFE_INTEGER,
      },
    );
    for (const f of plan.fires) if (out.length < count) out.push({ ...f, catchUp: false, claimed: false });
    fires += plan.fires.length;
    next = plan.next;
  }
  return { status: job.status, occurrences: out, due };
}
