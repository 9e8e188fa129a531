/**
 * What happened to jobs, for the admin API: runs, the occurrence ledger, dead letters, and the
 * replay of a dead letter as a new fire. Tenancy and audit as in JobService.
 */
import {
  fireIdOf,
  JOB_ID_PATTERN,
  ValidationError,
  type DeadLetterEntry,
  type FireEvent,
  type LedgerRun,
  type MutationMeta,
  type OccurrenceEntry,
} from '@tickwork/domain';
import { tenantScope, visibleJob, type Caller } from './caller';
import { NotFoundError, PreconditionFailedError } from './errors';
import type { JobService } from './job-service';
import { checkPosition, decodePageToken, encodePageToken, pageSize, TOKEN_FIELD } from './page-token';
import type { HistoryStore, JobStore } from './ports';

export interface Page {
  readonly pageSize?: number;
  readonly pageToken?: string;
}

/** A dead letter's identity is its fire id, `job_id:fence_token`. */
export function parseFireId(fireId: string, field = 'fire_id'): { jobId: string; fenceToken: number } {
  const at = fireId.lastIndexOf(':');
  const fenceToken = Number(fireId.slice(at + 1));
  if (
    at <= 0 ||
    !JOB_ID_PATTERN.test(fireId.slice(0, at)) ||
    !/^\d{1,15}$/.test(fireId.slice(at + 1)) ||
    !Number.isSafeInteger(fenceToken)
  ) {
    throw new ValidationError([{ field, message: 'must be job_id:fence_token, e.g. nightly-report:42' }]);
  }
  return { jobId: fireId.slice(0, at), fenceToken };
}

export class JobHistoryService {
  constructor(
    private readonly jobs: JobStore,
    private readonly history: HistoryStore,
    private readonly service: JobService,
  ) {}

  /** A job's runs, newest first. */
  async listRuns(
    caller: Caller,
    jobId: string,
    page: Page,
  ): Promise<{ runs: LedgerRun[]; nextPageToken: string }> {
    checkJobId(jobId);
    visibleJob(caller, jobId, await this.jobs.findJob(jobId));
    const limit = pageSize(page.pageSize);
    const pos = decodePageToken(page.pageToken, `runs:${jobId}`);
    if (pos) checkPosition(pos, { before: TOKEN_FIELD.fenceToken });
    const runs = await this.history.listRuns(
      jobId,
      limit + 1,
      typeof pos?.before === 'number' ? pos.before : undefined,
    );
    const shown = runs.slice(0, limit);
    const last = shown[shown.length - 1];
    return {
      runs: shown,
      nextPageToken:
        runs.length > limit && last ? encodePageToken(`runs:${jobId}`, { before: last.fenceToken }) : '',
    };
  }

  /** The last run of each job of a page the caller was already allowed to list. */
  async lastRuns(jobIds: readonly string[]): Promise<Map<string, LedgerRun>> {
    return this.history.lastRuns(jobIds);
  }

  /** One run of a job the caller may see. */
  async getRun(caller: Caller, jobId: string, fenceToken: number): Promise<LedgerRun> {
    checkJobId(jobId);
    visibleJob(caller, jobId, await this.jobs.findJob(jobId));
    if (!Number.isSafeInteger(fenceToken) || fenceToken < 1)
      throw new ValidationError([{ field: 'fence_token', message: 'must be a positive integer' }]);
    const run = await this.history.findRun(jobId, fenceToken);
    if (!run) throw new NotFoundError(`run ${fireIdOf({ jobId, fenceToken })} not found`);
    return run;
  }

  /** The occurrence ledger of a job, newest first: fires, and ranges that were skipped or coalesced. */
  async listOccurrences(
    caller: Caller,
    jobId: string,
    page: Page,
  ): Promise<{ occurrences: OccurrenceEntry[]; nextPageToken: string }> {
    checkJobId(jobId);
    visibleJob(caller, jobId, await this.jobs.findJob(jobId));
    const limit = pageSize(page.pageSize);
    const kind = `occurrences:${jobId}`;
    const pos = decodePageToken(page.pageToken, kind);
    if (pos)
      checkPosition(pos, {
        at: TOKEN_FIELD.instant,
        kind: TOKEN_FIELD.oneOf('FIRE', 'SKIP'),
        seq: TOKEN_FIELD.fenceToken,
      });
    const cursor =
      pos &&
      typeof pos.at === 'string' &&
      (pos.kind === 'FIRE' || pos.kind === 'SKIP') &&
      typeof pos.seq === 'number'
        ? { at: pos.at, kind: pos.kind as 'FIRE' | 'SKIP', seq: pos.seq }
        : undefined;
    const entries = await this.history.listOccurrences(jobId, limit + 1, cursor);
    const shown = entries.slice(0, limit);
    const last = shown[shown.length - 1];
    return {
      occurrences: shown,
      nextPageToken: entries.length > limit && last ? encodePageToken(kind, { ...last.cursor }) : '',
    };
  }

  /** Dead-lettered fires the caller may see, newest first. */
  async listDeadLetters(
    caller: Caller,
    req: Page & { tenantId?: string; jobId?: string },
  ): Promise<{ deadLetters: DeadLetterEntry[]; nextPageToken: string }> {
    const tenantId = tenantScope(caller, req.tenantId, 'tenant_id');
    const limit = pageSize(req.pageSize);
    if (req.jobId && !JOB_ID_PATTERN.test(req.jobId))
      throw new ValidationError([
        { field: 'job_id', message: 'must be 1-128 characters of letters, digits, . _ : -' },
      ]);
    const filters = { tenant_id: tenantId, job_id: req.jobId };
    const pos = decodePageToken(req.pageToken, 'dead-letters', filters);
    if (pos)
      checkPosition(pos, {
        atMicros: TOKEN_FIELD.micros,
        jobId: TOKEN_FIELD.jobId,
        fenceToken: TOKEN_FIELD.fenceToken,
      });
    const before =
      pos &&
      typeof pos.atMicros === 'string' &&
      typeof pos.jobId === 'string' &&
      typeof pos.fenceToken === 'number'
        ? { atMicros: pos.atMicros, jobId: pos.jobId, fenceToken: pos.fenceToken }
        : undefined;
    const rows = await this.history.listDeadLetters({
      tenantId,
      jobId: req.jobId || undefined,
      limit: limit + 1,
      before,
    });
    const shown = rows.slice(0, limit);
    const last = shown[shown.length - 1];
    return {
      deadLetters: shown,
      nextPageToken:
        rows.length > limit && last ? encodePageToken('dead-letters', { ...last.cursor }, filters) : '',
    };
  }

  /**
   * Re-enqueues a dead-lettered fire as a new fire of its job: a new fence token (so the executor's
   * ledger runs it), attempt 1, the original nominal time, trigger REPLAY. Each dead letter once.
   */
  async replayDeadLetter(caller: Caller, fireId: string): Promise<FireEvent> {
    const named = fireId.slice(0, Math.max(0, fireId.lastIndexOf(':')));
    const auditedJobId = JOB_ID_PATTERN.test(named) ? named : null;
    return this.service.audited(
      caller,
      'ReplayDeadLetter',
      auditedJobId,
      { details: { fire_id: fireId.slice(0, 200) } },
      (meta) => this.replay(caller, fireId, meta),
    );
  }

  private async replay(caller: Caller, fireId: string, meta: MutationMeta): Promise<FireEvent> {
    const { jobId, fenceToken } = parseFireId(fireId);
    return this.jobs.mutate(jobId, meta, async (found, tx) => {
      const dead = await tx.deadLetter(fenceToken);
      if (!dead || (caller.tenantId !== null && dead.run.tenantId !== caller.tenantId))
        throw new NotFoundError(`dead letter ${fireId} not found`);
      const job = visibleJob(caller, jobId, found);
      if (dead.replayFenceToken !== null) {
        throw new PreconditionFailedError(
          `dead letter ${fireId} was already replayed as ${fireIdOf({ jobId, fenceToken: dead.replayFenceToken })}`,
        );
      }
      const original = dead.event;
      const fire = await tx.recordFire(
        'REPLAY',
        `replay:${caller.actor}`,
        (newToken, now) => ({
          jobId,
          tenantId: job.tenantId,
          fenceToken: newToken,
          fireId: fireIdOf({ jobId, fenceToken: newToken }),
          scheduledFor: now,
          nominalTime: dead.run.nominalTime,
          attempt: 1,
          target: original?.target ?? job.target,
          payload: original ? original.payload : job.payload,
        }),
        // The replay repeats the original fire's target and payload: it ran under that fire's version.
        original ? dead.run.jobVersion : undefined,
      );
      await tx.markReplayed(fenceToken, fire.fenceToken, caller.actor);
      tx.note({ replayed_fire_id: fireId });
      return fire;
    });
  }
}

function checkJobId(jobId: string): void {
  if (!JOB_ID_PATTERN.test(jobId))
    throw new ValidationError([
      { field: 'job_id', message: 'must be 1-128 characters of letters, digits, . _ : -' },
    ]);
}
