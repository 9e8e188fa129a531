/** REST under /v1: the admin API's operations as JSON over HTTP (same services, validation and errors as gRPC). */
import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Query,
  Res,
} from '@nestjs/common';
import type { Response } from 'express';
import type { TickworkConfig } from '@tickwork/config';
import {
  instantRangeProblem,
  parseInstant,
  parseLabelSelector,
  unstorableTextProblem,
  ValidationError,
  type JsonValue,
  type LabelSelector,
} from '@tickwork/domain';
import {
  CalendarService,
  etagOf,
  JobHistoryService,
  JobService,
  previewSchedule,
  UnauthenticatedError,
  UPDATABLE_FIELDS,
  type Caller,
} from '@tickwork/jobs';
import { Authenticator } from '../auth';
import { CONFIG } from '../tokens';
import {
  deadLetterJson,
  fireJson,
  jobJson,
  occurrenceJson,
  previewJson,
  runJson,
  updatePreviewJson,
} from './wire';

type Wire = Record<string, JsonValue>;
type Query = Record<string, string | string[] | undefined>;

/** A query parameter given once, or undefined. */
function one(q: Query, name: string): string | undefined {
  const v = q[name];
  if (Array.isArray(v)) throw new ValidationError([{ field: name, message: 'must be given once' }]);
  return v;
}

/** A non-negative integer query parameter. */
function int(q: Query, name: string): number | undefined {
  const v = one(q, name);
  if (v === undefined || v === '') return undefined;
  if (!/^\d{1,9}$/.test(v))
    throw new ValidationError([{ field: name, message: 'must be a non-negative integer' }]);
  return Number(v);
}

/** A boolean query parameter: `true` or `false` (absent: false). */
function bool(q: Query, name: string): boolean {
  const v = one(q, name);
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  throw new ValidationError([{ field: name, message: 'must be true or false' }]);
}

/** `label=key=value`, repeatable. */
function labels(q: Query): Record<string, string> {
  const raw = q.label === undefined ? [] : Array.isArray(q.label) ? q.label : [q.label];
  const out: Record<string, string> = {};
  raw.forEach((l, i) => {
    const at = l.indexOf('=');
    if (at <= 0) throw new ValidationError([{ field: `label[${i}]`, message: 'must be key=value' }]);
    const problem = unstorableTextProblem(l);
    if (problem) throw new ValidationError([{ field: `label[${i}]`, message: problem }]);
    Object.defineProperty(out, l.slice(0, at), { value: l.slice(at + 1), enumerable: true });
  });
  return out;
}

/** `label_selector=team=data,env!=prod`: equalities and inequalities, comma-separated (parseLabelSelector). */
function labelSelector(q: Query): LabelSelector {
  const raw = one(q, 'label_selector');
  return raw ? parseLabelSelector(raw) : { equal: {}, notEqual: {} };
}

@Controller('v1')
export class JobsController {
  constructor(
    private readonly jobs: JobService,
    private readonly history: JobHistoryService,
    private readonly calendars: CalendarService,
    private readonly auth: Authenticator,
    @Inject(CONFIG) private readonly config: TickworkConfig,
  ) {}

  /**
   * The caller of a mutating call; a refused token is audited as the action it was refused for
   * (README: every refused mutating call is audited).
   */
  private async mutator(authz: string | undefined, action: string, jobId: string | null): Promise<Caller> {
    try {
      return this.auth.authenticate(authz, 'rest');
    } catch (e) {
      if (e instanceof UnauthenticatedError) return this.jobs.refuseUnauthenticated('rest', action, jobId, e);
      throw e;
    }
  }

  /** Creates a job; with `Idempotency-Key`, a retry of the same request returns the job the first one created. */
  @Post('jobs')
  @HttpCode(201)
  async create(
    @Headers('authorization') authz: string | undefined,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Body() body: unknown,
  ): Promise<Wire> {
    const namedId =
      body && typeof body === 'object' && typeof (body as Wire).job_id === 'string'
        ? ((body as Wire).job_id as string)
        : null;
    const caller = await this.mutator(authz, 'CreateJob', namedId);
    return jobJson(
      await this.jobs.createJob(caller, body, undefined, {
        idempotencyKey,
        idempotencyKeyField: 'Idempotency-Key',
      }),
    );
  }

  @Get('jobs')
  async list(@Headers('authorization') authz: string | undefined, @Query() q: Query): Promise<Wire> {
    const selector = labelSelector(q);
    const include = one(q, 'include');
    if (include !== undefined && include !== '' && include !== 'last_run')
      throw new ValidationError([{ field: 'include', message: 'must be last_run' }]);
    const caller = this.auth.authenticate(authz, 'rest');
    const page = await this.jobs.listJobs(caller, {
      tenantId: one(q, 'tenant_id'),
      status: one(q, 'status'),
      labels: { ...labels(q), ...selector.equal },
      labelsNot: selector.notEqual,
      jobIdPrefix: one(q, 'job_id_prefix'),
      targetType: one(q, 'target_type'),
      pageSize: int(q, 'page_size'),
      pageToken: one(q, 'page_token'),
    });
    // The console's table shows each job's last outcome: one indexed probe per job of the page.
    const lastRuns =
      include === 'last_run' ? await this.history.lastRuns(page.jobs.map((j) => j.jobId)) : null;
    return {
      jobs: page.jobs.map((j) => (lastRuns ? jobJson(j, lastRuns.get(j.jobId) ?? null) : jobJson(j))),
      next_page_token: page.nextPageToken,
    };
  }

  @Get('jobs/:jobId')
  async get(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<Wire> {
    const { job, recentRuns } = await this.jobs.getJob(this.auth.authenticate(authz, 'rest'), jobId);
    res.setHeader('ETag', `"${etagOf(job)}"`);
    return jobJson(job, recentRuns[0] ?? null);
  }

  /**
   * Replaces the fields present in the body (or those named in ?update_mask=a,b); If-Match guards with
   * an etag. With ?dry_run=true nothing is stored (not even an audit row): the answer is the job as the
   * edit would leave it with its `edit_preview` (?dry_run_count= occurrences per side, default 10).
   */
  @Patch('jobs/:jobId')
  async update(
    @Headers('authorization') authz: string | undefined,
    @Headers('if-match') ifMatch: string | undefined,
    @Param('jobId') jobId: string,
    @Query() q: Query,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<Wire> {
    // A malformed dry_run is taken for a dry run asked for: refused, not audited (it would write
    // nothing). Any other malformed query parameter (one given twice) refuses the call as it is:
    // audited unless it is a dry run.
    const dryRun = bool(q, 'dry_run');
    let queryError: ValidationError | undefined;
    try {
      for (const name of ['update_mask', 'dry_run_count']) one(q, name);
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      queryError = e;
    }
    const caller = dryRun
      ? this.auth.authenticate(authz, 'rest')
      : await this.mutator(authz, 'UpdateJob', jobId);
    // A dry run's refusals are not audited: it writes nothing.
    const refuse = (e: ValidationError): Promise<never> =>
      dryRun ? Promise.reject(e) : this.jobs.refuse(caller, 'UpdateJob', jobId, e);
    if (queryError) return refuse(queryError);
    if (!body || typeof body !== 'object' || Array.isArray(body))
      return refuse(new ValidationError([{ field: 'body', message: 'must be a JSON object' }]));
    const patch = body as Record<string, unknown>;
    const unknown = Object.keys(patch).filter((k) => !(UPDATABLE_FIELDS as readonly string[]).includes(k));
    if (unknown.length > 0)
      return refuse(
        new ValidationError(
          unknown.map((k) => ({
            field: k,
            message: `cannot be updated (updatable: ${UPDATABLE_FIELDS.join(', ')})`,
          })),
        ),
      );
    const maskParam = one(q, 'update_mask');
    const mask =
      maskParam !== undefined
        ? maskParam
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : Object.keys(patch);
    if (dryRun) {
      const preview = await this.jobs.previewUpdateJob(caller, jobId, patch, mask, {
        etag: ifMatch,
        count: int(q, 'dry_run_count'),
        countField: 'dry_run_count',
      });
      return updatePreviewJson(preview);
    }
    if (one(q, 'dry_run_count') !== undefined)
      return refuse(new ValidationError([{ field: 'dry_run_count', message: 'is only for dry_run=true' }]));
    const job = await this.jobs.updateJob(caller, jobId, patch, mask, ifMatch);
    res.setHeader('ETag', `"${etagOf(job)}"`);
    return jobJson(job);
  }

  @Delete('jobs/:jobId')
  @HttpCode(204)
  async remove(
    @Headers('authorization') authz: string | undefined,
    @Headers('if-match') ifMatch: string | undefined,
    @Param('jobId') jobId: string,
  ): Promise<void> {
    await this.jobs.deleteJob(await this.mutator(authz, 'DeleteJob', jobId), jobId, { etag: ifMatch });
  }

  @Post('jobs/:jobId/pause')
  @HttpCode(200)
  async pause(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
  ): Promise<Wire> {
    return jobJson(await this.jobs.pauseJob(await this.mutator(authz, 'PauseJob', jobId), jobId));
  }

  @Post('jobs/:jobId/resume')
  @HttpCode(200)
  async resume(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
  ): Promise<Wire> {
    return jobJson(await this.jobs.resumeJob(await this.mutator(authz, 'ResumeJob', jobId), jobId));
  }

  @Post('jobs/:jobId/trigger')
  @HttpCode(202)
  async trigger(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
  ): Promise<Wire> {
    return fireJson(await this.jobs.triggerJob(await this.mutator(authz, 'TriggerJob', jobId), jobId));
  }

  @Get('jobs/:jobId/runs')
  async runs(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
    @Query() q: Query,
  ): Promise<Wire> {
    const page = await this.history.listRuns(this.auth.authenticate(authz, 'rest'), jobId, {
      pageSize: int(q, 'page_size'),
      pageToken: one(q, 'page_token'),
    });
    return { runs: page.runs.map(runJson), next_page_token: page.nextPageToken };
  }

  @Get('jobs/:jobId/runs/:fenceToken')
  async run(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
    @Param('fenceToken') fenceToken: string,
  ): Promise<Wire> {
    if (!/^\d{1,15}$/.test(fenceToken))
      throw new ValidationError([{ field: 'fence_token', message: 'must be a positive integer' }]);
    return runJson(
      await this.history.getRun(this.auth.authenticate(authz, 'rest'), jobId, Number(fenceToken)),
    );
  }

  @Get('jobs/:jobId/occurrences')
  async occurrences(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
    @Query() q: Query,
  ): Promise<Wire> {
    const page = await this.history.listOccurrences(this.auth.authenticate(authz, 'rest'), jobId, {
      pageSize: int(q, 'page_size'),
      pageToken: one(q, 'page_token'),
    });
    return {
      occurrences: page.occurrences.map((o) => occurrenceJson(o, jobId)),
      next_page_token: page.nextPageToken,
    };
  }

  @Get('dead-letters')
  async deadLetters(@Headers('authorization') authz: string | undefined, @Query() q: Query): Promise<Wire> {
    const page = await this.history.listDeadLetters(this.auth.authenticate(authz, 'rest'), {
      tenantId: one(q, 'tenant_id'),
      jobId: one(q, 'job_id'),
      pageSize: int(q, 'page_size'),
      pageToken: one(q, 'page_token'),
    });
    return { dead_letters: page.deadLetters.map(deadLetterJson), next_page_token: page.nextPageToken };
  }

  @Post('dead-letters/:fireId/replay')
  @HttpCode(202)
  async replay(
    @Headers('authorization') authz: string | undefined,
    @Param('fireId') fireId: string,
  ): Promise<Wire> {
    const caller = await this.mutator(authz, 'ReplayDeadLetter', null);
    return fireJson(await this.history.replayDeadLetter(caller, fireId));
  }

  /**
   * The next fire times of a schedule: `{"schedule": {...}, "count"?: 10, "from"?: "2026-…Z",
   * "job_id"?, "spread_ms"?}` (job_id places H tokens and herd-window slots).
   */
  @Post('schedules/preview')
  @HttpCode(200)
  async preview(@Headers('authorization') authz: string | undefined, @Body() body: unknown): Promise<Wire> {
    const caller = this.auth.authenticate(authz, 'rest');
    const b = (body && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Record<
      string,
      unknown
    >;
    const unknown = Object.keys(b).filter(
      (k) =>
        ![
          'schedule',
          'count',
          'from',
          'job_id',
          'spread_ms',
          'calendars',
          'calendar_rule',
          'tenant_id',
        ].includes(k),
    );
    if (unknown.length > 0)
      throw new ValidationError(unknown.map((k) => ({ field: k, message: 'is not a known field' })));
    if (b.count !== undefined && typeof b.count !== 'number')
      throw new ValidationError([{ field: 'count', message: 'must be an integer' }]);
    if (b.job_id !== undefined && typeof b.job_id !== 'string')
      throw new ValidationError([{ field: 'job_id', message: 'must be a string' }]);
    if (b.spread_ms !== undefined && typeof b.spread_ms !== 'number')
      throw new ValidationError([{ field: 'spread_ms', message: 'must be an integer' }]);
    let from: Date | undefined;
    if (b.from !== undefined) {
      from = typeof b.from === 'string' ? parseInstant(b.from) : undefined;
      if (!from)
        throw new ValidationError([
          { field: 'from', message: 'must be an ISO-8601 timestamp with an offset or Z' },
        ]);
      const problem = instantRangeProblem(from);
      if (problem) throw new ValidationError([{ field: 'from', message: problem }]);
    }
    if (b.tenant_id !== undefined && typeof b.tenant_id !== 'string')
      throw new ValidationError([{ field: 'tenant_id', message: 'must be a string' }]);
    const calendars = await this.calendars.forPreview(
      caller,
      b.calendars,
      b.calendar_rule,
      b.tenant_id as string | undefined,
    );
    const preview = await previewSchedule(b.schedule, {
      ...(calendars ? { calendars } : {}),
      count: b.count as number | undefined,
      from,
      now: new Date(),
      minIntervalMs: this.config.api.minIntervalMs,
      ...(typeof b.job_id === 'string' ? { jobId: b.job_id } : {}),
      ...(typeof b.spread_ms === 'number' ? { spreadMs: b.spread_ms } : {}),
    });
    return {
      fires: preview.fires.map(previewJson),
      truncated: preview.truncatedBy !== null,
      truncated_by: preview.truncatedBy ?? '',
      ...(preview.resolvedExpression !== null ? { resolved_expression: preview.resolvedExpression } : {}),
    };
  }
}
