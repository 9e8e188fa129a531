/**
 * Backfill: fire the occurrences of a job between two instants that did not run. A dry run lists
 * exactly the occurrences a backfill would fire (and writes nothing); a backfill stores the plan,
 * and the scheduler holding the job's shard fires it, paced (see BackfillRunner in scheduling).
 * Tenancy as for the job's other calls; creating and cancelling are audited.
 */
import {
  JOB_ID_PATTERN,
  jobCalendarsOf,
  occurrencesInWindow,
  placeByCalendars,
  scheduleZone,
  parseBackfillRequest,
  planBackfill,
  ValidationError,
  backfillIdProblem,
  type BackfillPlan,
  type BackfillRequest,
  type Backfill,
  type BackfillItemState,
  type CommandStamp,
} from '@tickwork/domain';
import { visibleJob, type Caller } from './caller';
import { NotFoundError } from './errors';
import type { JobService } from './job-service';
import type { BackfillStore } from './ports';
import { checkPosition, decodePageToken, encodePageToken, pageSize, TOKEN_FIELD } from './page-token';

/** A dry run's answer: what a backfill of this request would fire, and what it would leave out. */
export interface BackfillPreview {
  readonly jobId: string;
  readonly request: BackfillRequest;
  readonly plan: BackfillPlan;
  /** How long the fires would take at the request's pace (the tenant's cap may slow them). */
  readonly estimatedDurationMs: number;
}

/** A backfill with its planned occurrences (for GET of one). */
export interface BackfillDetail {
  readonly backfill: Backfill;
  readonly occurrences: readonly BackfillItemState[];
}

/** Most occurrences one GET lists: every occurrence of the largest backfill. */
const DETAIL_OCCURRENCES = 10_000;

export class BackfillService {
  constructor(
    private readonly jobs: JobService,
    private readonly backfills: BackfillStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * A backfill of the job over the request's window. `dry_run: true` answers the plan and writes
   * nothing (not audited); otherwise the backfill is stored PENDING (DONE at once when nothing is
   * left to fire) and audited as CreateBackfill, refusals included. A Kafka BACKFILL command
   * (`command`) is applied once per command id, like the job commands.
   */
  async create(
    caller: Caller,
    jobId: string,
    raw: unknown,
    command?: CommandStamp,
  ): Promise<BackfillPreview | Backfill> {
    const dry =
      !command && !!raw && typeof raw === 'object' && (raw as { dry_run?: unknown }).dry_run === true;
    if (dry) return this.preview(caller, jobId, raw);
    return this.jobs.audited(
      caller,
      'CreateBackfill',
      auditJobId(jobId),
      command ? { command } : {},
      async (meta) => {
        const p = await this.preview(caller, jobId, raw);
        const job = visibleJob(caller, jobId, await this.backfills.findJob(jobId));
        return this.backfills.create({
          job,
          request: p.request,
          plan: p.plan,
          createdBy: caller.actor,
          audit: meta.audit,
          ...(command ? { command } : {}),
        });
      },
    );
  }

  private async preview(caller: Caller, jobId: string, raw: unknown): Promise<BackfillPreview> {
    checkJobId(jobId);
    const request = parseBackfillRequest(raw, this.now());
    const job = visibleJob(caller, jobId, await this.backfills.findJob(jobId));
    const inWindow = occurrencesInWindow(job.schedule, request.from, request.to);
    // A job with business calendars fires its occurrences where the calendars put them, and the
    // ledger records them there: the plan compares those, and a calendar's skips are left out.
    const calendars = await this.jobs.businessCalendarsOf(job);
    const cal = calendars ? jobCalendarsOf({ ...job, calendars }) : null;
    const { placed, calendarSkipped } = cal
      ? placeByCalendars(inWindow, cal, scheduleZone(job.schedule))
      : { placed: inWindow, calendarSkipped: 0 };
    // One moved to a day still to come is the schedule's to fire, not the backfill's.
    const nowMs = this.now().getTime();
    const occurrences = placed.filter((o) => o.nominal.getTime() < nowMs);
    const notYetDue = placed.length - occurrences.length;
    // Moved occurrences may fire outside the window: the ledger is read over where they fire too.
    const firstAt = Math.min(request.from.getTime(), occurrences[0]?.nominal.getTime() ?? Infinity);
    const lastAt = Math.max(
      request.to.getTime(),
      (occurrences[occurrences.length - 1]?.nominal.getTime() ?? 0) + 1,
    );
    const ledger = await this.backfills.ledger(jobId, new Date(firstAt), new Date(lastAt));
    const planned = planBackfill(occurrences, ledger, request.skipReasons);
    const excluded = {
      ...planned.excluded,
      ...(calendarSkipped > 0 ? { CALENDAR_SKIP: calendarSkipped } : {}),
      ...(notYetDue > 0 ? { NOT_YET_DUE: notYetDue } : {}),
    };
    const plan = { ...planned, excluded };
    return {
      jobId,
      request,
      plan,
      estimatedDurationMs: Math.round((Math.max(0, plan.items.length - 1) * 1000) / request.maxPerSecond),
    };
  }

  /** A job's backfills, newest first. */
  async list(
    caller: Caller,
    jobId: string,
    page: { pageSize?: number; pageToken?: string },
  ): Promise<{ backfills: Backfill[]; nextPageToken: string }> {
    checkJobId(jobId);
    const limit = pageSize(page.pageSize);
    const kind = `backfills:${jobId}`;
    const pos = decodePageToken(page.pageToken, kind);
    if (pos) checkPosition(pos, { before: TOKEN_FIELD.fenceToken });
    const found = await this.backfills.list(
      jobId,
      limit + 1,
      typeof pos?.before === 'number' ? pos.before : undefined,
    );
    // A deleted job's backfills stay listed for their tenant; another tenant's are not shown.
    const visible = found.filter((b) => caller.tenantId === null || b.tenantId === caller.tenantId);
    // Nothing of the caller's: the job must be one it may see (another tenant's is NOT_FOUND, as on GET).
    if (visible.length === 0) await this.visibleJobOrNotFound(caller, jobId);
    const shown = visible.slice(0, limit);
    const last = shown[shown.length - 1];
    return {
      backfills: shown,
      nextPageToken: found.length > limit && last ? encodePageToken(kind, { before: last.backfillId }) : '',
    };
  }

  /** One backfill of the job, with its planned occurrences and what became of each. */
  async get(caller: Caller, jobId: string, backfillId: string): Promise<BackfillDetail> {
    const backfill = await this.visibleBackfill(caller, jobId, backfillId);
    return {
      backfill,
      occurrences: await this.backfills.items(jobId, backfill.backfillId, DETAIL_OCCURRENCES),
    };
  }

  /** Cancels a backfill: no fire after this call (those already in the outbox go out). Idempotent; audited. */
  async cancel(caller: Caller, jobId: string, backfillId: string): Promise<Backfill> {
    return this.jobs.audited(caller, 'CancelBackfill', auditJobId(jobId), {}, async (meta) => {
      const b = await this.visibleBackfill(caller, jobId, backfillId);
      const after = await this.backfills.cancel(jobId, b.backfillId, caller.actor, meta.audit);
      if (!after) throw new NotFoundError(`backfill ${backfillId} of job ${jobId} not found`);
      return after;
    });
  }

  private async visibleBackfill(caller: Caller, jobId: string, backfillId: string): Promise<Backfill> {
    checkJobId(jobId);
    const problems = backfillIdProblem(backfillId);
    if (problems.length > 0) throw new ValidationError(problems);
    const b = await this.backfills.get(jobId, Number(backfillId));
    if (!b || b.jobId !== jobId || (caller.tenantId !== null && b.tenantId !== caller.tenantId))
      throw new NotFoundError(`backfill ${backfillId} of job ${jobId} not found`);
    return b;
  }

  private async visibleJobOrNotFound(caller: Caller, jobId: string): Promise<void> {
    visibleJob(caller, jobId, await this.backfills.findJob(jobId));
  }
}

/** Whether a create's answer is a dry run's preview. */
export function isBackfillPreview(r: BackfillPreview | Backfill): r is BackfillPreview {
  return (r as BackfillPreview).plan !== undefined;
}

function checkJobId(jobId: string): void {
  if (!JOB_ID_PATTERN.test(jobId))
    throw new ValidationError([
      { field: 'job_id', message: 'must be 1-128 characters of letters, digits, . _ : -' },
    ]);
}

function auditJobId(jobId: string): string {
  return JOB_ID_PATTERN.test(jobId) ? jobId : jobId.slice(0, 200);
}
