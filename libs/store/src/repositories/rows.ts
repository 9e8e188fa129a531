/** Mapping between table rows and domain values. */
import {
  policiesFromWire,
  scheduleFromWire,
  targetFromWire,
  MAX_RESUME_CATCH_UP,
  type ClaimableJob,
  type ResumeCatchUp,
  type Job,
  type JobStatus,
  type JsonValue,
  type LedgerRun,
  type Run,
  type RunStatus,
} from '@tickwork/domain';
import { spanContextOf } from '@tickwork/telemetry';
import { calendarFromRow, type CalendarRow } from './calendar-rows';

export interface JobRow {
  job_id: string;
  tenant_id: string;
  shard: number;
  schedule: Record<string, unknown>;
  status: JobStatus;
  next_run_at: Date | null;
  next_nominal_at: Date | null;
  next_dst_shift_ms: number;
  next_calendar_shift_ms?: number | string;
  /** A claim's resolved calendars of the job (JOB_CALENDARS_SQL); absent elsewhere. */
  calendars?: CalendarRow[] | null;
  fence_token: number;
  fires_count: number;
  target: Record<string, unknown>;
  payload: JsonValue;
  policies: Record<string, unknown>;
  labels: Record<string, string>;
  version: number;
  paused_until?: Date | null;
  resume_catch_up?: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
}

export const JOB_COLUMNS =
  'job_id, tenant_id, shard, schedule, status, next_run_at, next_nominal_at, next_dst_shift_ms, next_calendar_shift_ms, fence_token, fires_count, target, payload, policies, labels, version, paused_until, resume_catch_up, created_at, updated_at';

/** A jobs row as a domain Job. */
export function jobFromRow(row: JobRow): Job {
  return {
    ...claimableJobFromRow(row),
    labels: row.labels,
    version: row.version,
    pausedUntil: row.paused_until ?? null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The columns a claim reads: a job without its bookkeeping fields (less to send and parse). */
export const CLAIM_COLUMNS =
  'job_id, tenant_id, shard, schedule, status, next_run_at, next_nominal_at, next_dst_shift_ms, next_calendar_shift_ms, fence_token, fires_count, target, payload, policies, resume_catch_up';

export type ClaimRow = Omit<JobRow, 'labels' | 'version' | 'created_at' | 'updated_at' | 'paused_until'>;

/** A claimed jobs row (CLAIM_COLUMNS) as the domain's ClaimableJob. */
export function claimableJobFromRow(row: ClaimRow): ClaimableJob {
  return {
    jobId: row.job_id,
    tenantId: row.tenant_id,
    shard: row.shard,
    schedule: scheduleFromWire(row.schedule, row.job_id),
    status: row.status,
    nextRunAt: row.next_run_at,
    nextNominalAt: row.next_nominal_at,
    // Absent on a row read by a query that does not select it: the occurrence was not moved.
    nextDstShiftMs: row.next_dst_shift_ms ?? 0,
    nextCalendarShiftMs: Number(row.next_calendar_shift_ms ?? 0),
    ...(row.calendars ? { calendars: row.calendars.map(calendarFromRow) } : {}),
    fenceToken: row.fence_token,
    firesCount: row.fires_count,
    target: targetFromWire(row.target),
    payload: row.payload,
    policies: policiesFromWire(row.policies),
    resumeCatchUp: resumeCatchUpFromRow(row.resume_catch_up),
  };
}

/** The stored catch-up choice of a resume (jobs.resume_catch_up), or null. */
export function resumeCatchUpFromRow(v: Record<string, unknown> | null | undefined): ResumeCatchUp | null {
  if (!v || typeof v !== 'object') return null;
  const missed = v.missed;
  if (missed !== 'SKIP' && missed !== 'FIRE_ONCE' && missed !== 'FIRE_ALL') return null;
  const windowMs = typeof v.window_ms === 'number' ? v.window_ms : null;
  const limit = typeof v.limit === 'number' ? v.limit : MAX_RESUME_CATCH_UP;
  return { missed, windowMs, limit };
}

/** A resume's catch-up choice as jobs.resume_catch_up stores it. */
export function resumeCatchUpToRow(c: ResumeCatchUp): Record<string, JsonValue> {
  return { missed: c.missed, window_ms: c.windowMs, limit: c.limit };
}

export interface RunRow {
  job_id: string;
  fence_token: number;
  tenant_id: string;
  fire_id: string;
  nominal_time: Date;
  scheduled_for: Date;
  attempt: number;
  status: RunStatus;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
  http_status: number | null;
  error: string | null;
  job_version: number | null;
  /** bigint: pg returns it as text. Absent where a query does not select it. */
  spread_offset_ms?: string | number;
}

export const RUN_COLUMNS =
  'job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, spread_offset_ms, attempt, status, lease_owner, lease_expires_at, started_at, finished_at, http_status, error, job_version';

/** A job_runs row as a domain Run. */
export function runFromRow(row: RunRow): Run {
  return {
    jobId: row.job_id,
    fenceToken: row.fence_token,
    tenantId: row.tenant_id,
    fireId: row.fire_id,
    nominalTime: row.nominal_time,
    scheduledFor: row.scheduled_for,
    spreadOffsetMs: Number(row.spread_offset_ms ?? 0),
    attempt: row.attempt,
    status: row.status,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    httpStatus: row.http_status,
    error: row.error,
    jobVersion: row.job_version ?? null,
  };
}

/** The run columns of job_runs `r`, and the traceparent and trigger of its fire `f` (joined on the fire's key). */
export const LEDGER_RUN_COLUMNS = `${RUN_COLUMNS.split(', ')
  .map((c) => `r.${c}`)
  .join(', ')}, f.trace_context->>'traceparent' AS traceparent, f.trigger AS fire_trigger`;

/** job_runs `r` with its fire `f`: a primary-key probe per run (fires may be purged first: a left join). */
export const LEDGER_RUN_FROM =
  'job_runs r LEFT JOIN fires f ON f.job_id = r.job_id AND f.fence_token = r.fence_token';

/** A job_runs row read with LEDGER_RUN_COLUMNS as a LedgerRun. */
export function ledgerRunFromRow(
  row: RunRow & { traceparent: string | null; fire_trigger?: LedgerRun['trigger'] },
): LedgerRun {
  return { ...runFromRow(row), traceId: traceIdOf(row.traceparent), trigger: row.fire_trigger ?? null };
}

/** The trace id of a W3C traceparent, or null when it is absent or not a valid context. */
export function traceIdOf(traceparent: string | null | undefined): string | null {
  if (!traceparent) return null;
  return spanContextOf({ traceparent })?.traceId ?? null;
}
