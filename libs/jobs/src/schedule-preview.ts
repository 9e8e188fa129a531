/**
 * PreviewSchedule: the next fire times of a schedule, without creating a job.
 *
 * A preview is work done on the event loop for one request, so it is bounded three ways: by count
 * (at most 1000), by time (nothing past PREVIEW_HORIZON_MS after `from`, nor past the end of the
 * instant range) and by work (PREVIEW_WORK_BUDGET_MS of CPU time in all). The work is done in
 * slices of PREVIEW_SLICE_MS, one slice of one preview per turn of the event loop, so any other
 * request (a health check) waits behind one slice at most, however many previews are in flight. A
 * list cut by the horizon or the budget says so (`truncatedBy`).
 */
import { performance } from 'node:perf_hooks';
import {
  applyCalendarRule,
  compileCron,
  DEFAULT_POLICIES,
  JOB_ID_PATTERN,
  MAX_INTERVAL_MS,
  spreadOffsetMs,
  spreadProblem,
  usesHashToken,
  instantRangeProblem,
  LATEST_INSTANT_MS,
  MAX_PREVIEW_FIRES,
  OccurrenceCursor,
  parseSchedule,
  SearchBudgetExceeded,
  ValidationError,
  zoneOffsetMs,
  type FieldViolation,
  type JobCalendars,
  type Occurrence,
  type Schedule,
} from '@tickwork/domain';

export interface PreviewedFire {
  readonly at: Date;
  /** Wall-clock time in the schedule's zone with its UTC offset, e.g. 2026-03-29T09:00:00+01:00. */
  readonly localTime: string;
  readonly timeZone: string;
  /**
   * Null unless dst_gap SHIFT moved this fire past a DST gap: then the wall time the schedule named,
   * with the offset before the gap (the same instant), e.g. 2026-03-08T02:45:00-05:00 for a fire at
   * 03:45-04:00. Such a fire may share `at` with the next one (its own occurrence, listed too).
   */
  readonly shiftedFrom: string | null;
  /** With a herd window (spread_ms): the slot the occurrence fires at (at + spreadOffsetMs); else null. */
  readonly slotAt: Date | null;
  readonly spreadOffsetMs: number | null;
  /**
   * With business calendars: CALENDAR_SHIFT when the rule moved this occurrence off a closed day (`at`
   * is the moved instant; shiftMs how far), CALENDAR_SKIP when it does not fire; why the day is closed
   * (a holiday's name, a weekday, "business day" under ONLY_CLOSED_DAYS). Absent otherwise.
   */
  readonly calendar?: {
    readonly reason: 'CALENDAR_SHIFT' | 'CALENDAR_SKIP';
    readonly name: string;
    readonly version: number;
    readonly why: string;
    readonly shiftMs?: number;
  };
}

/** Why a preview holds fewer fires than asked for although the schedule may go on. */
export type PreviewCut = 'HORIZON' | 'WORK_BUDGET';

export interface SchedulePreview {
  readonly fires: readonly PreviewedFire[];
  /** Null: the list is whole (as many as asked for, or the schedule ends). Else where the search stopped. */
  readonly truncatedBy: PreviewCut | null;
  /** A cron expression with `H` tokens as the job places them (e.g. `H 9 * * *` → `37 9 * * *`); else null. */
  readonly resolvedExpression: string | null;
}

/** A preview looks this far past `from` at most (about 100 years). */
export const PREVIEW_HORIZON_MS = 100 * 366 * 86_400_000;
/** Longest stretch a preview computes without yielding to the event loop. */
export const PREVIEW_SLICE_MS = 4;
/** Most CPU time one preview may take in all (its slices together). */
export const PREVIEW_WORK_BUDGET_MS = 250;

export interface PreviewOptions {
  readonly count?: number;
  readonly from?: Date;
  readonly now: Date;
  readonly minIntervalMs: number;
  /** The job the preview is for: places `H` tokens and herd-window slots (both stable per job id). */
  readonly jobId?: string;
  /** A herd window (policies.spread_ms) to show each occurrence's slot in. */
  readonly spreadMs?: number;
  /** Business calendars (resolved) and the rule to show each occurrence through (policies.calendars). */
  readonly calendars?: JobCalendars;
  /** For tests: the slice and the budget (ms). */
  readonly sliceMs?: number;
  readonly workBudgetMs?: number;
}

/**
 * Validates a wire schedule and lists up to `count` (default 10, at most 1000) fires from `from`
 * (default now), within the horizon and the work budget.
 */
export async function previewSchedule(raw: unknown, opts: PreviewOptions): Promise<SchedulePreview> {
  await nextTurn();
  let sliceCpu = process.cpuUsage();
  const count = opts.count === undefined || opts.count === 0 ? 10 : opts.count;
  const violations: FieldViolation[] = [];
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_PREVIEW_FIRES)
    violations.push({ field: 'count', message: `must be between 1 and ${MAX_PREVIEW_FIRES}` });
  const from = opts.from ?? opts.now;
  const fromProblem = instantRangeProblem(from);
  if (fromProblem !== undefined) violations.push({ field: 'from', message: fromProblem });
  const jobId = opts.jobId === undefined || opts.jobId === '' ? undefined : opts.jobId;
  if (jobId !== undefined && !JOB_ID_PATTERN.test(jobId))
    violations.push({ field: 'job_id', message: 'must be 1-128 characters of letters, digits, . _ : -' });
  const spreadMs = opts.spreadMs ?? 0;
  if (!Number.isSafeInteger(spreadMs) || spreadMs < 0 || spreadMs > MAX_INTERVAL_MS)
    violations.push({ field: 'spread_ms', message: `must be an integer from 0 to ${MAX_INTERVAL_MS}` });
  const parsed = parseSchedule(raw, {
    minIntervalMs: opts.minIntervalMs,
    now: opts.now,
    ...(jobId !== undefined ? { hashSeed: jobId } : {}),
  });
  if (!parsed.ok) violations.push(...parsed.violations);
  if (parsed.ok && jobId === undefined) {
    // Both are stable per job: without its id the preview would show some other job's times.
    const hashed = parsed.schedule.kind === 'cron' && usesHashToken(parsed.schedule.expression);
    if (hashed)
      violations.push({
        field: 'job_id',
        message: 'is required to place the H tokens of the expression (they are stable per job id)',
      });
    else if (spreadMs > 0)
      violations.push({
        field: 'job_id',
        message: 'is required to place the herd-window slots of spread_ms (they are stable per job id)',
      });
  }
  if (parsed.ok && spreadMs > 0 && Number.isSafeInteger(spreadMs)) {
    const problem = spreadProblem(parsed.schedule, { ...DEFAULT_POLICIES, spreadMs });
    if (problem) violations.push({ field: 'spread_ms', message: problem });
  }
  if (violations.length > 0 || !parsed.ok) throw new ValidationError(violations);

  // The validation was a slice of its own (a first schedule in a zone works out a few years of it).
  const validated = process.cpuUsage(sliceCpu);
  await nextTurn();
  const schedule = parsed.schedule;
  const resolvedExpression =
    schedule.kind === 'cron' && usesHashToken(schedule.expression)
      ? compileCron(schedule.expression, schedule.hashSeed).resolvedExpression
      : null;
  const slot = (o: Occurrence): Pick<PreviewedFire, 'slotAt' | 'spreadOffsetMs'> => {
    if (spreadMs === 0 || jobId === undefined) return { slotAt: null, spreadOffsetMs: null };
    const offset = spreadOffsetMs(jobId, o.nominal, spreadMs, o.dstShiftMs);
    return { slotAt: new Date(o.nominal.getTime() + offset), spreadOffsetMs: offset };
  };
  const zone = schedule.kind === 'cron' || schedule.kind === 'rrule' ? schedule.timeZone : 'UTC';
  // As the claim plans them (planCalendarOccurrences): in schedule order, a moved occurrence held at
  // the previous one's instant, moves to before `from` passed over.
  let floor = -Infinity;
  const throughCalendars = (o: Occurrence): PreviewedFire | null => {
    const cal = opts.calendars!;
    const d = applyCalendarRule(cal.calendars, cal.rule, o.nominal.getTime(), zone);
    if (d.kind === 'SKIP')
      return {
        ...previewedFire(o, zone),
        ...slot(o),
        calendar: { reason: 'CALENDAR_SKIP', name: d.calendar.name, version: d.calendar.version, why: d.why },
      };
    const at = Math.max(d.at, floor);
    if (at < from.getTime()) return null;
    floor = at;
    const moved: Occurrence = { nominal: new Date(at), dstShiftMs: o.dstShiftMs };
    const base = { ...previewedFire(moved, zone), ...slot(moved) };
    if (d.kind === 'FIRE' && at === d.at) return base;
    const closure = d.kind === 'SHIFT' ? d : null;
    return {
      ...base,
      calendar: {
        reason: 'CALENDAR_SHIFT',
        name: closure?.calendar.name ?? cal.calendars.calendars[0]!.name,
        version: closure?.calendar.version ?? cal.calendars.calendars[0]!.version,
        why: closure?.why ?? 'held behind the previous occurrence',
        shiftMs: at - o.nominal.getTime(),
      },
    };
  };
  const horizon = Math.min(from.getTime() + PREVIEW_HORIZON_MS, LATEST_INSTANT_MS);
  const cursor = new OccurrenceCursor(schedule, from, 0, horizon);
  const sliceMs = opts.sliceMs ?? PREVIEW_SLICE_MS;
  const budgetMs = opts.workBudgetMs ?? PREVIEW_WORK_BUDGET_MS;
  const fires: PreviewedFire[] = [];
  // The budget counts CPU time, not wall time: on a busy host the slices take longer by the clock,
  // and a preview should not come back shorter for it.
  let worked = (validated.user + validated.system) / 1_000;
  let sliceStart = performance.now();
  sliceCpu = process.cpuUsage();
  const sliceOver = () => performance.now() - sliceStart >= sliceMs;
  for (;;) {
    if (fires.length >= count) return { fires, truncatedBy: null, resolvedExpression };
    let next: Occurrence | null | 'SLICE_OVER';
    try {
      next = cursor.next(sliceOver);
    } catch (e) {
      if (!(e instanceof SearchBudgetExceeded)) throw e;
      next = 'SLICE_OVER'; // the cursor stays put; the zone years worked out so far are cached
    }
    if (next === null)
      return { fires, truncatedBy: endsBy(schedule, fires.length, horizon), resolvedExpression };
    if (next !== 'SLICE_OVER') {
      const entry = opts.calendars ? throughCalendars(next) : { ...previewedFire(next, zone), ...slot(next) };
      if (entry) fires.push(entry);
    }
    if (next === 'SLICE_OVER' || sliceOver()) {
      const used = process.cpuUsage(sliceCpu);
      worked += (used.user + used.system) / 1_000;
      if (worked >= budgetMs) return { fires, truncatedBy: 'WORK_BUDGET', resolvedExpression };
      await nextTurn();
      sliceStart = performance.now();
      sliceCpu = process.cpuUsage();
    }
  }
}

/**
 * The previews in flight take turns: one slice per turn of the event loop, whatever their number,
 * so any other request waits behind one slice at most (not one slice of every preview).
 */
const waitingTurns: (() => void)[] = [];
let turnScheduled = false;

function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waitingTurns.push(resolve);
    scheduleTurn();
  });
}

function scheduleTurn(): void {
  if (turnScheduled || waitingTurns.length === 0) return;
  turnScheduled = true;
  // Set from a check-phase callback, an immediate runs in the next turn: I/O is polled in between.
  setImmediate(() => {
    turnScheduled = false;
    waitingTurns.shift()!(); // its slice runs in the microtasks right after this callback
    scheduleTurn();
  });
}

/** Null when the schedule itself ends by the horizon; 'HORIZON' when it may go on past it. */
function endsBy(schedule: Schedule, found: number, horizon: number): PreviewCut | null {
  if (schedule.kind === 'once') return null;
  if (schedule.maxFires !== undefined && found >= schedule.maxFires) return null;
  if (schedule.endAt !== undefined && schedule.endAt.getTime() <= horizon) return null;
  return horizon >= LATEST_INSTANT_MS ? null : 'HORIZON';
}

function previewedFire(o: Occurrence, timeZone: string): Omit<PreviewedFire, 'slotAt' | 'spreadOffsetMs'> {
  const offset = zoneOffsetMs(timeZone, o.nominal);
  return {
    at: o.nominal,
    localTime: wallTime(o.nominal, offset),
    timeZone,
    // The named wall time is the instant read with the offset before the gap (gap length less).
    shiftedFrom: o.dstShiftMs === 0 ? null : wallTime(o.nominal, offset - o.dstShiftMs),
  };
}

/** An instant as wall-clock time in a zone, ISO-8601 with the zone's offset at that instant. */
export function localTime(at: Date, timeZone: string): string {
  return wallTime(at, zoneOffsetMs(timeZone, at));
}

/** An instant as ISO-8601 wall-clock time at a UTC offset (ms). */
function wallTime(at: Date, offset: number): string {
  const wall = new Date(at.getTime() + offset).toISOString().slice(0, 19);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset) / 60_000;
  return `${wall}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
