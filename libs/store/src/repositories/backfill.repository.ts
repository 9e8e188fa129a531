/**
 * Backfills (migration 0028): the request and its planned occurrences, and the paced firing of
 * them by the scheduler holding the job's shard. Every fire goes into the outbox with trigger
 * BACKFILL and the occurrence's nominal time; the unique occurrence index shared with scheduled
 * fires makes an occurrence fire at most once, across backfills and scheduler crashes.
 */
import type { Pool, PoolClient } from 'pg';
import {
  ACTIVE_BACKFILL_STATUSES,
  DuplicateCommandError,
  fireEventSnapshot,
  fireIdOf,
  type AuditEntry,
  type Backfill,
  type BackfillItemState,
  type CommandStamp,
  type BackfillItemReason,
  type BackfillLedger,
  type BackfillPlan,
  type BackfillRequest,
  type BackfillStatus,
  type FireEvent,
  type Job,
  type PacedFires,
  type ShardEpoch,
} from '@tickwork/domain';
import { inTransaction } from '../database';
import { insertAudit } from './job.repository';
import { jobFromRow, JOB_COLUMNS, type JobRow } from './rows';

/** An active backfill of a held shard whose next slot has come. */
export interface DueBackfill {
  readonly backfillId: number;
  readonly tenantId: string;
  readonly jobId: string;
  readonly shard: number;
  readonly epoch: number;
}

/** What one step of a backfill did. */
export interface BackfillStep {
  /** False when the shard's lease is no longer the caller's (epoch moved): nothing was done. */
  readonly fenced: boolean;
  readonly fired: readonly FireEvent[];
  readonly foundRan: number;
  /** The backfill's status after the step (null: it was not active any more). */
  readonly status: BackfillStatus | null;
}

interface BackfillRow {
  backfill_id: string;
  tenant_id: string;
  job_id: string;
  window_from: Date;
  window_to: Date;
  max_per_second: number;
  skip_reasons: string[];
  status: BackfillStatus;
  planned: number;
  fired: number;
  found_ran: number;
  already_ran: number;
  excluded: Record<string, number>;
  created_by: string;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  cancelled_by: string | null;
  failure: string | null;
  next_fire_at: Date;
  now?: Date;
}

function backfillFromRow(r: BackfillRow): Backfill {
  return {
    backfillId: Number(r.backfill_id),
    tenantId: r.tenant_id,
    jobId: r.job_id,
    from: r.window_from,
    to: r.window_to,
    maxPerSecond: Number(r.max_per_second),
    skipReasons: r.skip_reasons,
    status: r.status,
    planned: r.planned,
    fired: r.fired,
    foundRan: r.found_ran,
    alreadyRan: r.already_ran,
    excluded: r.excluded,
    createdBy: r.created_by,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    cancelledBy: r.cancelled_by,
    failure: r.failure,
  };
}

const ACTIVE = ACTIVE_BACKFILL_STATUSES as readonly string[];

/** Backfills in PostgreSQL: implements libs/jobs' BackfillStore port and libs/scheduling's. */
export class BackfillRepository {
  constructor(private readonly pool: Pool) {}

  /** A job, for planning a backfill (null: no such job). */
  async findJob(jobId: string): Promise<Job | null> {
    const { rows } = await this.pool.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE job_id = $1`, [
      jobId,
    ]);
    return rows[0] ? jobFromRow(rows[0]) : null;
  }

  /** The occurrence ledger of a job over [from, to): its scheduled and backfill fires, and the skip ranges overlapping it. */
  async ledger(jobId: string, from: Date, to: Date): Promise<BackfillLedger> {
    const fired = await this.pool.query<{
      nominal_time: Date;
      dst_shift_ms: number;
      calendar_shift_ms: string;
    }>(
      `SELECT nominal_time, dst_shift_ms, calendar_shift_ms FROM fires
        WHERE job_id = $1 AND trigger IN ('SCHEDULE', 'BACKFILL') AND nominal_time >= $2 AND nominal_time < $3`,
      [jobId, from, to],
    );
    const skipped = await this.pool.query<{ reason: string; first_nominal: Date; last_nominal: Date }>(
      `SELECT reason, first_nominal, last_nominal FROM occurrence_skips
        WHERE job_id = $1 AND first_nominal < $3 AND last_nominal >= $2 ORDER BY id`,
      [jobId, from, to],
    );
    return {
      fired: fired.rows.map((r) => ({
        nominal: r.nominal_time,
        dstShiftMs: r.dst_shift_ms,
        calendarShiftMs: Number(r.calendar_shift_ms),
      })),
      skipped: skipped.rows.map((r) => ({
        reason: r.reason,
        firstNominal: r.first_nominal,
        lastNominal: r.last_nominal,
      })),
    };
  }

  /** Stores a backfill and its planned occurrences, with the audit event, in one transaction. */
  async create(req: {
    job: Job;
    request: BackfillRequest;
    plan: BackfillPlan;
    createdBy: string;
    audit: AuditEntry;
    /** A Kafka command's stamp: recorded in the command ledger, a second copy is a DuplicateCommandError. */
    command?: CommandStamp;
  }): Promise<Backfill> {
    return inTransaction(this.pool, async (client) => {
      const { job, request, plan } = req;
      if (req.command) await stampCommand(client, req.command, job.jobId);
      const done = plan.items.length === 0;
      const { rows } = await client.query<BackfillRow>(
        `INSERT INTO backfills (tenant_id, job_id, shard, window_from, window_to, max_per_second, skip_reasons, status,
                                planned, already_ran, excluded, created_by, finished_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, CASE WHEN $8 = 'DONE' THEN now() END)
         RETURNING *`,
        [
          job.tenantId,
          job.jobId,
          job.shard,
          request.from,
          request.to,
          request.maxPerSecond,
          [...request.skipReasons],
          done ? 'DONE' : 'PENDING',
          plan.items.length,
          plan.alreadyRan,
          JSON.stringify(plan.excluded),
          req.createdBy,
        ],
      );
      const b = backfillFromRow(rows[0]!);
      if (!done)
        await client.query(
          `INSERT INTO backfill_items (backfill_id, seq, nominal_time, dst_shift_ms, reason, calendar_shift_ms, calendar)
           SELECT $1, i.seq, i.nominal, i.shift, i.reason, i.cal_shift, i.calendar
             FROM unnest($2::int[], $3::timestamptz[], $4::int[], $5::text[], $6::bigint[], $7::text[])
                  AS i(seq, nominal, shift, reason, cal_shift, calendar)`,
          [
            b.backfillId,
            plan.items.map((_, i) => i + 1),
            plan.items.map((i) => i.nominal),
            plan.items.map((i) => i.dstShiftMs),
            plan.items.map((i) => i.reason),
            plan.items.map((i) => i.calendarShiftMs ?? 0),
            plan.items.map((i) => i.calendar ?? null),
          ],
        );
      await insertAudit(client, req.audit, {
        tenantId: job.tenantId,
        jobId: job.jobId,
        outcome: 'OK',
        details: {
          backfill_id: b.backfillId,
          from: request.from.toISOString(),
          to: request.to.toISOString(),
          max_per_second: request.maxPerSecond,
          planned: b.planned,
        },
      });
      return b;
    });
  }

  /** One backfill of the job, or null. */
  async get(jobId: string, backfillId: number): Promise<Backfill | null> {
    const { rows } = await this.pool.query<BackfillRow>(
      'SELECT * FROM backfills WHERE backfill_id = $1 AND job_id = $2',
      [backfillId, jobId],
    );
    return rows[0] ? backfillFromRow(rows[0]) : null;
  }

  /** A job's backfills, newest first, below `beforeId` when given. */
  async list(jobId: string, limit: number, beforeId?: number): Promise<Backfill[]> {
    const { rows } = await this.pool.query<BackfillRow>(
      `SELECT * FROM backfills WHERE job_id = $1 AND ($2::bigint IS NULL OR backfill_id < $2)
        ORDER BY backfill_id DESC LIMIT $3`,
      [jobId, beforeId ?? null, limit],
    );
    return rows.map(backfillFromRow);
  }

  /** A backfill's planned occurrences in order, after `afterSeq`, at most `limit`. */
  async items(jobId: string, backfillId: number, limit: number, afterSeq = 0): Promise<BackfillItemState[]> {
    const { rows } = await this.pool.query<{
      seq: number;
      nominal_time: Date;
      dst_shift_ms: number;
      reason: BackfillItemReason;
      state: BackfillItemState['state'];
      fence_token: string | null;
    }>(
      `SELECT i.seq, i.nominal_time, i.dst_shift_ms, i.reason, i.state, i.fence_token
         FROM backfill_items i JOIN backfills b ON b.backfill_id = i.backfill_id
        WHERE i.backfill_id = $1 AND b.job_id = $4 AND i.seq > $2 ORDER BY i.seq LIMIT $3`,
      [backfillId, afterSeq, limit, jobId],
    );
    return rows.map((r) => ({
      seq: r.seq,
      nominal: r.nominal_time,
      dstShiftMs: r.dst_shift_ms,
      reason: r.reason,
      state: r.state,
      fenceToken: r.fence_token === null ? null : Number(r.fence_token),
    }));
  }

  /**
   * Cancels an active backfill (its fires already in the outbox still go out; no further one is
   * made: the firing step locks the row and checks its status). Returns the backfill as it is
   * after the call: unchanged when it had ended. Audited in the same transaction.
   */
  async cancel(jobId: string, backfillId: number, by: string, audit: AuditEntry): Promise<Backfill | null> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<BackfillRow>(
        `UPDATE backfills SET status = 'CANCELLED', cancelled_by = $2, finished_at = now(), updated_at = now()
          WHERE backfill_id = $1 AND job_id = $4 AND status = ANY($3::text[]) RETURNING *`,
        [backfillId, by, ACTIVE, jobId],
      );
      const b = rows[0] ? backfillFromRow(rows[0]) : await this.getWith(client, jobId, backfillId);
      if (!b) return null;
      await insertAudit(client, audit, {
        tenantId: b.tenantId,
        jobId: b.jobId,
        outcome: 'OK',
        details: { backfill_id: backfillId, cancelled: rows.length > 0, status: b.status },
      });
      return b;
    });
  }

  private async getWith(client: PoolClient, jobId: string, backfillId: number): Promise<Backfill | null> {
    const { rows } = await client.query<BackfillRow>(
      'SELECT * FROM backfills WHERE backfill_id = $1 AND job_id = $2',
      [backfillId, jobId],
    );
    return rows[0] ? backfillFromRow(rows[0]) : null;
  }

  /** How many backfills are PENDING or RUNNING in these shards. */
  async activeCount(shards: readonly number[]): Promise<number> {
    if (shards.length === 0) return 0;
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM backfills WHERE shard = ANY($1::int[]) AND status IN ('PENDING', 'RUNNING')`,
      [[...shards]],
    );
    return Number(rows[0]!.n);
  }

  /** Active backfills of the shards the caller holds (lease and epoch still its own) whose next slot has come. */
  async due(owner: string, shards: readonly ShardEpoch[], limit: number): Promise<DueBackfill[]> {
    if (shards.length === 0) return [];
    const { rows } = await this.pool.query<{
      backfill_id: string;
      tenant_id: string;
      job_id: string;
      shard: number;
      epoch: string;
    }>(
      `SELECT b.backfill_id, b.tenant_id, b.job_id, b.shard, l.epoch
         FROM backfills b
         JOIN shard_leases l ON l.shard = b.shard
         JOIN unnest($1::int[], $2::bigint[]) AS o(shard, epoch) ON o.shard = l.shard AND o.epoch = l.epoch
        WHERE l.owner = $3 AND l.expires_at > now()
          AND b.status IN ('PENDING', 'RUNNING') AND b.next_fire_at <= now()
        ORDER BY b.next_fire_at LIMIT $4`,
      [shards.map((s) => s.shard), shards.map((s) => s.epoch), owner, limit],
    );
    return rows.map((r) => ({
      backfillId: Number(r.backfill_id),
      tenantId: r.tenant_id,
      jobId: r.job_id,
      shard: r.shard,
      epoch: Number(r.epoch),
    }));
  }

  /**
   * One paced step of a backfill, in one transaction fenced like a claim: the shard lease must
   * still be (owner, epoch); the backfill row is locked and must be active; `pace` (given the
   * backfill's next slot, its rate, the database's now and the occurrences left) says how many to
   * fire. Each planned occurrence in turn gets a new fence token and a fire with trigger BACKFILL
   * in one outbox batch (the relay publishes it at once), unless it has fired by then (then it is
   * ALREADY_RAN). A crash before the commit leaves nothing; after it, the next owner goes on from
   * the next PLANNED occurrence.
   */
  async fireNext(req: {
    owner: string;
    due: DueBackfill;
    pace: (nextAtMs: number, nowMs: number, ratePerSec: number, left: number) => PacedFires;
  }): Promise<BackfillStep> {
    const { due } = req;
    return inTransaction(this.pool, async (client) => {
      const lease = await client.query(
        `SELECT 1 FROM shard_leases WHERE shard = $1 AND owner = $2 AND epoch = $3 AND expires_at > now() FOR KEY SHARE`,
        [due.shard, req.owner, due.epoch],
      );
      if (lease.rowCount === 0) return { fenced: true, fired: [], foundRan: 0, status: null };
      const { rows: bf } = await client.query<BackfillRow>(
        `SELECT *, now() AS now FROM backfills WHERE backfill_id = $1 AND status = ANY($2::text[]) FOR UPDATE`,
        [due.backfillId, ACTIVE],
      );
      const b = bf[0];
      if (!b) return { fenced: false, fired: [], foundRan: 0, status: null };
      const now = b.now!;
      const left = b.planned - b.fired - b.found_ran;
      const paced = req.pace(b.next_fire_at.getTime(), now.getTime(), Number(b.max_per_second), left);
      if (paced.count <= 0 && left > 0) return { fenced: false, fired: [], foundRan: 0, status: b.status };
      const { rows: jobs } = await client.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs WHERE job_id = $1 FOR UPDATE`,
        [b.job_id],
      );
      const job = jobs[0] ? jobFromRow(jobs[0]) : null;
      if (!job || job.tenantId !== b.tenant_id) {
        await client.query(
          `UPDATE backfills SET status = 'FAILED', failure = $2, finished_at = now(), updated_at = now() WHERE backfill_id = $1`,
          [due.backfillId, `job ${b.job_id} was deleted`],
        );
        return { fenced: false, fired: [], foundRan: 0, status: 'FAILED' };
      }
      const { rows: items } = await client.query<{
        seq: number;
        nominal_time: Date;
        dst_shift_ms: number;
        calendar_shift_ms: string;
        calendar: string | null;
      }>(
        `SELECT seq, nominal_time, dst_shift_ms, calendar_shift_ms, calendar FROM backfill_items
          WHERE backfill_id = $1 AND state = 'PLANNED' ORDER BY seq LIMIT $2`,
        [due.backfillId, Math.max(0, paced.count)],
      );
      // Occurrences that fired since the plan (another backfill, a claim): not fired again. The
      // job row is locked, so no claim of this job commits a fire between this read and the insert.
      const { rows: ran } = await client.query<{ seq: number }>(
        `SELECT i.seq FROM unnest($1::int[], $2::timestamptz[], $3::int[], $5::bigint[]) AS i(seq, nominal, shift, cal_shift)
          WHERE EXISTS (SELECT 1 FROM fires f WHERE f.job_id = $4 AND f.trigger IN ('SCHEDULE', 'BACKFILL')
                           AND f.nominal_time = i.nominal AND f.dst_shift_ms = i.shift
                           AND f.calendar_shift_ms = i.cal_shift)`,
        [
          items.map((i) => i.seq),
          items.map((i) => i.nominal_time),
          items.map((i) => i.dst_shift_ms),
          b.job_id,
          items.map((i) => i.calendar_shift_ms),
        ],
      );
      const ranSeqs = new Set(ran.map((r) => r.seq));
      const toFire = items.filter((i) => !ranSeqs.has(i.seq));
      const fired: FireEvent[] = [];
      if (toFire.length > 0) {
        const { rows: tok } = await client.query<{ fence_token: string }>(
          `UPDATE jobs SET fence_token = fence_token + $2, last_fired_at = now(), updated_at = now()
            WHERE job_id = $1 RETURNING fence_token`,
          [b.job_id, toFire.length],
        );
        const first = Number(tok[0]!.fence_token) - toFire.length + 1;
        toFire.forEach((i, k) =>
          fired.push({
            jobId: job.jobId,
            tenantId: job.tenantId,
            fenceToken: first + k,
            fireId: fireIdOf({ jobId: job.jobId, fenceToken: first + k }),
            scheduledFor: now,
            nominalTime: i.nominal_time,
            attempt: 1,
            target: job.target,
            payload: job.payload,
          }),
        );
        await client.query(
          `WITH b AS (
             INSERT INTO fire_batches (shard, trigger, claimed_by, fires) VALUES ($3, 'BACKFILL', $4, $5) RETURNING batch_id
           )
           INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, dst_shift_ms, scheduled_for, trigger, claimed_by, event, job_version, batch_id, calendar_shift_ms, calendar)
           SELECT $1, v.token, $2, $3, v.nominal, v.shift, $6, 'BACKFILL', $4, v.event, $7, b.batch_id, v.cal_shift, v.calendar
             FROM unnest($8::bigint[], $9::timestamptz[], $10::int[], $11::jsonb[], $12::bigint[], $13::text[])
                  AS v(token, nominal, shift, event, cal_shift, calendar), b`,
          [
            job.jobId,
            job.tenantId,
            job.shard,
            `backfill:${due.backfillId}`,
            toFire.length,
            now,
            job.version,
            fired.map((f) => f.fenceToken),
            toFire.map((i) => i.nominal_time),
            toFire.map((i) => i.dst_shift_ms),
            fired.map((f) => JSON.stringify(fireEventSnapshot(f))),
            toFire.map((i) => i.calendar_shift_ms),
            toFire.map((i) => i.calendar),
          ],
        );
      }
      await client.query(
        `UPDATE backfill_items i SET state = CASE WHEN v.token IS NULL THEN 'ALREADY_RAN' ELSE 'FIRED' END, fence_token = v.token
           FROM unnest($2::int[], $3::bigint[]) AS v(seq, token)
          WHERE i.backfill_id = $1 AND i.seq = v.seq`,
        [
          due.backfillId,
          items.map((i) => i.seq),
          items.map((i) => {
            const k = toFire.indexOf(i);
            return k < 0 ? null : fired[k]!.fenceToken;
          }),
        ],
      );
      const finished = left - items.length <= 0;
      const status: BackfillStatus = finished ? 'DONE' : 'RUNNING';
      await client.query(
        `UPDATE backfills SET fired = fired + $2, found_ran = found_ran + $3, next_fire_at = $4, status = $5,
                started_at = coalesce(started_at, now()), finished_at = CASE WHEN $5 = 'DONE' THEN now() END,
                updated_at = now()
          WHERE backfill_id = $1`,
        [due.backfillId, fired.length, ranSeqs.size, new Date(paced.nextAtMs), status],
      );
      return { fenced: false, fired, foundRan: ranSeqs.size, status };
    });
  }
}

/** Records a command in the command ledger, once per (tenant, command id); a copy throws DuplicateCommandError. */
async function stampCommand(client: PoolClient, c: CommandStamp, jobId: string): Promise<void> {
  const { rows } = await client.query<{ inserted: boolean; outcome: string | null; reason: string | null }>(
    `WITH ins AS (
       INSERT INTO applied_commands (tenant_id, command_id, job_id, command_type) VALUES ($1, $2, $3, $4)
       ON CONFLICT (tenant_id, command_id) DO NOTHING RETURNING 1)
     SELECT EXISTS (SELECT 1 FROM ins) AS inserted, a.outcome, a.reason
       FROM (SELECT 1) one
       LEFT JOIN applied_commands a ON a.tenant_id = $1 AND a.command_id = $2`,
    [c.tenantId, c.commandId, jobId, c.type],
  );
  const stamp = rows[0];
  if (!stamp?.inserted)
    throw new DuplicateCommandError(
      c.tenantId,
      c.commandId,
      stamp?.outcome ?? 'APPLIED',
      stamp?.reason ?? null,
    );
}
