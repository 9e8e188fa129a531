/** gRPC: tickwork.admin.v1.SchedulerAdmin, a thin edge over the jobs application services. */
import type { Metadata, ServerUnaryCall } from '@grpc/grpc-js';
import { Controller, Inject, UseFilters, UseInterceptors } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import type { ApiListenConfig, TenantRegistry, TickworkConfig } from '@tickwork/config';
import { ValidationError, type JsonValue, type LatenessRow } from '@tickwork/domain';
import {
  BackfillService,
  BulkActionService,
  CalendarService,
  isBackfillPreview,
  InsightService,
  JobHistoryService,
  JobService,
  previewSchedule,
  UnauthenticatedError,
  type Caller,
} from '@tickwork/jobs';
import { Authenticator } from '../auth';
import { CONFIG, LISTEN, TENANTS } from '../tokens';
import { DeadlineExceededError, GrpcErrorsFilter, toGrpcError } from './grpc-errors.filter';
import { undecodableRequest } from './request-decoding';
import { GrpcTelemetryInterceptor } from './grpc-telemetry.interceptor';
import { backfillPlanToProto, backfillRequestFromProto, backfillToProto } from './backfill-mapping';
import {
  calendarFromProto,
  calendarToProto,
  deadLetterToProto,
  fromEnum,
  fireToProto,
  isoFromTimestamp,
  timestamp,
  jobDefinitionFromProto,
  jobToProto,
  updatePreviewToProto,
  occurrenceToProto,
  previewToProto,
  protoFieldPath,
  runToProto,
  scheduleFromProto,
} from './proto-mapping';

type Msg = Record<string, unknown>;
type Call = ServerUnaryCall<unknown, unknown>;
/** What a mutating RPC is audited as when it is refused before reaching the service (no valid token). */
type Audit = { readonly action: string; readonly jobId: string | null };

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

@Controller()
@UseFilters(new GrpcErrorsFilter())
@UseInterceptors(GrpcTelemetryInterceptor)
export class AdminGrpcController {
  constructor(
    private readonly jobs: JobService,
    private readonly history: JobHistoryService,
    private readonly insight: InsightService,
    private readonly bulk: BulkActionService,
    private readonly calendars: CalendarService,
    private readonly backfills: BackfillService,
    private readonly auth: Authenticator,
    @Inject(CONFIG) private readonly config: TickworkConfig,
    @Inject(LISTEN) private readonly listen: ApiListenConfig,
    @Inject(TENANTS) private readonly tenants: TenantRegistry,
  ) {}

  @GrpcMethod('SchedulerAdmin', 'CreateJob')
  createJob(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    const wire = jobDefinitionFromProto(req.job);
    const key = str(req.idempotency_key);
    return this.serve(
      md,
      call,
      (c) =>
        this.jobs
          .createJob(c, wire, undefined, {
            ...(key !== '' ? { idempotencyKey: key } : {}),
            idempotencyKeyField: 'idempotency_key',
          })
          .then((job) => jobToProto(job)),
      (p) => (p === 'idempotency_key' ? p : protoFieldPath('job', p, wire)),
      { action: 'CreateJob', jobId: (wire.job_id as string | undefined) ?? null },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'GetJob')
  getJob(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => {
      const { job, recentRuns } = await this.jobs.getJob(c, str(req.job_id));
      return jobToProto(job, recentRuns[0] ?? null);
    });
  }

  @GrpcMethod('SchedulerAdmin', 'ListJobs')
  listJobs(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => {
      if (typeof req.status === 'number')
        throw new ValidationError([
          { field: 'status', message: `${req.status} is not a JobStatus value this API defines` },
        ]);
      const status = str(req.status).replace(/^JOB_STATUS_/, '');
      const page = await this.jobs.listJobs(c, {
        tenantId: str(req.tenant_id),
        status: status === 'UNSPECIFIED' ? '' : status,
        labels: (req.labels ?? {}) as Record<string, string>,
        pageSize: num(req.page_size),
        pageToken: str(req.page_token),
      });
      return { jobs: page.jobs.map((j) => jobToProto(j)), next_page_token: page.nextPageToken };
    });
  }

  @GrpcMethod('SchedulerAdmin', 'UpdateJob')
  updateJob(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    const job = (req.job ?? {}) as Msg;
    const wire = jobDefinitionFromProto(job);
    const paths = ((req.update_mask as Msg | undefined)?.paths ?? []) as string[];
    // A masked field that is unset in the message resets it; payload unset is JSON null.
    const patch: Record<string, JsonValue> = { ...wire };
    if (job.payload === undefined) patch.payload = null;
    const etag = str(req.etag) || undefined;
    return this.serve(
      md,
      call,
      (c) =>
        req.dry_run === true
          ? this.jobs
              .previewUpdateJob(c, str(job.job_id), patch, paths, {
                etag,
                // proto3 has no "unset" for an int32: 0 asks for the default.
                count:
                  typeof req.dry_run_count === 'number' && req.dry_run_count !== 0
                    ? req.dry_run_count
                    : undefined,
                countField: 'dry_run_count',
              })
              .then(updatePreviewToProto)
          : this.jobs.updateJob(c, str(job.job_id), patch, paths, etag).then((j) => jobToProto(j)),
      (p) => protoFieldPath('job', p, wire),
      // A dry run writes nothing, not even the audit row of a refused call.
      req.dry_run === true ? undefined : { action: 'UpdateJob', jobId: str(job.job_id) },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'BulkAction')
  bulkAction(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(
      md,
      call,
      async (c) => {
        // Proto defaults (0, empty, UNSPECIFIED) mean "not given", as on REST an absent field. A
        // number is a value this proto does not define (proto-loader passes it through): it goes on
        // as its digits, which the request's validation refuses inside the audited call.
        const enumName = (v: unknown, prefix: RegExp) =>
          typeof v === 'number' ? String(v) : str(v).replace(prefix, '');
        const action = enumName(req.action, /^BULK_ACTION_KIND_/);
        const missed = enumName(req.missed, /^MISSED_OCCURRENCES_/);
        const window = num(req.catch_up_window_ms) ?? Number(req.catch_up_window_ms ?? 0);
        const limit = num(req.catch_up_limit) ?? 0;
        const r = await this.bulk.run(c, {
          action: action === 'UNSPECIFIED' ? '' : action,
          label_selector: str(req.label_selector),
          ...(str(req.tenant_id) !== '' ? { tenant_id: str(req.tenant_id) } : {}),
          dry_run: req.dry_run === true,
          ...(req.until ? { until: isoFromTimestamp(req.until) } : {}),
          ...(missed !== '' && missed !== 'UNSPECIFIED' ? { missed } : {}),
          ...(window > 0 ? { catch_up_window_ms: window } : {}),
          ...(limit > 0 ? { catch_up_limit: limit } : {}),
        });
        return {
          bulk_action_id: r.bulkActionId,
          action: `BULK_ACTION_KIND_${r.action}`,
          dry_run: r.dryRun,
          matched: r.matched,
          changed: r.changed,
          unchanged: r.unchanged,
          failed: r.failed,
          sample_job_ids: [...r.sampleJobIds],
          failures: r.failures.map((f) => ({ job_id: f.jobId, code: f.code, message: f.message })),
        };
      },
      undefined,
      { action: 'BulkAction', jobId: null },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'CreateBackfill')
  createBackfill(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(
      md,
      call,
      async (c) => {
        let body: Record<string, JsonValue>;
        try {
          body = backfillRequestFromProto(req);
        } catch (e) {
          if (req.dry_run === true) throw e;
          return this.jobs.refuse(c, 'CreateBackfill', str(req.job_id), e);
        }
        const r = await this.backfills.create(c, str(req.job_id), body);
        return isBackfillPreview(r) ? { plan: backfillPlanToProto(r) } : { backfill: backfillToProto(r) };
      },
      undefined,
      // A dry run writes nothing, not even the audit row of a refused call.
      req.dry_run === true ? undefined : { action: 'CreateBackfill', jobId: str(req.job_id) },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'ListBackfills')
  listBackfills(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => {
      const page = await this.backfills.list(c, str(req.job_id), {
        pageSize: num(req.page_size),
        pageToken: str(req.page_token),
      });
      return {
        backfills: page.backfills.map((b) => backfillToProto(b)),
        next_page_token: page.nextPageToken,
      };
    });
  }

  @GrpcMethod('SchedulerAdmin', 'GetBackfill')
  getBackfill(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => {
      const d = await this.backfills.get(c, str(req.job_id), str(req.backfill_id));
      return backfillToProto(d.backfill, d.occurrences);
    });
  }

  @GrpcMethod('SchedulerAdmin', 'CancelBackfill')
  cancelBackfill(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(
      md,
      call,
      async (c) => backfillToProto(await this.backfills.cancel(c, str(req.job_id), str(req.backfill_id))),
      undefined,
      { action: 'CancelBackfill', jobId: str(req.job_id) },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'PauseJob')
  pauseJob(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(
      md,
      call,
      (c) => this.jobs.pauseJob(c, str(req.job_id)).then((j) => jobToProto(j)),
      undefined,
      {
        action: 'PauseJob',
        jobId: str(req.job_id),
      },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'ResumeJob')
  resumeJob(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(
      md,
      call,
      (c) => this.jobs.resumeJob(c, str(req.job_id)).then((j) => jobToProto(j)),
      undefined,
      {
        action: 'ResumeJob',
        jobId: str(req.job_id),
      },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'DeleteJob')
  deleteJob(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(
      md,
      call,
      (c) => this.jobs.deleteJob(c, str(req.job_id), { etag: str(req.etag) || undefined }).then(() => ({})),
      undefined,
      { action: 'DeleteJob', jobId: str(req.job_id) },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'TriggerJob')
  triggerJob(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(
      md,
      call,
      (c) => this.jobs.triggerJob(c, str(req.job_id)).then(fireToProto),
      undefined,
      {
        action: 'TriggerJob',
        jobId: str(req.job_id),
      },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'ListRuns')
  listRuns(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => {
      const page = await this.history.listRuns(c, str(req.job_id), {
        pageSize: num(req.page_size),
        pageToken: str(req.page_token),
      });
      return { runs: page.runs.map(runToProto), next_page_token: page.nextPageToken };
    });
  }

  @GrpcMethod('SchedulerAdmin', 'GetRun')
  getRun(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, (c) =>
      this.history.getRun(c, str(req.job_id), num(req.fence_token) ?? 0).then(runToProto),
    );
  }

  @GrpcMethod('SchedulerAdmin', 'ListOccurrences')
  listOccurrences(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => {
      const jobId = str(req.job_id);
      const page = await this.history.listOccurrences(c, jobId, {
        pageSize: num(req.page_size),
        pageToken: str(req.page_token),
      });
      return {
        occurrences: page.occurrences.map((o) => occurrenceToProto(o, jobId)),
        next_page_token: page.nextPageToken,
      };
    });
  }

  @GrpcMethod('SchedulerAdmin', 'ListDeadLetters')
  listDeadLetters(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => {
      const page = await this.history.listDeadLetters(c, {
        tenantId: str(req.tenant_id),
        jobId: str(req.job_id),
        pageSize: num(req.page_size),
        pageToken: str(req.page_token),
      });
      return { dead_letters: page.deadLetters.map(deadLetterToProto), next_page_token: page.nextPageToken };
    });
  }

  @GrpcMethod('SchedulerAdmin', 'ReplayDeadLetter')
  replayDeadLetter(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(
      md,
      call,
      (c) => this.history.replayDeadLetter(c, str(req.fire_id)).then(fireToProto),
      undefined,
      {
        action: 'ReplayDeadLetter',
        jobId: null,
      },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'PreviewSchedule')
  previewSchedule(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    const wire = scheduleFromProto(req.schedule);
    return this.serve(
      md,
      call,
      async (c) => {
        const calendars = await this.calendars.forPreview(
          c,
          Array.isArray(req.calendars) ? req.calendars : undefined,
          fromEnum(req.calendar_rule, 'CALENDAR_RULE_'),
          str(req.tenant_id) || undefined,
        );
        const fromIso = isoFromTimestamp(req.from);
        if (wire === undefined)
          throw new ValidationError([
            { field: 'schedule', message: 'is required (once, interval, cron or rrule)' },
          ]);
        const preview = await previewSchedule(wire, {
          count: num(req.count),
          from: fromIso ? new Date(fromIso) : undefined,
          now: new Date(),
          minIntervalMs: this.config.api.minIntervalMs,
          ...(typeof req.job_id === 'string' && req.job_id !== '' ? { jobId: req.job_id } : {}),
          ...(num(req.spread_ms) ? { spreadMs: num(req.spread_ms) } : {}),
          ...(calendars ? { calendars } : {}),
        });
        return {
          fires: preview.fires.map(previewToProto),
          truncated: preview.truncatedBy !== null,
          truncated_by: preview.truncatedBy ?? '',
          resolved_expression: preview.resolvedExpression ?? '',
        };
      },
      (p) => (wire ? protoFieldPath('', p, { schedule: wire }) : p),
    );
  }

  @GrpcMethod('SchedulerAdmin', 'CreateCalendar')
  createCalendar(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    const wire = calendarFromProto(req.calendar);
    const tenant = str((req.calendar as Msg | undefined)?.tenant_id);
    return this.serve(
      md,
      call,
      (c) =>
        this.calendars
          .create(c, { ...wire, ...(tenant ? { tenant_id: tenant } : {}) }, { shared: req.shared === true })
          .then(calendarToProto),
      (p) => `calendar.${p}`,
      { action: 'CreateCalendar', jobId: null },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'GetCalendar')
  getCalendar(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) =>
      calendarToProto(
        await this.calendars.get(c, str(req.name), {
          shared: req.shared === true,
          ...(str(req.tenant_id) ? { tenantId: str(req.tenant_id) } : {}),
        }),
      ),
    );
  }

  @GrpcMethod('SchedulerAdmin', 'ListCalendars')
  listCalendars(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => {
      const page = await this.calendars.list(c, {
        ...(str(req.tenant_id) ? { tenantId: str(req.tenant_id) } : {}),
        ...(num(req.page_size) ? { pageSize: num(req.page_size) } : {}),
        after: str(req.page_token),
      });
      return { calendars: page.calendars.map(calendarToProto), next_page_token: page.next };
    });
  }

  @GrpcMethod('SchedulerAdmin', 'UpdateCalendar')
  updateCalendar(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    const wire = calendarFromProto(req.calendar);
    const name = typeof wire.name === 'string' ? wire.name : '';
    return this.serve(
      md,
      call,
      async (c) => {
        const { calendar, replanned } = await this.calendars.update(c, name, wire, {
          ...(str(req.etag) ? { etag: str(req.etag) } : {}),
          shared: req.shared === true,
          ...(str(req.tenant_id) ? { tenantId: str(req.tenant_id) } : {}),
        });
        return { calendar: calendarToProto(calendar), replanned_jobs: replanned };
      },
      (p) => (p === 'If-Match' ? 'etag' : p === 'tenant_id' || p === 'shared' ? p : `calendar.${p}`),
      { action: 'UpdateCalendar', jobId: null },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'DeleteCalendar')
  deleteCalendar(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(
      md,
      call,
      (c) =>
        this.calendars
          .delete(c, str(req.name), {
            ...(str(req.etag) ? { etag: str(req.etag) } : {}),
            shared: req.shared === true,
            ...(str(req.tenant_id) ? { tenantId: str(req.tenant_id) } : {}),
          })
          .then(() => ({})),
      (p) => (p === 'If-Match' ? 'etag' : p),
      { action: 'DeleteCalendar', jobId: null },
    );
  }

  @GrpcMethod('SchedulerAdmin', 'WhoAmI')
  whoAmI(_req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => ({
      actor: c.actor,
      role: c.role,
      tenant_id: c.tenantId ?? '',
      auth: this.tenants.authMode,
      known_tenants: c.role === 'admin' ? [...this.tenants.tenantIds] : [],
    }));
  }

  @GrpcMethod('SchedulerAdmin', 'GetCluster')
  getCluster(_req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => {
      const v = await this.insight.cluster(c);
      return {
        shards: v.shards.map((s) => ({
          shard: s.shard,
          owner: s.owner ?? '',
          epoch: s.epoch,
          lease_expires_at: timestamp(s.leaseExpiresAt),
          due: s.due,
          oldest_due_age_seconds: s.oldestDueAgeSeconds,
          outbox_pending: s.outboxPending,
          outbox_oldest_age_seconds: s.outboxOldestAgeSeconds,
        })),
        executors: v.executors.map((e) => ({ owner: e.owner, running: e.running, retrying: e.retrying })),
        consumer_lag: v.consumerLag.map((l) => ({
          group: l.group,
          topic: l.topic,
          ...(l.lag !== null ? { lag: l.lag } : {}),
          partitions: l.partitions,
          error: l.error ?? '',
        })),
        observed_at: timestamp(new Date()),
      };
    });
  }

  @GrpcMethod('SchedulerAdmin', 'GetLateness')
  getLateness(req: Msg, md: Metadata, call: Call): Promise<Msg> {
    return this.serve(md, call, async (c) => {
      const r = await this.insight.lateness(c, {
        window: str(req.window),
        tenantId: str(req.tenant_id),
        jobId: str(req.job_id),
      });
      const pcts = (p50: number | null, p99: number | null) => ({
        ...(p50 !== null ? { p50_ms: p50 } : {}),
        ...(p99 !== null ? { p99_ms: p99 } : {}),
      });
      const row = (x: LatenessRow) => ({ key: x.key, runs: x.runs, ...pcts(x.p50Ms, x.p99Ms) });
      return {
        window: r.window,
        buckets: r.buckets.map((b) => ({
          start: timestamp(b.start),
          runs: b.runs,
          ...pcts(b.p50Ms, b.p99Ms),
        })),
        overall: { runs: r.counts.fired, ...pcts(r.overall.p50Ms, r.overall.p99Ms) },
        fired: r.counts.fired,
        retried: r.counts.retried,
        dead_lettered: r.counts.deadLettered,
        skipped: r.counts.skipped,
        by_job: r.byJob.map(row),
        by_tenant: r.byTenant.map(row),
        truncated: r.truncated,
      };
    });
  }

  /**
   * Authenticates, honours the call's deadline (or the default one when it has none: a call
   * already past its deadline is not started; one that runs over it is answered DEADLINE_EXCEEDED),
   * and maps errors with request-relative field paths.
   */
  private async serve<T>(
    md: Metadata,
    call: Call,
    work: (caller: Caller) => Promise<T>,
    fieldPath?: (wirePath: string) => string,
    audit?: Audit,
  ): Promise<T> {
    const undecodable = undecodableRequest(call.request);
    if (undecodable !== undefined)
      throw toGrpcError(
        new ValidationError([{ field: 'request', message: `could not be decoded: ${undecodable}` }]),
      );
    try {
      const raw = call.getDeadline();
      const deadline =
        raw instanceof Date
          ? raw.getTime()
          : Number.isFinite(raw)
            ? Number(raw)
            : Date.now() + this.listen.defaultDeadlineMs;
      const remaining = deadline - Date.now();
      if (remaining <= 0)
        throw new DeadlineExceededError('the call arrived after its deadline; nothing was done');
      const authorization = md.get('authorization')[0];
      let caller: Caller;
      try {
        caller = this.auth.authenticate(
          typeof authorization === 'string' ? authorization : authorization?.toString('utf8'),
          'grpc',
        );
      } catch (e) {
        if (audit && e instanceof UnauthenticatedError)
          await this.jobs.refuseUnauthenticated('grpc', audit.action, audit.jobId || null, e);
        throw e;
      }
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new DeadlineExceededError()), remaining);
      });
      try {
        return await Promise.race([work(caller), expired]);
      } finally {
        clearTimeout(timer);
      }
    } catch (e) {
      throw toGrpcError(e, fieldPath);
    }
  }
}
