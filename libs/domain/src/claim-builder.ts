/**
 * The claim's write, built with no I/O: the planner's plans of the due jobs become fire events
 * (fence tokens consecutive from the job's, fire ids from fireIdOf), the job's next occurrence,
 * the skipped runs of occurrences, and the column arrays the store's statement binds.
 */
import type {
  ClaimBatch,
  ClaimBuilder,
  ClaimedFire,
  ClaimPlanner,
  ClaimSkip,
  DueJob,
  DueTenant,
  FireClaimRow,
  JobClaim,
  SkipClaimRow,
  UnplannableJob,
} from './claim';
import type { DueOccurrencePlan } from './claim-planner';
import { fireIdOf } from './fence';
import type { FireEvent } from './fire';
import { instantRangeProblem, isInstantInRange } from './instant';
import type { ClaimableJob } from './job';
import { storedScheduleProblem, storedTargetProblem } from './job-wire';

/** What in a due job, as stored, the claim cannot work with; undefined when nothing. */
export function storedJobProblem(job: ClaimableJob): string | undefined {
  const schedule = storedScheduleProblem(job.schedule) ?? storedTargetProblem(job.target);
  if (schedule !== undefined) return schedule;
  const nominal = job.nextNominalAt as unknown;
  if (nominal !== null && !(nominal instanceof Date && isInstantInRange(nominal.getTime())))
    return `next_nominal_at ${nominal instanceof Date ? (instantRangeProblem(nominal) ?? '') : `is ${String(nominal)}`}`;
  if (!Number.isSafeInteger(job.fenceToken) || !Number.isSafeInteger(job.firesCount))
    return `fence_token ${job.fenceToken} or fires_count ${job.firesCount} is beyond what the claim can count`;
  return undefined;
}

/** An instant of a plan as ISO text, refusing one the store and the wires cannot hold. */
function planned(at: Date, what: string): string {
  const problem = instantRangeProblem(at);
  if (problem !== undefined) throw new Error(`planned ${what} ${problem}`);
  return at.toISOString();
}

/**
 * The write of one planned job: its i-th fire takes fence token `job.fenceToken + i + 1`. Throws
 * when the plan holds what the store could not (an instant out of range, a token past 2^53).
 */
export function jobClaimOf(job: ClaimableJob, p: DueOccurrencePlan): JobClaim {
  if (!Number.isSafeInteger(job.fenceToken + p.fires.length + 1))
    throw new Error(`fence_token ${job.fenceToken} + ${p.fires.length} is beyond what the claim can count`);
  const fires: ClaimedFire[] = [];
  const fireRows: FireClaimRow[] = [];
  p.fires.forEach((f, i) => {
    const fenceToken = job.fenceToken + i + 1;
    const event: FireEvent = {
      jobId: job.jobId,
      tenantId: job.tenantId,
      fenceToken,
      fireId: fireIdOf({ jobId: job.jobId, fenceToken }),
      scheduledFor: f.scheduledFor,
      nominalTime: f.nominalTime,
      ...(f.spreadOffsetMs ? { spreadOffsetMs: f.spreadOffsetMs } : {}),
      attempt: 1,
      target: job.target,
      payload: job.payload,
      // The job has waited since its due time: a coalesced fire stands for occurrences since then.
      ...(i === 0 && job.nextRunAt && job.nextRunAt.getTime() < f.scheduledFor.getTime()
        ? { dueSince: job.nextRunAt }
        : {}),
    };
    fires.push({ shard: job.shard, batchId: 0, event });
    fireRows.push({
      jobId: job.jobId,
      token: fenceToken,
      nominal: planned(f.nominalTime, 'nominal time'),
      shift: f.dstShiftMs ?? 0,
      scheduled: planned(f.scheduledFor, 'fire time'),
      spread: f.spreadOffsetMs ?? 0,
      calendarShift: f.calendarShiftMs ?? 0,
      calendar: f.calendar ?? null,
    });
  });
  const skips: ClaimSkip[] = [];
  const skipRows: SkipClaimRow[] = [];
  let skipped = 0;
  for (const k of p.skips) {
    skipped += k.occurrences;
    skips.push({ tenantId: job.tenantId, reason: k.reason, occurrences: k.occurrences });
    skipRows.push({
      jobId: job.jobId,
      tenantId: job.tenantId,
      reason: k.reason,
      first: planned(k.firstNominal, 'skipped occurrence'),
      last: planned(k.lastNominal, 'skipped occurrence'),
      count: k.occurrences,
      calendar: k.calendar ?? null,
    });
  }
  return {
    jobId: job.jobId,
    tenantId: job.tenantId,
    dueNominal: job.nextNominalAt,
    n: p.fires.length,
    next: p.next ? planned(p.next.scheduledFor, 'next run') : null,
    nextNominal: p.next ? planned(p.next.nominalTime, 'next occurrence') : null,
    nextShift: p.next?.dstShiftMs ?? 0,
    nextCalendarShift: p.next?.calendarShiftMs ?? 0,
    status: p.next ? 'SCHEDULED' : 'COMPLETED',
    fires,
    fireRows,
    skips,
    skipRows,
    skipped,
  };
}

/**
 * Plans each due job and builds its write; a job stored in a shape the claim cannot work with, or
 * whose plan fails or holds what the store could not, is unplannable (it is parked, the batch goes on).
 */
export function buildClaim(due: readonly DueJob[], now: Date, plan: ClaimPlanner): ClaimBatch {
  const jobs: JobClaim[] = [];
  const unplannable: UnplannableJob[] = [];
  for (const d of due) {
    const job = d.job;
    try {
      const problem = storedJobProblem(job);
      if (problem !== undefined) throw new Error(problem);
      jobs.push(jobClaimOf(job, plan(d, now)));
    } catch (e) {
      unplannable.push({
        jobId: job.jobId,
        tenantId: job.tenantId,
        nominal: job.nextNominalAt,
        error: (e as Error).message,
      });
    }
  }
  return { jobs, unplannable };
}

/** The claim builder of a planner. */
export function claimBuilderOf(plan: ClaimPlanner): ClaimBuilder {
  return (due, now) => buildClaim(due, now, plan);
}

/** The column arrays of a group of jobs' claim write, one array per bound parameter. */
export interface ClaimColumns {
  readonly jobs: {
    readonly jobId: string[];
    readonly n: number[];
    readonly next: (string | null)[];
    readonly nextNominal: (string | null)[];
    readonly status: string[];
    readonly nextShift: number[];
    readonly nextCalendarShift: number[];
  };
  readonly fires: {
    readonly jobId: string[];
    readonly token: number[];
    readonly nominal: string[];
    readonly scheduled: string[];
    readonly trace: (string | null)[];
    readonly shard: number[];
    readonly shift: number[];
    readonly spread: number[];
    readonly calendarShift: number[];
    readonly calendar: (string | null)[];
  };
  readonly skips: {
    readonly jobId: string[];
    readonly tenantId: string[];
    readonly reason: string[];
    readonly first: string[];
    readonly last: string[];
    readonly count: number[];
    readonly calendar: (string | null)[];
  };
}

/** The column arrays a claim's statements bind for `group` (one pass, arrays per batch). */
export function claimColumns(group: readonly JobClaim[]): ClaimColumns {
  const c: ClaimColumns = {
    jobs: { jobId: [], n: [], next: [], nextNominal: [], status: [], nextShift: [], nextCalendarShift: [] },
    fires: {
      jobId: [],
      token: [],
      nominal: [],
      scheduled: [],
      trace: [],
      shard: [],
      shift: [],
      spread: [],
      calendarShift: [],
      calendar: [],
    },
    skips: { jobId: [], tenantId: [], reason: [], first: [], last: [], count: [], calendar: [] },
  };
  for (const w of group) {
    const j = c.jobs;
    j.jobId.push(w.jobId);
    j.n.push(w.n);
    j.next.push(w.next);
    j.nextNominal.push(w.nextNominal);
    j.status.push(w.status);
    j.nextShift.push(w.nextShift);
    j.nextCalendarShift.push(w.nextCalendarShift);
    const f = c.fires;
    w.fireRows.forEach((r, i) => {
      f.jobId.push(r.jobId);
      f.token.push(r.token);
      f.nominal.push(r.nominal);
      f.scheduled.push(r.scheduled);
      f.trace.push(w.traces?.[i] ?? null);
      f.shard.push(w.fires[i]!.shard);
      f.shift.push(r.shift);
      f.spread.push(r.spread);
      f.calendarShift.push(r.calendarShift);
      f.calendar.push(r.calendar);
    });
    const k = c.skips;
    for (const s of w.skipRows) {
      k.jobId.push(s.jobId);
      k.tenantId.push(s.tenantId);
      k.reason.push(s.reason);
      k.first.push(s.first);
      k.last.push(s.last);
      k.count.push(s.count);
      k.calendar.push(s.calendar);
    }
  }
  return c;
}

/** The (shard, tenant) lanes a claim scans, each with the most jobs it may take. */
export interface ClaimLanes {
  readonly shard: number[];
  readonly tenant: string[];
  readonly cap: number[];
}

/**
 * The lanes of a claim: each tenant with due work in a held shard, its cap (`caps`, default
 * `limit`) spread over the shards where it has due work; lanes left with no room are dropped.
 */
export function claimLanes(
  due: readonly DueTenant[],
  caps: ReadonlyMap<string, number> | undefined,
  limit: number,
): ClaimLanes {
  const shardsPerTenant = new Map<string, number>();
  for (const d of due) shardsPerTenant.set(d.tenant_id, (shardsPerTenant.get(d.tenant_id) ?? 0) + 1);
  const lanes: ClaimLanes = { shard: [], tenant: [], cap: [] };
  for (const d of due) {
    const cap = Math.ceil((caps ? (caps.get(d.tenant_id) ?? 0) : limit) / shardsPerTenant.get(d.tenant_id)!);
    if (cap <= 0) continue;
    lanes.shard.push(d.shard);
    lanes.tenant.push(d.tenant_id);
    lanes.cap.push(cap);
  }
  return lanes;
}

/** Some lane filled its cap (`taken`: rows locked per `${shard}|${tenant}`): more may be due now. */
export function lanesSaturated(lanes: ClaimLanes, taken: ReadonlyMap<string, number>): boolean {
  return lanes.shard.some((s, i) => (taken.get(`${s}|${lanes.tenant[i]}`) ?? 0) >= lanes.cap[i]!);
}
