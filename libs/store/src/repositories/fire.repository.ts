/**
 * The scheduler's hot path: claim due jobs under the shard fence, record their fires in the
 * outbox and advance their schedules, all in one transaction; then mark fires enqueued.
 */
import type { Pool, PoolClient } from 'pg';
import {
  fireIdOf,
  targetFromWire,
  targetToWire,
  type DueOccurrencePlan,
  type FireEvent,
  type FireKey,
  type Job,
  type JsonValue,
  type ShardEpoch,
} from '@tickwork/domain';
import { inTransaction } from '../database';
import { JOB_COLUMNS, jobFromRow, type JobRow } from './rows';

/** Plans one due job at database time `now` (pure; the domain's planDueOccurrences). */
export type ClaimPlanner = (job: Job, now: Date) => DueOccurrencePlan;

export interface ClaimRequest {
  readonly owner: string;
  readonly shards: readonly ShardEpoch[];
  readonly limit: number;
  readonly lookaheadMs: number;
}

export interface ClaimResult {
  /** Database time of the claim. */
  readonly now: Date;
  /** Shards whose lease was valid for this claim; the others were not scanned. */
  readonly fencedOut: readonly number[];
  readonly fires: readonly ClaimedFire[];
  readonly skipped: number;
  readonly scanned: number;
}

export interface ClaimedFire {
  readonly shard: number;
  readonly event: FireEvent;
}

interface LeaseRow {
  shard: number;
  db_now: Date;
}

export class FireRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * Claims up to `limit` due jobs of the shards whose lease the caller still holds (owner,
   * epoch, not expired — checked under a share lock on the lease rows, so a takeover waits for
   * this transaction and then fences it out). Each claimed occurrence gets its own fence token.
   */
  async claimDueJobs(req: ClaimRequest, plan: ClaimPlanner): Promise<ClaimResult> {
    return inTransaction(this.pool, async (client) => {
      const leases = await client.query<LeaseRow>(
        `SELECT l.shard, now() AS db_now
           FROM shard_leases l
           JOIN unnest($1::int[], $2::bigint[]) AS o(shard, epoch) ON o.shard = l.shard AND o.epoch = l.epoch
          WHERE l.owner = $3 AND l.expires_at > now()
          FOR SHARE OF l`,
        [req.shards.map((s) => s.shard), req.shards.map((s) => s.epoch), req.owner],
      );
      const held = leases.rows.map((r) => r.shard);
      const fencedOut = req.shards.map((s) => s.shard).filter((s) => !held.includes(s));
      const now = leases.rows[0]?.db_now ?? (await client.query<{ now: Date }>('SELECT now()')).rows[0]!.now;
      if (held.length === 0) return { now, fencedOut, fires: [], skipped: 0, scanned: 0 };

      const due = await client.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs
          WHERE shard = ANY($1::int[]) AND status = 'SCHEDULED'
            AND next_run_at <= now() + make_interval(secs => $2::double precision / 1000)
          ORDER BY next_run_at
          LIMIT $3
          FOR UPDATE SKIP LOCKED`,
        [held, req.lookaheadMs, req.limit],
      );
      if (due.rows.length === 0) return { now, fencedOut, fires: [], skipped: 0, scanned: 0 };
      return this.applyPlans(client, req.owner, now, fencedOut, due.rows.map(jobFromRow), plan);
    });
  }

  private async applyPlans(
    client: PoolClient,
    owner: string,
    now: Date,
    fencedOut: number[],
    jobs: Job[],
    plan: ClaimPlanner,
  ): Promise<ClaimResult> {
    const upd = { id: [] as string[], n: [] as number[], next: [] as (Date | null)[], nominal: [] as (Date | null)[], status: [] as string[] };
    const ins = {
      id: [] as string[],
      token: [] as number[],
      tenant: [] as string[],
      shard: [] as number[],
      nominal: [] as Date[],
      scheduled: [] as Date[],
      event: [] as string[],
    };
    const skip = { id: [] as string[], tenant: [] as string[], reason: [] as string[], first: [] as Date[], last: [] as Date[], count: [] as number[] };
    const fires: ClaimedFire[] = [];
    let skipped = 0;

    for (const job of jobs) {
      const p = plan(job, now);
      upd.id.push(job.jobId);
      upd.n.push(p.fires.length);
      upd.next.push(p.next?.scheduledFor ?? null);
      upd.nominal.push(p.next?.nominalTime ?? null);
      upd.status.push(p.next ? 'SCHEDULED' : 'COMPLETED');
      p.fires.forEach((f, i) => {
        const fenceToken = job.fenceToken + i + 1;
        const event: FireEvent = {
          jobId: job.jobId,
          tenantId: job.tenantId,
          fenceToken,
          fireId: fireIdOf({ jobId: job.jobId, fenceToken }),
          scheduledFor: f.scheduledFor,
          nominalTime: f.nominalTime,
          attempt: 1,
          target: job.target,
          payload: job.payload,
        };
        fires.push({ shard: job.shard, event });
        ins.id.push(job.jobId);
        ins.token.push(fenceToken);
        ins.tenant.push(job.tenantId);
        ins.shard.push(job.shard);
        ins.nominal.push(f.nominalTime);
        ins.scheduled.push(f.scheduledFor);
        ins.event.push(JSON.stringify(eventSnapshot(event)));
      });
      for (const s of p.skips) {
        skipped += s.occurrences;
        skip.id.push(job.jobId);
        skip.tenant.push(job.tenantId);
        skip.reason.push(s.reason);
        skip.first.push(s.firstNominal);
        skip.last.push(s.lastNominal);
        skip.count.push(s.occurrences);
      }
    }

    await client.query(
      `UPDATE jobs j
          SET fence_token = j.fence_token + v.n,
              fires_count = j.fires_count + v.n,
              next_run_at = v.next,
              next_nominal_at = v.nominal,
              status = v.status,
              last_fired_at = CASE WHEN v.n > 0 THEN now() ELSE j.last_fired_at END,
              updated_at = now()
         FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::timestamptz[], $5::text[]) AS v(job_id, n, next, nominal, status)
        WHERE j.job_id = v.job_id`,
      [upd.id, upd.n, upd.next, upd.nominal, upd.status],
    );
    if (ins.id.length > 0) {
      await client.query(
        `INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, scheduled_for, claimed_by, event)
         SELECT v.job_id, v.token, v.tenant, v.shard, v.nominal, v.scheduled, $8, v.event
           FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::timestamptz[], $6::timestamptz[], $7::jsonb[])
             AS v(job_id, token, tenant, shard, nominal, scheduled, event)`,
        [ins.id, ins.token, ins.tenant, ins.shard, ins.nominal, ins.scheduled, ins.event, owner],
      );
    }
    if (skip.id.length > 0) {
      await client.query(
        `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::bigint[])`,
        [skip.id, skip.tenant, skip.reason, skip.first, skip.last, skip.count],
      );
    }
    return { now, fencedOut, fires, skipped, scanned: jobs.length };
  }

  /** Marks fires as confirmed on Kafka; they leave the outbox. */
  async markEnqueued(keys: readonly FireKey[]): Promise<void> {
    if (keys.length === 0) return;
    await this.pool.query(
      `UPDATE fires f SET enqueued_at = now()
         FROM unnest($1::text[], $2::bigint[]) AS k(job_id, fence_token)
        WHERE f.job_id = k.job_id AND f.fence_token = k.fence_token AND f.enqueued_at IS NULL`,
      [keys.map((k) => k.jobId), keys.map((k) => k.fenceToken)],
    );
  }

  /**
   * Outbox rows of shards the caller holds that were claimed at least `minAgeMs` ago and are not
   * confirmed: fires whose claimer died between commit and produce.
   */
  async pendingFires(req: { owner: string; shards: readonly ShardEpoch[]; minAgeMs: number; limit: number }): Promise<ClaimedFire[]> {
    const { rows } = await this.pool.query<{ shard: number; event: EventSnapshot }>(
      `SELECT f.shard, f.event
         FROM fires f
         JOIN shard_leases l ON l.shard = f.shard
         JOIN unnest($1::int[], $2::bigint[]) AS o(shard, epoch) ON o.shard = l.shard AND o.epoch = l.epoch
        WHERE l.owner = $3 AND l.expires_at > now()
          AND f.enqueued_at IS NULL
          AND f.claimed_at <= now() - make_interval(secs => $4::double precision / 1000)
        ORDER BY f.claimed_at
        LIMIT $5`,
      [req.shards.map((s) => s.shard), req.shards.map((s) => s.epoch), req.owner, req.minAgeMs, req.limit],
    );
    return rows.map((r) => ({ shard: r.shard, event: eventFromSnapshot(r.event) }));
  }
}

/** The fire event as stored in the outbox row, so a re-enqueue needs nothing else. */
interface EventSnapshot {
  job_id: string;
  tenant_id: string;
  fence_token: number;
  fire_id: string;
  scheduled_for: string;
  nominal_time: string;
  attempt: number;
  target: Record<string, JsonValue>;
  payload: JsonValue;
}

function eventSnapshot(e: FireEvent): EventSnapshot {
  return {
    job_id: e.jobId,
    tenant_id: e.tenantId,
    fence_token: e.fenceToken,
    fire_id: e.fireId,
    scheduled_for: e.scheduledFor.toISOString(),
    nominal_time: e.nominalTime.toISOString(),
    attempt: e.attempt,
    target: targetToWire(e.target),
    payload: e.payload,
  };
}

function eventFromSnapshot(s: EventSnapshot): FireEvent {
  return {
    jobId: s.job_id,
    tenantId: s.tenant_id,
    fenceToken: s.fence_token,
    fireId: s.fire_id,
    scheduledFor: new Date(s.scheduled_for),
    nominalTime: new Date(s.nominal_time),
    attempt: s.attempt,
    target: targetFromWire(s.target),
    payload: s.payload,
  };
}
