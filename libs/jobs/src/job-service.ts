/**
 * The jobs application service: the one path by which a job is created or changed, shared by
 * REST, gRPC and the Kafka commands consumer, so every entry point validates, authorizes, applies
 * quotas and audits alike. Changes run under the job's row lock (see JobStore.mutate), so they
 * are safe to race with a scheduler claim.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { TenantQuotas } from '@tickwork/config';
import {
  DEFAULT_EDIT_PREVIEW_OCCURRENCES,
  fireIdOf,
  firstOccurrenceAtOrAfter,
  firstPlannedOccurrence,
  MAX_EDIT_PREVIEW_OCCURRENCES,
  previewEdit,
  stateAfterEdit,
  JOB_ID_PATTERN,
  JOB_STATUSES,
  jobToWire,
  occurrenceAt,
  parseJobDefinition,
  restoreMaskedSecrets,
  shardOf,
  unstorableTextProblem,
  ValidationError,
  type BusinessCalendar,
  type EditImpact,
  type FireEvent,
  type Job,
  type JobDefinition,
  type JobDefinitionLimits,
  type JobStatus,
  type JsonValue,
  type PlannedOccurrence,
  DuplicateCommandError,
  type AuditEntry,
  type CommandStamp,
  type LedgerRun,
  type MutationMeta,
} from '@tickwork/domain';
import { tenantScope, visibleJob, type Caller } from './caller';
import {
  errorCodeOf,
  IdempotencyKeyReusedError,
  JobNotFoundError,
  PreconditionFailedError,
  QuotaExceededError,
} from './errors';
import type { Via } from './caller';
import { decodePageToken, encodePageToken, pageSize } from './page-token';
import type { CalendarResolver, HistoryStore, JobStore, LockedJob } from './ports';

export { JobNotFoundError } from './errors';

export interface JobServiceOptions {
  readonly shardCount: number;
  readonly limits: JobDefinitionLimits;
  /** The cluster's herd jitter window (see occurrenceAt). */
  readonly herdJitterMs: number;
  /** A tenant's quotas (the tenant registry's quotasFor); unlimited when absent. */
  readonly quotas?: (tenantId: string) => TenantQuotas;
  /**
   * The scheduler's claim settings (its TICKWORK_MAX_CATCH_UP, TICKWORK_LOOKAHEAD_MS), so an edit
   * preview plans due occurrences as the scheduler will. Default: max_catch_up 100, no lookahead.
   */
  readonly claimPlan?: { readonly maxCatchUp: number; readonly lookaheadMs?: number };
  /** The clock used for defaults such as an interval's anchor; due-ness uses the database clock. */
  readonly now?: () => Date;
  /** Resolves the business calendars jobs name (policies.calendars); absent: jobs may name none. */
  readonly calendars?: CalendarResolver;
}

/**
 * A ListJobs page holds at most about this many bytes of payloads, targets and labels (and at least
 * one job): a shorter page than asked for, with a next_page_token, means there is more. Reading and
 * writing a page happens on the API's event loop, at about 16 ms of CPU per MiB; a page of a
 * thousand 256 KiB payloads took 4.5 s of it.
 */
export const LIST_JOBS_PAGE_MAX_BYTES = 1024 * 1024;

/** Top-level fields of a job that UpdateJob may replace. */
export const UPDATABLE_FIELDS = ['schedule', 'target', 'payload', 'policies', 'labels'] as const;
export type UpdatableField = (typeof UPDATABLE_FIELDS)[number];

/** A dry-run update: the job now, as the edit would leave it, and the edit's impact. */
export interface UpdatePreview {
  readonly current: Job;
  /** The job as the update would store it (version: the one it would get); not stored. */
  readonly edited: Job;
  readonly impact: EditImpact;
  /** Occurrences listed per side. */
  readonly count: number;
}

export interface JobListRequest {
  readonly tenantId?: string;
  readonly status?: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** Label values a job must not have (`env!=prod`). */
  readonly labelsNot?: Readonly<Record<string, string>>;
  /** Jobs whose id starts with this. */
  readonly jobIdPrefix?: string;
  /** `webhook` or `kafka`. */
  readonly targetType?: string;
  readonly pageSize?: number;
  readonly pageToken?: string;
}

/** How long a CreateJob idempotency key keeps answering with its job: 24 hours. */
export const IDEMPOTENCY_KEY_RETENTION_MS = 24 * 3_600_000;

/** An idempotency key: 1-255 printable ASCII characters (what an HTTP header value can carry plainly). */
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** The etag of a job version: opaque to clients, `v<version>`. */
export function etagOf(job: Job): string {
  return `v${job.version}`;
}

/** The version an etag names; INVALID_ARGUMENT for anything this service did not issue. */
export function versionOfEtag(etag: string, field = 'etag'): number {
  const m = /^(?:W\/)?"?v(\d{1,15})"?$/.exec(etag.trim());
  if (!m) throw new ValidationError([{ field, message: 'is not an etag issued by this API (e.g. "v3")' }]);
  return Number(m[1]);
}

export class JobService {
  private readonly now: () => Date;

  constructor(
    private readonly jobs: JobStore,
    private readonly history: HistoryStore,
    private readonly opts: JobServiceOptions,
  ) {
    this.now = opts.now ?? (() => new Date());
  }

  /**
   * Validates and stores a new job for the caller's tenant; throws ValidationError naming each bad
   * field. With an idempotency key, a repeat of the same request (within the retention) returns
   * the job the first one created instead of creating another; another request under the same key
   * is refused (IdempotencyKeyReusedError).
   */
  async createJob(
    caller: Caller,
    raw: unknown,
    command?: CommandStamp,
    opts: { idempotencyKey?: string; idempotencyKeyField?: string } = {},
  ): Promise<Job> {
    const body =
      raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
    const namedId = typeof body?.job_id === 'string' ? body.job_id : null;
    return this.audited(caller, 'CreateJob', namedId, { command }, async (meta) => {
      if (body && body.tenant_id !== undefined && typeof body.tenant_id !== 'string')
        throw new ValidationError([{ field: 'tenant_id', message: 'must be a string' }]);
      const key = opts.idempotencyKey;
      if (key !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(key))
        throw new ValidationError([
          {
            field: opts.idempotencyKeyField ?? 'idempotency_key',
            message: 'must be 1-255 printable ASCII characters (no spaces)',
          },
        ]);
      const tenantId =
        tenantScope(caller, typeof body?.tenant_id === 'string' ? body.tenant_id : undefined, 'tenant_id') ??
        'default';
      const definition = this.parse(this.withSecretsRestored(raw, null), tenantId);
      if (key === undefined)
        return this.jobs.mutate(definition.jobId, meta, async (_existing, tx) => this.insert(tx, definition));
      const requestSha256 = createHash('sha256').update(canonicalJson(raw)).digest('hex');
      // Twice at most: a concurrent call with the same key that commits first is found the second time.
      for (let attempt = 1; ; attempt++) {
        const prior = await this.jobs.findIdempotencyKey(tenantId, key, IDEMPOTENCY_KEY_RETENTION_MS);
        if (prior) {
          if (prior.requestSha256 !== requestSha256) throw new IdempotencyKeyReusedError(key);
          const job = await this.jobs.findJob(prior.jobId);
          if (!job) throw new JobNotFoundError(prior.jobId);
          await this.jobs.recordRefusal(meta.audit, {
            tenantId,
            jobId: job.jobId,
            outcome: 'OK',
            details: { idempotency_key: key, replayed: true },
          });
          return job;
        }
        try {
          return await this.jobs.mutate(definition.jobId, meta, async (_existing, tx) => {
            if (!(await tx.claimIdempotencyKey(tenantId, key, requestSha256, IDEMPOTENCY_KEY_RETENTION_MS)))
              throw new KeyTakenMeanwhile();
            return this.insert(tx, definition);
          });
        } catch (e) {
          if (!(e instanceof KeyTakenMeanwhile) || attempt >= 2) throw e;
        }
      }
    });
  }

  /** A job and its most recent runs. */
  async getJob(
    caller: Caller,
    jobId: string,
    opts: { runs?: number } = {},
  ): Promise<{ job: Job; recentRuns: LedgerRun[] }> {
    checkJobId(jobId);
    const job = visibleJob(caller, jobId, await this.jobs.findJob(jobId));
    const recentRuns = await this.history.listRuns(jobId, opts.runs ?? 1);
    return { job, recentRuns };
  }

  /** Jobs the caller may see, filtered, ordered by job id, paged. */
  async listJobs(caller: Caller, req: JobListRequest): Promise<{ jobs: Job[]; nextPageToken: string }> {
    const tenantId = tenantScope(caller, req.tenantId, 'tenant_id');
    let status: JobStatus | undefined;
    if (req.status !== undefined && req.status !== '') {
      if (!(JOB_STATUSES as readonly string[]).includes(req.status))
        throw new ValidationError([
          { field: 'status', message: `must be one of ${JOB_STATUSES.join(', ')}` },
        ]);
      status = req.status as JobStatus;
    }
    const labels = req.labels ?? {};
    const labelsNot = req.labelsNot ?? {};
    const labelProblems = [...Object.entries(labels), ...Object.entries(labelsNot)].flatMap(([k, v]) => {
      const problem = unstorableTextProblem(k) ?? unstorableTextProblem(v);
      return problem ? [{ field: `labels.${k}`, message: problem }] : [];
    });
    if (labelProblems.length > 0) throw new ValidationError(labelProblems);
    if (
      req.targetType !== undefined &&
      req.targetType !== '' &&
      !['webhook', 'kafka'].includes(req.targetType)
    )
      throw new ValidationError([{ field: 'target_type', message: 'must be one of webhook, kafka' }]);
    // Any other prefix merely matches nothing; text PostgreSQL cannot hold would fail the query.
    const prefixProblem = req.jobIdPrefix ? unstorableTextProblem(req.jobIdPrefix) : undefined;
    if (prefixProblem) throw new ValidationError([{ field: 'job_id_prefix', message: prefixProblem }]);
    const limit = pageSize(req.pageSize);
    // The token is bound to the effective filters (the tenant scope as resolved, not as asked).
    const filters = {
      tenant_id: tenantId,
      status,
      label: labels,
      label_not: labelsNot,
      job_id_prefix: req.jobIdPrefix || undefined,
      target_type: req.targetType || undefined,
    };
    const position = decodePageToken(req.pageToken, 'jobs', filters);
    if (position && (typeof position.after !== 'string' || !JOB_ID_PATTERN.test(position.after)))
      throw new ValidationError([
        { field: 'page_token', message: 'is not a page token issued by this listing' },
      ]);
    const after = position?.after as string | undefined;
    const { jobs, cut, scannedTo } = await this.jobs.listJobs({
      tenantId,
      status,
      labels,
      labelsNot,
      jobIdPrefix: req.jobIdPrefix || undefined,
      targetType: req.targetType || undefined,
      afterJobId: after,
      limit: limit + 1,
      maxBytes: LIST_JOBS_PAGE_MAX_BYTES,
    });
    const page = jobs.slice(0, limit);
    const last = page[page.length - 1];
    // Full page, or cut for bytes: go on after its last job. Short page whose scan window was used
    // up: go on after the window (more may match further on).
    const next =
      (jobs.length > limit || cut) && last ? last.jobId : scannedTo !== null ? scannedTo : undefined;
    return {
      jobs: page,
      nextPageToken: next !== undefined ? encodePageToken('jobs', { after: next }, filters) : '',
    };
  }

  /**
   * Replaces the fields named in `mask` with those of `patch` (wire JSON; a named field absent from
   * `patch` is reset to its default). With `etag`, applies only if the job is still at that version.
   */
  async updateJob(
    caller: Caller,
    jobId: string,
    patch: Record<string, unknown>,
    mask: readonly string[],
    etag?: string,
  ): Promise<Job> {
    return this.audited(
      caller,
      'UpdateJob',
      auditedJobId(jobId),
      { details: { update_mask: [...mask] } },
      (meta) => {
        checkJobId(jobId);
        checkMask(mask);
        const expected = etag ? versionOfEtag(etag) : undefined;
        return this.jobs.mutate(jobId, meta, async (found, tx) => {
          const job = visibleJob(caller, jobId, found);
          checkVersion(job, expected);
          return this.replace(tx, job, this.mergedDefinition(job, patch, mask));
        });
      },
    );
  }

  /**
   * A dry run of updateJob: the same checks (mask, fields, tenancy, etag), and what the edit would do
   * to the job's occurrences (see previewEdit), with nothing written, not even an audit row.
   * `count` (1..MAX_EDIT_PREVIEW_OCCURRENCES, default 10) bounds each list.
   */
  async previewUpdateJob(
    caller: Caller,
    jobId: string,
    patch: Record<string, unknown>,
    mask: readonly string[],
    opts: { etag?: string; count?: number; countField?: string } = {},
  ): Promise<UpdatePreview> {
    checkJobId(jobId);
    checkMask(mask);
    const count = opts.count ?? DEFAULT_EDIT_PREVIEW_OCCURRENCES;
    if (!Number.isInteger(count) || count < 1 || count > MAX_EDIT_PREVIEW_OCCURRENCES)
      throw new ValidationError([
        {
          field: opts.countField ?? 'dry_run_count',
          message: `must be an integer from 1 to ${MAX_EDIT_PREVIEW_OCCURRENCES}`,
        },
      ]);
    const expected = opts.etag ? versionOfEtag(opts.etag) : undefined;
    const job = visibleJob(caller, jobId, await this.jobs.findJob(jobId));
    checkVersion(job, expected);
    const definition = this.mergedDefinition(job, patch, mask);
    const claimed = await this.history.listClaimedAhead(jobId, MAX_EDIT_PREVIEW_OCCURRENCES);
    const now = this.now();
    // Both sides through their business calendars, as the claims will plan them. The stored job's
    // calendars resolve as they are now (one deleted since, or a shadowing one, counts as it stands).
    const current = { ...job, calendars: await this.calendarsOf(job).catch(() => undefined) };
    const edit = { ...definition, calendars: await this.calendarsOf(definition) };
    const impact = previewEdit(current, edit, now, {
      ...this.opts.claimPlan,
      maxCatchUp: this.opts.claimPlan?.maxCatchUp ?? 100,
      herdJitterMs: this.opts.herdJitterMs,
      count,
      claimed,
    });
    const state = stateAfterEdit(current, edit, now, this.opts.herdJitterMs);
    const edited: Job = {
      ...job,
      ...definition,
      version: job.version + 1,
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
    return { current: job, edited, impact, count };
  }

  /** The stored definition with the masked fields replaced from `patch` (secrets restored), validated. */
  private mergedDefinition(job: Job, patch: Record<string, unknown>, mask: readonly string[]): JobDefinition {
    const merged: Record<string, unknown> = { ...definitionWire(job) };
    for (const field of mask) merged[field] = patch[field];
    if (mask.includes('target'))
      merged.target = this.withSecretsRestored({ target: merged.target }, job).target;
    return this.parse(merged, job.tenantId);
  }

  /** Creates the job, or replaces its whole definition (Kafka UPSERT); `expectedVersion` guards a replace. */
  async upsertJob(
    caller: Caller,
    jobId: string,
    raw: Record<string, unknown>,
    command: CommandStamp,
    expectedVersion: number | null,
  ): Promise<Job> {
    const tenantId = tenantScope(caller, undefined, 'tenant_id') ?? 'default';
    // The job is checked inside the audited change, as every refused mutating call is recorded,
    // and after the command's ledger stamp, so a copy of a refused command is not recorded twice.
    return this.audited(caller, 'UpsertJob', jobId, { command }, (meta) =>
      this.jobs.mutate(jobId, meta, async (found, tx) => {
        const definition = this.parse(this.withSecretsRestored({ ...raw, job_id: jobId }, found), tenantId);
        if (!found) return this.insert(tx, definition);
        const job = visibleJob(caller, jobId, found);
        checkVersion(job, expectedVersion ?? undefined);
        return this.replace(tx, job, definition);
      }),
    );
  }

  /** Stops claiming the job; a paused job stays paused (idempotent). */
  async pauseJob(caller: Caller, jobId: string, command?: CommandStamp): Promise<Job> {
    return this.audited(caller, 'PauseJob', auditedJobId(jobId), { command }, (meta) =>
      checkedJobId(jobId, () =>
        this.jobs.mutate(jobId, meta, async (found, tx) => {
          const job = visibleJob(caller, jobId, found);
          if (job.status === 'PAUSED') return job;
          if (job.status === 'COMPLETED')
            throw new PreconditionFailedError(
              `job ${jobId} is COMPLETED: it has no occurrence left to pause`,
            );
          return tx.setStatus('PAUSED');
        }),
      ),
    );
  }

  /** Claims the job again from its stored next occurrence (missed ones follow the misfire policy). Idempotent. */
  async resumeJob(caller: Caller, jobId: string, command?: CommandStamp): Promise<Job> {
    return this.audited(caller, 'ResumeJob', auditedJobId(jobId), { command }, (meta) =>
      checkedJobId(jobId, () =>
        this.jobs.mutate(jobId, meta, async (found, tx) => {
          const job = visibleJob(caller, jobId, found);
          if (job.status === 'SCHEDULED') return job;
          if (job.status === 'COMPLETED')
            throw new PreconditionFailedError(
              `job ${jobId} is COMPLETED: it has no occurrence left; update its schedule instead`,
            );
          if (job.nextRunAt && job.nextNominalAt) return tx.setStatus('SCHEDULED');
          const next = await this.firstOccurrence(job);
          if (!next) throw new PreconditionFailedError(`job ${jobId} has no occurrence left`);
          return tx.setStatus('SCHEDULED', next);
        }),
      ),
    );
  }

  /** Deletes the job; with `etag`, only if it is still at that version. */
  async deleteJob(
    caller: Caller,
    jobId: string,
    opts: { etag?: string; expectedVersion?: number; command?: CommandStamp } = {},
  ): Promise<void> {
    await this.audited(caller, 'DeleteJob', auditedJobId(jobId), { command: opts.command }, (meta) => {
      checkJobId(jobId);
      const expected = opts.etag ? versionOfEtag(opts.etag) : opts.expectedVersion;
      return this.jobs.mutate(jobId, meta, async (found, tx) => {
        const job = visibleJob(caller, jobId, found);
        checkVersion(job, expected);
        await tx.delete();
      });
    });
  }

  /** Keeps a Kafka command's rejection as its one outcome: a later copy of it is a duplicate. */
  async recordCommandRejection(
    command: CommandStamp,
    jobId: string,
    code: string,
    reason: string,
  ): Promise<void> {
    await this.jobs.recordCommandRejection(command, jobId, code, reason);
  }

  /** Fires the job now, once, outside its schedule: a new fence token and an outbox row with trigger MANUAL. */
  async triggerJob(caller: Caller, jobId: string, command?: CommandStamp): Promise<FireEvent> {
    return this.audited(caller, 'TriggerJob', auditedJobId(jobId), { command }, (meta) =>
      checkedJobId(jobId, () =>
        this.jobs.mutate(jobId, meta, async (found, tx) => {
          const job = visibleJob(caller, jobId, found);
          return tx.recordFire('MANUAL', `manual:${caller.actor}`, (fenceToken, now) => ({
            jobId,
            tenantId: job.tenantId,
            fenceToken,
            fireId: fireIdOf({ jobId, fenceToken }),
            scheduledFor: now,
            nominalTime: now,
            attempt: 1,
            target: job.target,
            payload: job.payload,
          }));
        }),
      ),
    );
  }

  /**
   * Records a refused mutating call that never reached a service method (the edge refused it: an
   * unknown field, a malformed header) and rethrows the error.
   */
  async refuse(caller: Caller, action: string, jobId: string | null, error: unknown): Promise<never> {
    return this.audited(caller, action, jobId === null ? null : auditedJobId(jobId), {}, () => {
      throw error;
    });
  }

  /** Records a mutating call refused for want of a valid token (actor `anonymous`) and rethrows the error. */
  async refuseUnauthenticated(
    via: Via,
    action: string,
    jobId: string | null,
    error: unknown,
  ): Promise<never> {
    const audit: AuditEntry = { actor: 'anonymous', role: 'anonymous', via, action };
    await this.jobs
      .recordRefusal(audit, {
        tenantId: null,
        jobId: jobId === null ? null : auditedJobId(jobId),
        outcome: errorCodeOf(error),
        details: { message: (error as Error).message },
      })
      .catch(() => undefined);
    throw error;
  }

  /**
   * Runs a change with its audit: the repository writes the success event in the change's
   * transaction; a refused or failed change is recorded here with its error code.
   */
  async audited<T>(
    caller: Caller,
    action: string,
    jobId: string | null,
    extra: { command?: CommandStamp; details?: Record<string, JsonValue> },
    work: (meta: MutationMeta) => Promise<T>,
  ): Promise<T> {
    const audit = { actor: caller.actor, role: caller.role, via: caller.via, action };
    try {
      return await work({ audit, ...(extra.command ? { command: extra.command } : {}) });
    } catch (e) {
      if (!(e instanceof DuplicateCommandError)) {
        const code = errorCodeOf(e);
        await this.jobs
          .recordRefusal(audit, {
            tenantId: caller.tenantId,
            jobId,
            outcome: code,
            details: {
              ...extra.details,
              message: (e as Error).message,
              ...(extra.command ? { command_id: extra.command.commandId } : {}),
            },
          })
          .catch(() => undefined); // the database may be what failed; the error below still reaches the caller
      }
      throw e;
    }
  }

  /** The raw definition with masked secret headers replaced by the stored job's values (see restoreMaskedSecrets). */
  private withSecretsRestored<T>(raw: T, stored: Job | null): T {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return raw;
    const body = raw as Record<string, unknown>;
    if (body.target === undefined) return raw;
    const { target, violations } = restoreMaskedSecrets(body.target, stored?.target ?? null);
    if (violations.length > 0) throw new ValidationError(violations);
    return { ...body, target } as T;
  }

  private parse(raw: unknown, tenantId: string): JobDefinition {
    const parsed = parseJobDefinition(raw, {
      now: this.now(),
      limits: this.opts.limits,
      newJobId: randomUUID,
      tenantId,
    });
    if (!parsed.ok) throw new ValidationError(parsed.violations);
    return parsed.value;
  }

  private async insert(tx: LockedJob, definition: JobDefinition): Promise<Job> {
    const quota = this.opts.quotas?.(definition.tenantId).maxJobs;
    const calendars = await this.calendarsOf(definition);
    const next = this.nextOf(definition, calendars, 0);
    if (quota !== undefined && next) {
      const live = await tx.liveJobCount(definition.tenantId);
      if (live >= quota) throw new QuotaExceededError(definition.tenantId, 'max_jobs', quota);
    }
    tx.note({ tenant_id: definition.tenantId });
    return tx.insert({ definition, shard: shardOf(definition.jobId, this.opts.shardCount), next });
  }

  /**
   * Replaces a job's definition, recomputing the next occurrence only when its timing changed
   * (stateAfterEdit) or its calendars or calendar rule did (then through the calendars, from now).
   */
  private async replace(tx: LockedJob, job: Job, definition: JobDefinition): Promise<Job> {
    const calendars = await this.calendarsOf(definition);
    const state = stateAfterEdit(job, definition, this.now(), this.opts.herdJitterMs);
    const calendarsChanged =
      JSON.stringify([job.policies.calendars ?? [], job.policies.calendarRule ?? null]) !==
      JSON.stringify([definition.policies.calendars ?? [], definition.policies.calendarRule ?? null]);
    if (state === 'keep' && !calendarsChanged) return tx.replaceDefinition(definition, job.status, 'keep');
    if (!calendars) {
      if (state !== 'keep') return tx.replaceDefinition(definition, state.status, state.next);
    }
    const next = this.nextOf(definition, calendars, job.firesCount);
    const status: JobStatus = !next ? 'COMPLETED' : job.status === 'PAUSED' ? 'PAUSED' : 'SCHEDULED';
    return tx.replaceDefinition(definition, status, next);
  }

  /** The business calendars a job names, resolved for its tenant; undefined when it names none. */
  async businessCalendarsOf(
    definition: Pick<JobDefinition, 'tenantId' | 'policies'>,
  ): Promise<BusinessCalendar[] | undefined> {
    return this.calendarsOf(definition);
  }

  /**
   * The calendars a definition names, resolved for its tenant (own before shared), in its order;
   * undefined when it names none. A name that resolves to no calendar is refused naming its field.
   */
  private async calendarsOf(
    definition: Pick<JobDefinition, 'tenantId' | 'policies'>,
  ): Promise<BusinessCalendar[] | undefined> {
    const names = definition.policies.calendars ?? [];
    if (names.length === 0) return undefined;
    if (!this.opts.calendars)
      throw new ValidationError([
        { field: 'policies.calendars', message: 'business calendars are not available here' },
      ]);
    const found = await this.opts.calendars.resolve(definition.tenantId, names);
    const violations = names.flatMap((n, i) =>
      found.has(n)
        ? []
        : [
            {
              field: `policies.calendars[${i}]`,
              message: `names no calendar of tenant ${definition.tenantId} nor a shared one`,
            },
          ],
    );
    if (violations.length > 0) throw new ValidationError(violations);
    return names.map((n) => found.get(n)!);
  }

  private async firstOccurrence(
    job: Pick<Job, 'jobId' | 'tenantId' | 'schedule' | 'policies' | 'firesCount'>,
  ): Promise<PlannedOccurrence | null> {
    return this.nextOf(job, await this.calendarsOf(job), job.firesCount);
  }

  /** The first occurrence at or after now: through the calendars when there are some. */
  private nextOf(
    job: Pick<Job, 'jobId' | 'schedule' | 'policies'>,
    calendars: BusinessCalendar[] | undefined,
    firesSoFar: number,
  ): PlannedOccurrence | null {
    if (calendars)
      return firstPlannedOccurrence({ ...job, calendars }, this.now(), this.opts.herdJitterMs, firesSoFar);
    const first = firstOccurrenceAtOrAfter(job.schedule, this.now(), firesSoFar);
    return (
      first &&
      occurrenceAt(
        job.jobId,
        job.schedule,
        job.policies,
        first.nominal,
        this.opts.herdJitterMs,
        first.dstShiftMs,
      )
    );
  }
}

/** The definition fields of a stored job in wire form (what UpdateJob merges into). */
function definitionWire(job: Job): Record<string, JsonValue> {
  const w = jobToWire(job);
  return {
    job_id: w.job_id!,
    schedule: w.schedule!,
    target: w.target!,
    payload: w.payload ?? null,
    policies: w.policies!,
    labels: w.labels!,
  };
}

/** Thrown inside a create's transaction when a concurrent call took the idempotency key first. */
class KeyTakenMeanwhile extends Error {}

/** JSON with object keys sorted, so the same request hashes the same whatever its key order. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v ?? null);
}

/** A job id as an audit row can name it: a valid one as is, anything else cut short (it is only evidence). */
function auditedJobId(jobId: string): string {
  return JOB_ID_PATTERN.test(jobId) ? jobId : jobId.slice(0, 200);
}

/** Runs `work` once the job id is valid (ValidationError otherwise), inside the caller's audit. */
function checkedJobId<T>(jobId: string, work: () => Promise<T>): Promise<T> {
  checkJobId(jobId);
  return work();
}

function checkJobId(jobId: string): void {
  if (!JOB_ID_PATTERN.test(jobId))
    throw new ValidationError([
      { field: 'job_id', message: 'must be 1-128 characters of letters, digits, . _ : -' },
    ]);
}

/** A non-empty update mask of updatable fields; INVALID_ARGUMENT naming each bad path. */
function checkMask(mask: readonly string[]): void {
  if (mask.length === 0)
    throw new ValidationError([
      { field: 'update_mask', message: `must name at least one of ${UPDATABLE_FIELDS.join(', ')}` },
    ]);
  const bad = mask
    .map((p, i) => [p, i] as const)
    .filter(([p]) => !(UPDATABLE_FIELDS as readonly string[]).includes(p));
  if (bad.length > 0)
    throw new ValidationError(
      bad.map(([p, i]) => ({
        field: `update_mask.paths[${i}]`,
        message: `${JSON.stringify(p)} is not one of ${UPDATABLE_FIELDS.join(', ')}`,
      })),
    );
}

function checkVersion(job: Job, expected: number | undefined): void {
  if (expected !== undefined && job.version !== expected) {
    throw new PreconditionFailedError(
      `job ${job.jobId} is at version ${job.version} (etag ${etagOf(job)}), not ${expected}: re-read it and retry`,
    );
  }
}
