/**
 * Jobs: create, read, list and change, as the API and the command consumer need. Every change runs
 * in one transaction that locks the job row (so it waits for, and never interleaves with, a
 * scheduler claim, which locks rows FOR UPDATE SKIP LOCKED), records the command id when the change
 * came from a Kafka command (dedupe), and writes the audit event — all or nothing.
 */
import type { Pool, PoolClient } from 'pg';
import {
  storableText,
  policiesToWire,
  scheduleToWire,
  targetToWire,
  AlreadyReplayedError,
  DuplicateCommandError,
  JobAlreadyExistsError,
  type AuditEntry,
  type CommandStamp,
  type DeadLetterRecord,
  type FireEvent,
  type IdempotencyRecord,
  type Job,
  type JobDefinition,
  type JobListPage,
  type JobListQuery,
  type JobStatus,
  type JsonValue,
  type MutationMeta,
  type NewJob,
  type PlannedOccurrence,
  type RefusedChange,
  fireEventOfRow,
  fireEventSnapshot,
  type FireColumns,
  type FireEventSnapshot,
  type FrozenTarget,
} from '@tickwork/domain';
import {
  Attr,
  dbAttributes,
  inSpan,
  originCarrier,
  spanCarrier,
  SpanKind,
  startFireSpan,
  traceCarrier,
} from '@tickwork/telemetry';
import { inTransaction } from '../database';
import { JOB_COLUMNS, RUN_COLUMNS, jobFromRow, runFromRow, type JobRow, type RunRow } from './rows';
import { isRowDataError } from '../sql/db';

/** A page's filters look at this many jobs at most: about 20 ms of index scan. */
export const DEFAULT_LIST_SCAN = 5_000;

/** Jobs in PostgreSQL: implements libs/jobs' JobStore port (a change's LockedJob is PgLockedJob). */
export class JobRepository {
  constructor(private readonly pool: Pool) {}

  /** Stores a new job outside any other change (tests and tools); throws JobAlreadyExistsError when the id is taken. */
  async insertJob(job: NewJob): Promise<Job> {
    return inTransaction(this.pool, (client) => insertJob(client, job));
  }

  /** One job by id, or null. */
  async findJob(jobId: string): Promise<Job | null> {
    const { rows } = await this.pool.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE job_id = $1`, [
      jobId,
    ]);
    return rows[0] ? jobFromRow(rows[0]) : null;
  }

  /**
   * Jobs by tenant, status and labels, ordered by job_id: at most `limit`, and no more than about
   * `maxBytes` of payload, target and labels JSON (always at least one job). Every byte sent is
   * parsed and written again on the API's event loop: a page of a thousand 256 KiB payloads would
   * hold it for seconds. `cut`: jobs within the limit were left out for the bytes.
   *
   * The filters other than tenant and id prefix are applied to a window of at most `maxScan` jobs
   * in key order (an index range scan), so a filter that matches few of a million jobs costs one
   * window, not a scan of the table; `scannedTo` is then the last job id of a window that was
   * used up, where the next page goes on (the page may be short, even empty, while more follow).
   */
  async listJobs(q: JobListQuery): Promise<JobListPage> {
    const filtered =
      q.status !== undefined ||
      Object.keys(q.labels ?? {}).length > 0 ||
      Object.keys(q.labelsNot ?? {}).length > 0 ||
      !!q.targetType;
    // Without filters on the window the page is the window: no job is read that is not sent.
    const maxScan = filtered ? (q.maxScan ?? DEFAULT_LIST_SCAN) : q.limit;
    const { rows } = await this.pool.query<
      JobRow & { fetched: string | null; scanned: string; scanned_last: string | null }
    >(
      `WITH scanned AS MATERIALIZED (
         SELECT job_id, status, labels, target->>'type' AS target_type
           FROM jobs
          WHERE ($1::text IS NULL OR tenant_id = $1)
            AND ($4::text IS NULL OR job_id > $4)
            AND ($7::text IS NULL OR (job_id >= $7 AND job_id < $7 || chr(1114111)))
          ORDER BY job_id
          LIMIT $10
       ), matched AS (
         SELECT job_id FROM scanned
          WHERE ($2::text IS NULL OR status = $2)
            AND labels @> $3::jsonb
            AND ($8::text IS NULL OR target_type = $8)
            AND NOT EXISTS (SELECT 1 FROM jsonb_each_text($9::jsonb) n WHERE labels->>n.key = n.value)
          ORDER BY job_id
          LIMIT $5
       ), page AS (
         SELECT j.*, count(*) OVER () AS fetched,
                sum(j.bytes) OVER (ORDER BY j.job_id) - j.bytes AS bytes_before
           FROM (SELECT ${JOB_COLUMNS},
                        octet_length(payload::text) + octet_length(target::text) + octet_length(labels::text) AS bytes
                   FROM jobs WHERE job_id IN (SELECT job_id FROM matched)) j
       )
       SELECT s.scanned, s.scanned_last, p.*
         FROM (SELECT count(*) AS scanned, max(job_id) AS scanned_last FROM scanned) s
         LEFT JOIN (SELECT ${JOB_COLUMNS}, fetched FROM page WHERE bytes_before = 0 OR bytes_before < $6) p ON true
        ORDER BY p.job_id`,
      [
        q.tenantId ?? null,
        q.status ?? null,
        JSON.stringify(q.labels ?? {}),
        q.afterJobId ?? null,
        q.limit,
        q.maxBytes ?? Number.MAX_SAFE_INTEGER,
        q.jobIdPrefix || null,
        q.targetType || null,
        JSON.stringify(q.labelsNot ?? {}),
        maxScan,
      ],
    );
    const found = rows.filter((r) => r.job_id !== null);
    const summary = rows[0];
    const windowUsedUp = summary !== undefined && Number(summary.scanned) >= maxScan;
    return {
      jobs: found.map(jobFromRow),
      cut: found.length > 0 && found.length < Number(found[0]!.fetched),
      scannedTo: windowUsedUp ? summary.scanned_last : null,
    };
  }

  /**
   * Runs `work` on the job row locked FOR UPDATE (null when there is none), in one transaction
   * with the command dedupe record and the audit event. Throws DuplicateCommandError, without
   * calling `work`, when meta.command was applied before.
   */
  async mutate<T>(
    jobId: string,
    meta: MutationMeta,
    work: (job: Job | null, tx: PgLockedJob) => Promise<T>,
  ): Promise<T> {
    return inSpan(
      'mutate jobs',
      {
        kind: SpanKind.CLIENT,
        attributes: dbAttributes('mutate', 'jobs', { [Attr.JobId]: jobId, [Attr.Action]: meta.audit.action }),
      },
      () => this.mutateInTransaction(jobId, meta, work),
    );
  }

  private async mutateInTransaction<T>(
    jobId: string,
    meta: MutationMeta,
    work: (job: Job | null, tx: PgLockedJob) => Promise<T>,
  ): Promise<T> {
    return inTransaction(this.pool, async (client) => {
      if (meta.command) {
        const c = meta.command;
        // One round trip: the insert, or (the statement's snapshot not seeing it) the earlier outcome.
        const { rows: stamped } = await client.query<{
          inserted: boolean;
          outcome: string | null;
          reason: string | null;
        }>(
          `WITH ins AS (
             INSERT INTO applied_commands (tenant_id, command_id, job_id, command_type) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant_id, command_id) DO NOTHING RETURNING 1)
           SELECT EXISTS (SELECT 1 FROM ins) AS inserted, a.outcome, a.reason
             FROM (SELECT 1) one
             LEFT JOIN applied_commands a ON a.tenant_id = $1 AND a.command_id = $2`,
          [c.tenantId, c.commandId, jobId, c.type],
        );
        const stamp = stamped[0];
        if (!stamp?.inserted)
          throw new DuplicateCommandError(
            c.tenantId,
            c.commandId,
            stamp?.outcome ?? 'APPLIED',
            stamp?.reason ?? null,
          );
      }
      const { rows } = await client.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs WHERE job_id = $1 FOR UPDATE`,
        [jobId],
      );
      const job = rows[0] ? jobFromRow(rows[0]) : null;
      const tx = new PgLockedJob(client, jobId);
      const result = await work(job, tx);
      await insertAudit(client, meta.audit, {
        tenantId: tx.tenantId ?? job?.tenantId ?? meta.command?.tenantId ?? null,
        jobId,
        outcome: 'OK',
        details: { ...tx.details, ...(meta.command ? { command_id: meta.command.commandId } : {}) },
      });
      return result;
    });
  }

  /**
   * Records a Kafka command's rejection as its outcome, so that a later delivery of the same
   * (tenant, command_id) is a duplicate and is not applied after the commands that followed it.
   * False when the command already had an outcome.
   */
  async recordCommandRejection(
    c: CommandStamp,
    jobId: string,
    code: string,
    reason: string,
  ): Promise<boolean> {
    const r = await this.pool
      .query(
        `INSERT INTO applied_commands (tenant_id, command_id, job_id, command_type, outcome, reason)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, command_id) DO NOTHING`,
        // The reason quotes the refused input, which may hold what text columns cannot (a NUL).
        [c.tenantId, c.commandId, storableText(jobId), c.type, code, storableText(reason)],
      )
      // A value the table cannot hold is no reason to hold up the partition: the rejection still
      // goes out, unrecorded (a copy of it delivered again is refused again on its own).
      .catch((e: unknown) => {
        if (isRowDataError(e)) return { rowCount: 0 };
        throw e;
      });
    return r.rowCount === 1;
  }

  /** The live (younger than `retentionMs`) record of a CreateJob idempotency key, or null. */
  async findIdempotencyKey(
    tenantId: string,
    key: string,
    retentionMs: number,
  ): Promise<IdempotencyRecord | null> {
    const { rows } = await this.pool.query<{ job_id: string; request_sha256: string }>(
      `SELECT job_id, request_sha256 FROM idempotency_keys
        WHERE tenant_id = $1 AND idempotency_key = $2 AND created_at > now() - make_interval(secs => $3::double precision / 1000)`,
      [tenantId, key, retentionMs],
    );
    const row = rows[0];
    return row ? { jobId: row.job_id, requestSha256: row.request_sha256 } : null;
  }

  /**
   * Records an audit event outside a change: one that was refused or failed (successful changes
   * are written by `mutate`), or a call that changed nothing (an idempotent CreateJob replay).
   */
  async recordRefusal(audit: AuditEntry, what: RefusedChange): Promise<void> {
    await insertAudit(this.pool, audit, { details: {}, ...what });
  }
}

type Queryable = Pick<PoolClient, 'query'>;

/** The active trace context as the jsonb a job row keeps (its fence token is added in SQL), or null. */
function traceOrigin(): string | null {
  const carrier = originCarrier(traceCarrier());
  return carrier ? JSON.stringify(carrier) : null;
}

/** Writes one audit event (inside the caller's transaction when `db` is its client). */
export async function insertAudit(
  db: Queryable,
  a: AuditEntry,
  what: {
    tenantId: string | null;
    jobId: string | null;
    outcome: string;
    details: Record<string, JsonValue>;
  },
): Promise<void> {
  // A refused call may carry text PostgreSQL cannot hold (a NUL in a job id): it is recorded legibly.
  const text = (s: string | null) => (s === null ? null : storableText(s));
  await db.query(
    `INSERT INTO audit_events (actor, role, via, action, tenant_id, job_id, outcome, details) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      text(a.actor),
      a.role,
      a.via,
      a.action,
      text(what.tenantId),
      text(what.jobId),
      what.outcome,
      JSON.stringify(what.details, (_k, v: unknown) => (typeof v === 'string' ? storableText(v) : v)),
    ],
  );
}

async function insertJob(client: Queryable, job: NewJob): Promise<Job> {
  const d = job.definition;
  try {
    const { rows } = await client.query<JobRow>(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, time_zone, status, next_run_at, next_nominal_at, next_dst_shift_ms, next_calendar_shift_ms, target, payload, policies, labels, fence_token, trace_context)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $15, $16, $10, $11, $12, $13, t.fence_token,
              $14::jsonb || jsonb_build_object('fence_token', t.fence_token)
         FROM (SELECT COALESCE((SELECT fence_token FROM job_tombstones WHERE job_id = $1), 0) AS fence_token) t
       RETURNING ${JOB_COLUMNS}`,
      [
        d.jobId,
        d.tenantId,
        job.shard,
        d.schedule.kind,
        JSON.stringify(scheduleToWire(d.schedule)),
        d.schedule.kind === 'cron' || d.schedule.kind === 'rrule' ? d.schedule.timeZone : 'UTC',
        job.next ? 'SCHEDULED' : 'COMPLETED',
        job.next?.scheduledFor ?? null,
        job.next?.nominalTime ?? null,
        JSON.stringify(targetToWire(d.target)),
        JSON.stringify(d.payload),
        JSON.stringify(policiesToWire(d.policies)),
        JSON.stringify(d.labels),
        traceOrigin(),
        job.next?.dstShiftMs ?? 0,
        job.next?.calendarShiftMs ?? 0,
      ],
    );
    await client.query('DELETE FROM job_tombstones WHERE job_id = $1', [d.jobId]);
    return jobFromRow(rows[0]!);
  } catch (e) {
    if ((e as { code?: string }).code === '23505') throw new JobAlreadyExistsError(d.jobId);
    throw e;
  }
}

/** One job row locked FOR UPDATE inside a change's transaction: libs/jobs' LockedJob. */
export class PgLockedJob {
  readonly details: Record<string, JsonValue> = {};
  tenantId: string | null = null;

  constructor(
    private readonly client: PoolClient,
    private readonly jobId: string,
  ) {}

  note(details: Record<string, JsonValue>): void {
    Object.assign(this.details, details);
  }

  async claimIdempotencyKey(
    tenantId: string,
    key: string,
    requestSha256: string,
    retentionMs: number,
  ): Promise<boolean> {
    await this.client.query(
      `DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1::double precision / 1000) LIMIT 100))`,
      [retentionMs],
    );
    const { rowCount } = await this.client.query(
      `INSERT INTO idempotency_keys (tenant_id, idempotency_key, request_sha256, job_id) VALUES ($1, $2, $3, $4)
       ON CONFLICT (tenant_id, idempotency_key) DO UPDATE
         SET request_sha256 = EXCLUDED.request_sha256, job_id = EXCLUDED.job_id, created_at = now()
       WHERE idempotency_keys.created_at < now() - make_interval(secs => $5::double precision / 1000)`,
      [tenantId, key, requestSha256, this.jobId, retentionMs],
    );
    if (rowCount === 1) this.note({ idempotency_key: key });
    return rowCount === 1;
  }

  async liveJobCount(tenantId: string): Promise<number> {
    await this.client.query(`SELECT pg_advisory_xact_lock(hashtext('tickwork.tenant-jobs'), hashtext($1))`, [
      tenantId,
    ]);
    const { rows } = await this.client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND status <> 'COMPLETED'`,
      [tenantId],
    );
    return rows[0]?.n ?? 0;
  }

  async insert(job: NewJob): Promise<Job> {
    this.tenantId = job.definition.tenantId;
    // A savepoint keeps the transaction usable for the caller when the id turns out to be taken.
    await this.client.query('SAVEPOINT insert_job');
    try {
      const created = await insertJob(this.client, job);
      await this.client.query('RELEASE SAVEPOINT insert_job');
      return created;
    } catch (e) {
      await this.client.query('ROLLBACK TO SAVEPOINT insert_job');
      throw e;
    }
  }

  async replaceDefinition(
    d: JobDefinition,
    status: JobStatus,
    next: PlannedOccurrence | null | 'keep',
  ): Promise<Job> {
    const keep = next === 'keep';
    const { rows } = await this.client.query<JobRow>(
      `UPDATE jobs
          SET schedule_kind = $2, schedule = $3, time_zone = $4, target = $5, payload = $6, policies = $7, labels = $8,
              status = $9,
              next_run_at = CASE WHEN $10::boolean THEN next_run_at ELSE $11 END,
              next_nominal_at = CASE WHEN $10::boolean THEN next_nominal_at ELSE $12 END,
              next_dst_shift_ms = CASE WHEN $10::boolean THEN next_dst_shift_ms ELSE $14 END,
              next_calendar_shift_ms = CASE WHEN $10::boolean THEN next_calendar_shift_ms ELSE $15 END,
              version = version + 1, updated_at = now(),
              trace_context = COALESCE($13::jsonb || jsonb_build_object('fence_token', fence_token), trace_context)
        WHERE job_id = $1
        RETURNING ${JOB_COLUMNS}`,
      [
        this.jobId,
        d.schedule.kind,
        JSON.stringify(scheduleToWire(d.schedule)),
        d.schedule.kind === 'cron' || d.schedule.kind === 'rrule' ? d.schedule.timeZone : 'UTC',
        JSON.stringify(targetToWire(d.target)),
        JSON.stringify(d.payload),
        JSON.stringify(policiesToWire(d.policies)),
        JSON.stringify(d.labels),
        status,
        keep,
        keep ? null : (next?.scheduledFor ?? null),
        keep ? null : (next?.nominalTime ?? null),
        traceOrigin(),
        keep ? 0 : (next?.dstShiftMs ?? 0),
        keep ? 0 : (next?.calendarShiftMs ?? 0),
      ],
    );
    return jobFromRow(rows[0]!);
  }

  async setStatus(status: 'PAUSED' | 'SCHEDULED', next?: PlannedOccurrence): Promise<Job> {
    const { rows } = await this.client.query<JobRow>(
      // A pause or resume by hand ends a pause-until; a pause forgets an unclaimed catch-up choice.
      `UPDATE jobs SET status = $2, next_run_at = COALESCE($3, next_run_at), next_nominal_at = COALESCE($4, next_nominal_at),
              paused_until = NULL, pause_resume = NULL,
              resume_catch_up = CASE WHEN $2 = 'PAUSED' THEN NULL ELSE resume_catch_up END,
              next_dst_shift_ms = CASE WHEN $4::timestamptz IS NULL THEN next_dst_shift_ms ELSE $6 END,
              next_calendar_shift_ms = CASE WHEN $4::timestamptz IS NULL THEN next_calendar_shift_ms ELSE $7 END,
              version = version + 1, updated_at = now(),
              trace_context = COALESCE($5::jsonb || jsonb_build_object('fence_token', fence_token), trace_context)
        WHERE job_id = $1 RETURNING ${JOB_COLUMNS}`,
      [
        this.jobId,
        status,
        next?.scheduledFor ?? null,
        next?.nominalTime ?? null,
        traceOrigin(),
        next?.dstShiftMs ?? 0,
        next?.calendarShiftMs ?? 0,
      ],
    );
    return jobFromRow(rows[0]!);
  }

  async delete(): Promise<void> {
    await this.client.query(
      `WITH gone AS (DELETE FROM jobs WHERE job_id = $1 RETURNING job_id, tenant_id, fence_token)
       INSERT INTO job_tombstones (job_id, tenant_id, fence_token) SELECT job_id, tenant_id, fence_token FROM gone
       ON CONFLICT (job_id) DO UPDATE SET tenant_id = EXCLUDED.tenant_id, fence_token = EXCLUDED.fence_token, deleted_at = now()`,
      [this.jobId],
    );
    // Fires still in the outbox stay: they were claimed before the delete and will be published.
    await this.client.query(
      `DELETE FROM fires f USING fire_batches b
        WHERE f.job_id = $1 AND b.batch_id = f.batch_id AND b.enqueued_at IS NOT NULL`,
      [this.jobId],
    );
    await this.client.query('DELETE FROM occurrence_skips WHERE job_id = $1', [this.jobId]);
    await this.client.query('DELETE FROM occurrence_slo WHERE job_id = $1', [this.jobId]);
    await this.client.query('DELETE FROM slo_watch WHERE job_id = $1', [this.jobId]);
  }

  async recordFire(
    trigger: 'MANUAL' | 'REPLAY',
    claimedBy: string,
    build: (fenceToken: number, now: Date) => FireEvent,
    jobVersion?: number | null,
  ): Promise<FireEvent> {
    const { rows } = await this.client.query<{
      fence_token: number;
      shard: number;
      version: number;
      now: Date;
    }>(
      `UPDATE jobs SET fence_token = fence_token + 1, last_fired_at = now(), updated_at = now()
        WHERE job_id = $1 RETURNING fence_token, shard, version, now() AS now`,
      [this.jobId],
    );
    const row = rows[0]!;
    const event = build(row.fence_token, row.now);
    // The occurrence's span is a child of this request: the relay publishes the fire under it.
    const span = startFireSpan(event, trigger, { shard: row.shard });
    const fireTrace = originCarrier(spanCarrier(span));
    span.end();
    // A batch of its own: the relay publishes MANUAL and REPLAY batches at once.
    await this.client.query(
      `WITH b AS (
         INSERT INTO fire_batches (shard, trigger, claimed_by, fires) VALUES ($4, $7, $8, 1) RETURNING batch_id
       )
       INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, scheduled_for, trigger, claimed_by, event, trace_context, job_version, batch_id)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, b.batch_id FROM b`,
      [
        event.jobId,
        event.fenceToken,
        event.tenantId,
        row.shard,
        event.nominalTime,
        event.scheduledFor,
        trigger,
        claimedBy,
        JSON.stringify(fireEventSnapshot(event)),
        fireTrace ? JSON.stringify(fireTrace) : null,
        jobVersion === undefined ? row.version : jobVersion,
      ],
    );
    this.note({ fence_token: event.fenceToken, trigger });
    return event;
  }

  async deadLetter(fenceToken: number): Promise<DeadLetterRecord | null> {
    const { rows } = await this.client.query<
      RunRow & {
        event: FireEventSnapshot | FrozenTarget | null;
        fire: FireColumns | null;
        job: FrozenTarget | null;
        replay_fence_token: number | null;
      }
    >(
      // The fire's event: stored whole, or its columns with the target and payload frozen when
      // the job changed, or else the job's own (fireEventOfRow).
      `SELECT ${RUN_COLUMNS.split(', ')
        .map((c) => `r.${c}`)
        .join(', ')}, f.event, d.replay_fence_token,
              CASE WHEN f.job_id IS NOT NULL THEN json_build_object(
                'job_id', f.job_id, 'tenant_id', f.tenant_id, 'fence_token', f.fence_token,
                'scheduled_for', f.scheduled_for, 'nominal_time', f.nominal_time,
                'spread_offset_ms', f.spread_offset_ms) END AS fire,
              (SELECT json_build_object('target', j.target, 'payload', j.payload)
                 FROM jobs j WHERE j.job_id = r.job_id AND f.event IS NULL) AS job
         FROM job_runs r
         LEFT JOIN fires f ON f.job_id = r.job_id AND f.fence_token = r.fence_token
         LEFT JOIN dead_letter_replays d ON d.job_id = r.job_id AND d.fence_token = r.fence_token
        WHERE r.job_id = $1 AND r.fence_token = $2 AND r.status = 'DEAD_LETTERED'`,
      [this.jobId, fenceToken],
    );
    const row = rows[0];
    if (!row) return null;
    const fire = row.fire
      ? {
          ...row.fire,
          scheduled_for: new Date(row.fire.scheduled_for),
          nominal_time: new Date(row.fire.nominal_time),
        }
      : null;
    return {
      run: runFromRow(row),
      // Without the fire row (purged) or anything to rebuild it from, there is no event to replay.
      event: fire && (row.event || row.job) ? fireEventOfRow(fire, row.event, row.job) : null,
      replayFenceToken: row.replay_fence_token,
    };
  }

  async markReplayed(fenceToken: number, replayFenceToken: number, by: string): Promise<void> {
    const { rows } = await this.client.query<{ replay_fence_token: number }>(
      `INSERT INTO dead_letter_replays (job_id, fence_token, replay_fence_token, replayed_by) VALUES ($1, $2, $3, $4)
       ON CONFLICT (job_id, fence_token) DO NOTHING RETURNING replay_fence_token`,
      [this.jobId, fenceToken, replayFenceToken, by],
    );
    if (rows.length === 0) {
      const existing = await this.client.query<{ replay_fence_token: number }>(
        'SELECT replay_fence_token FROM dead_letter_replays WHERE job_id = $1 AND fence_token = $2',
        [this.jobId, fenceToken],
      );
      throw new AlreadyReplayedError(
        `${this.jobId}:${fenceToken}`,
        existing.rows[0]?.replay_fence_token ?? -1,
      );
    }
  }
}
