/**
 * Fire SLO bookkeeping: the sweep that judges a shard's scheduled fires (LATE / MISSED into
 * occurrence_slo, once per fire), and the opted-in jobs' last success for the dead-man gauge.
 * The judging itself is the caller's (the domain's judgeOccurrence); this file only reads and writes.
 */
import type { Pool, PoolClient } from 'pg';
import {
  policiesFromWire,
  scheduleFromWire,
  type FireSloReason,
  type JobStatus,
  type SloCandidate,
  type SloJudgement,
  type SloMetricJob,
  type SloSweepRequest,
  type SloSweepResult,
  type RecordedSloVerdict,
} from '@tickwork/domain';
import { inTransaction } from '../database';

interface CandidateRow {
  job_id: string;
  fence_token: string;
  tenant_id: string;
  shard: number;
  nominal_time: Date;
  dst_shift_ms: number;
  first_started_at: Date | null;
  schedule: Record<string, unknown> | null;
  policies: Record<string, unknown> | null;
  tolerance_ms: string | null;
  deadline_at: Date | null;
}

export class SloRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * One sweep of one shard, in one transaction under its lease: the scheduled batches claimed since
   * the last sweep and the watched fires are judged; LATE and MISSED verdicts are inserted (a fire's
   * verdict once: the primary key ignores a repeat), undecided fires go on the watch list, decided
   * ones leave it, and the shard's mark moves past the batches looked at. A crash before the commit
   * leaves everything as it was; the next sweep (by this instance or the shard's next owner) repeats it.
   */
  async sweepShard(
    req: SloSweepRequest,
    judge: (c: SloCandidate, now: Date) => SloJudgement,
  ): Promise<SloSweepResult> {
    return inTransaction(this.pool, async (client) => {
      const lease = await client.query<{ now: Date }>(
        `SELECT now() AS now FROM shard_leases
          WHERE shard = $1 AND epoch = $2 AND owner = $3 AND expires_at > now()
          FOR KEY SHARE`,
        [req.shard, req.epoch, req.owner],
      );
      const now = lease.rows[0]?.now;
      if (!now)
        return {
          held: false,
          now: new Date(),
          onTime: [],
          recorded: [],
          pending: 0,
          batches: 0,
          more: false,
        };
      const mark = await this.lockMark(client, req.shard);
      const batches = await client.query<{ batch_id: string; fires: number }>(
        `SELECT batch_id, fires FROM fire_batches
          WHERE shard = $1 AND trigger = 'SCHEDULE' AND batch_id >= $2
            AND claimed_at <= now() - make_interval(secs => $3::double precision / 1000)
          ORDER BY batch_id LIMIT $4`,
        [req.shard, mark, req.settleMs, req.limit],
      );
      // Whole batches up to about maxFires fires (at least one batch): one sweep stays small
      // after a herd of claims, and the next page goes on at once.
      const batchIds: string[] = [];
      let fires = 0;
      for (const b of batches.rows) {
        if (batchIds.length > 0 && fires + b.fires > req.maxFires) break;
        batchIds.push(b.batch_id);
        fires += b.fires;
      }
      const more = batchIds.length < batches.rows.length || batches.rows.length === req.limit;
      const fresh = batchIds.length === 0 ? [] : await this.batchCandidates(client, batchIds);
      const watched = await this.watchedCandidates(client, req.shard, req.limit);
      const seen = new Set<string>();
      const decided: { c: SloCandidate; j: SloJudgement }[] = [];
      const pending: { c: SloCandidate; toleranceMs: number; deadline: Date }[] = [];
      for (const c of [...watched, ...fresh]) {
        const key = `${c.jobId}\u0000${c.fenceToken}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const j = judge(c, now);
        if (j.verdict === 'PENDING') {
          if (!c.watched) pending.push({ c, toleranceMs: j.toleranceMs, deadline: j.deadline });
        } else decided.push({ c, j });
      }
      const recorded = await this.record(client, decided);
      if (pending.length > 0) {
        await client.query(
          `INSERT INTO slo_watch (job_id, fence_token, tenant_id, shard, nominal_time, tolerance_ms, deadline_at)
           SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::timestamptz[], $6::bigint[], $7::timestamptz[])
           ON CONFLICT DO NOTHING`,
          [
            pending.map((p) => p.c.jobId),
            pending.map((p) => p.c.fenceToken),
            pending.map((p) => p.c.tenantId),
            pending.map((p) => p.c.shard),
            pending.map((p) => p.c.nominalTime.toISOString()),
            pending.map((p) => p.toleranceMs),
            pending.map((p) => p.deadline.toISOString()),
          ],
        );
      }
      const leaving = decided.filter((d) => d.c.watched);
      if (leaving.length > 0) {
        await client.query(
          `DELETE FROM slo_watch w USING unnest($1::text[], $2::bigint[]) AS d(job_id, fence_token)
            WHERE w.job_id = d.job_id AND w.fence_token = d.fence_token`,
          [leaving.map((d) => d.c.jobId), leaving.map((d) => d.c.fenceToken)],
        );
      }
      const last = batchIds[batchIds.length - 1];
      await client.query(
        `UPDATE slo_sweep_marks SET next_batch_id = GREATEST(next_batch_id, $2::bigint), swept_at = now() WHERE shard = $1`,
        [req.shard, last === undefined ? mark : (BigInt(last) + 1n).toString()],
      );
      const stillWatched = watched.filter((c) => !decided.some((d) => d.c === c)).length;
      return {
        held: true,
        now,
        onTime: decided
          .filter((d) => d.j.verdict === 'ON_TIME')
          .map((d) => ({
            tenantId: d.c.tenantId,
            jobId: d.c.jobId,
            sloMetrics: d.c.policies?.sloMetrics === true,
          })),
        recorded,
        pending: stillWatched + pending.length,
        batches: batchIds.length,
        more,
      };
    });
  }

  /**
   * Opted-in (`slo_metrics`), scheduled jobs of these shards with their last success, at most
   * `limit` of them (by job id): the per-job series stay bounded whatever tenants opt in.
   */
  async metricJobs(shards: readonly number[], limit: number): Promise<SloMetricJob[]> {
    if (shards.length === 0) return [];
    const { rows } = await this.pool.query<{
      job_id: string;
      tenant_id: string;
      schedule: Record<string, unknown>;
      status: JobStatus;
      created_at: Date;
      last_success_at: Date | null;
    }>(
      `SELECT j.job_id, j.tenant_id, j.schedule, j.status, j.created_at, s.finished_at AS last_success_at
         FROM jobs j
         LEFT JOIN LATERAL (SELECT r.finished_at FROM job_runs r
                             WHERE r.job_id = j.job_id AND r.status = 'SUCCEEDED'
                             ORDER BY r.fence_token DESC LIMIT 1) s ON true
        WHERE j.shard = ANY($1::int[]) AND (j.policies ->> 'slo_metrics') = 'true' AND j.status = 'SCHEDULED'
        ORDER BY j.job_id
        LIMIT $2`,
      [[...shards], limit],
    );
    return rows.map((r) => ({
      jobId: r.job_id,
      tenantId: r.tenant_id,
      schedule: scheduleFromWire(r.schedule),
      lastSuccessAt: r.last_success_at,
      createdAt: r.created_at,
    }));
  }

  /** The shard's mark, locked; a shard's first sweep starts at the floor the migration set. */
  private async lockMark(client: PoolClient, shard: number): Promise<string> {
    await client.query(
      `INSERT INTO slo_sweep_marks (shard, next_batch_id)
       SELECT $1, next_batch_id FROM slo_sweep_floor
       ON CONFLICT (shard) DO NOTHING`,
      [shard],
    );
    const { rows } = await client.query<{ next_batch_id: string }>(
      'SELECT next_batch_id FROM slo_sweep_marks WHERE shard = $1 FOR UPDATE',
      [shard],
    );
    return rows[0]?.next_batch_id ?? '1';
  }

  private async batchCandidates(client: PoolClient, batchIds: readonly string[]): Promise<SloCandidate[]> {
    const { rows } = await client.query<CandidateRow>(
      `SELECT f.job_id, f.fence_token, f.tenant_id, f.shard, f.nominal_time, f.dst_shift_ms,
              LEAST(r.created_at, r.started_at) AS first_started_at, j.schedule, j.policies,
              NULL::bigint AS tolerance_ms, NULL::timestamptz AS deadline_at
         FROM fires f
         LEFT JOIN job_runs r ON r.job_id = f.job_id AND r.fence_token = f.fence_token
         LEFT JOIN LATERAL (SELECT jj.schedule, jj.policies FROM jobs jj WHERE jj.job_id = f.job_id) j ON true
        WHERE f.batch_id = ANY($1::bigint[]) AND f.trigger = 'SCHEDULE'`,
      [[...batchIds]],
    );
    return rows.map(candidateFromRow);
  }

  private async watchedCandidates(client: PoolClient, shard: number, limit: number): Promise<SloCandidate[]> {
    const { rows } = await client.query<CandidateRow>(
      `SELECT w.job_id, w.fence_token, w.tenant_id, w.shard, w.nominal_time, 0 AS dst_shift_ms,
              LEAST(r.created_at, r.started_at) AS first_started_at, NULL::jsonb AS schedule, j.policies,
              w.tolerance_ms, w.deadline_at
         FROM slo_watch w
         LEFT JOIN job_runs r ON r.job_id = w.job_id AND r.fence_token = w.fence_token
         LEFT JOIN LATERAL (SELECT jj.policies FROM jobs jj WHERE jj.job_id = w.job_id) j ON true
        WHERE w.shard = $1
        ORDER BY w.deadline_at
        LIMIT $2`,
      [shard, limit],
    );
    return rows.map(candidateFromRow);
  }

  private async record(
    client: PoolClient,
    decided: readonly { c: SloCandidate; j: SloJudgement }[],
  ): Promise<RecordedSloVerdict[]> {
    const marks = decided.flatMap(({ c, j }) =>
      j.verdict === 'LATE' || j.verdict === 'MISSED' ? [{ c, j }] : [],
    );
    if (marks.length === 0) return [];
    const { rows } = await client.query<{ job_id: string; fence_token: string }>(
      `INSERT INTO occurrence_slo (job_id, fence_token, tenant_id, nominal_time, reason, lateness_ms, tolerance_ms, deadline_at)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::timestamptz[], $5::text[], $6::bigint[], $7::bigint[], $8::timestamptz[])
       ON CONFLICT (job_id, fence_token) DO NOTHING
       RETURNING job_id, fence_token`,
      [
        marks.map((m) => m.c.jobId),
        marks.map((m) => m.c.fenceToken),
        marks.map((m) => m.c.tenantId),
        marks.map((m) => m.c.nominalTime.toISOString()),
        marks.map((m) => m.j.verdict),
        marks.map((m) => ('latenessMs' in m.j ? m.j.latenessMs : null)),
        marks.map((m) => ('toleranceMs' in m.j ? m.j.toleranceMs : 0)),
        marks.map((m) => ('deadline' in m.j ? m.j.deadline.toISOString() : m.c.nominalTime.toISOString())),
      ],
    );
    const inserted = new Set(rows.map((r) => `${r.job_id}\u0000${r.fence_token}`));
    return marks
      .filter((m) => inserted.has(`${m.c.jobId}\u0000${m.c.fenceToken}`))
      .map((m) => ({
        jobId: m.c.jobId,
        tenantId: m.c.tenantId,
        reason: m.j.verdict as FireSloReason,
        latenessMs: 'latenessMs' in m.j ? m.j.latenessMs : null,
        sloMetrics: m.c.policies?.sloMetrics === true,
      }));
  }
}

function candidateFromRow(r: CandidateRow): SloCandidate {
  return {
    jobId: r.job_id,
    fenceToken: Number(r.fence_token),
    tenantId: r.tenant_id,
    shard: r.shard,
    nominalTime: r.nominal_time,
    dstShiftMs: r.dst_shift_ms,
    firstStartedAt: r.first_started_at,
    schedule: r.schedule ? scheduleFromWire(r.schedule) : null,
    policies: r.policies ? policiesFromWire(r.policies) : null,
    watched:
      r.tolerance_ms !== null && r.deadline_at !== null
        ? { toleranceMs: Number(r.tolerance_ms), deadline: r.deadline_at }
        : null,
  };
}
