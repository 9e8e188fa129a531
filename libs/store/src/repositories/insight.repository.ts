/**
 * Read-only queries behind the console's cluster and lateness views. Every query is bounded: the
 * lateness of a window reads at most `cap` ledger rows through an index (newest first), and says
 * when it was cut; shard leases and runs in flight are small by construction.
 */
import type { Pool } from 'pg';

export interface ShardLease {
  readonly shard: number;
  readonly owner: string | null;
  readonly epoch: number;
  readonly expiresAt: Date | null;
}

export interface ExecutorInFlight {
  readonly owner: string;
  readonly running: number;
  readonly retrying: number;
}

/** Which runs a lateness query covers: one job, one tenant, or (null, null) every tenant. */
export interface LatenessScope {
  readonly jobId?: string;
  readonly tenantId?: string;
}

export interface LatenessBucket {
  readonly start: Date;
  readonly runs: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

export interface LatenessRow {
  readonly key: string;
  readonly runs: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

export interface LatenessReport {
  readonly buckets: LatenessBucket[];
  /** Per job (a tenant's or every tenant's view) or per tenant (the all-tenant view), worst p99 first. */
  readonly byJob: LatenessRow[];
  readonly byTenant: LatenessRow[];
  readonly counts: { fired: number; retried: number; deadLettered: number; skipped: number };
  readonly overall: { p50Ms: number | null; p99Ms: number | null };
  /**
   * True when a bucket held more runs than were read: its percentiles are of its newest runs, and
   * the retried and dead-lettered counts are scaled from them (fired is exact up to the count cap,
   * 1,000,000 runs in the window, and at least that beyond it).
   */
  readonly truncated: boolean;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export class InsightRepository {
  constructor(private readonly pool: Pool) {}

  /** Every shard's lease row (owner, epoch, expiry). */
  async shardLeases(): Promise<ShardLease[]> {
    const { rows } = await this.pool.query<{
      shard: number;
      owner: string | null;
      epoch: string;
      expires_at: Date | null;
    }>('SELECT shard, owner, epoch, expires_at FROM shard_leases ORDER BY shard');
    return rows.map((r) => ({
      shard: r.shard,
      owner: r.owner,
      epoch: Number(r.epoch),
      expiresAt: r.expires_at,
    }));
  }

  /** Runs in flight (RUNNING, RETRYING) per executor instance, from the partial index job_runs_in_flight_idx. */
  async inFlight(): Promise<ExecutorInFlight[]> {
    const { rows } = await this.pool.query<{ owner: string | null; running: string; retrying: string }>(
      `SELECT lease_owner AS owner,
              count(*) FILTER (WHERE status = 'RUNNING') AS running,
              count(*) FILTER (WHERE status = 'RETRYING') AS retrying
         FROM job_runs WHERE status IN ('RUNNING', 'RETRYING')
        GROUP BY lease_owner ORDER BY lease_owner`,
    );
    return rows.map((r) => ({
      owner: r.owner ?? '(none)',
      running: Number(r.running),
      retrying: Number(r.retrying),
    }));
  }

  /**
   * Lateness (run start − scheduled time) of the finished runs created in the last `windowMs`, in
   * `bucketCount` time buckets, per job and per tenant, with counts. Bounded: the window's runs
   * are counted through an index (at most `countCap`) and at most `perBucket` of each bucket's
   * newest runs (8,000 in all) are read for the percentiles and the retried and dead-lettered
   * counts, which are scaled up to the bucket's count when it held more (`sampled`).
   */
  async lateness(
    scope: LatenessScope,
    windowMs: number,
    bucketCount: number,
    perBucket = Math.ceil(8_000 / bucketCount),
    countCap = 1_000_000,
  ): Promise<LatenessReport> {
    const scope$ = `($1::text IS NULL OR r.job_id = $1) AND ($2::text IS NULL OR r.tenant_id = $2)`;
    // Finished runs only: the predicate of the partial indexes that serve these reads.
    const runScope = `${scope$} AND r.status IN ('SUCCEEDED', 'DEAD_LETTERED', 'SKIPPED')`;
    const params = [scope.jobId ?? null, scope.tenantId ?? null, windowMs / 1000 / bucketCount, bucketCount];
    const buckets = `SELECT i, now() - (i + 1) * make_interval(secs => $3::double precision) AS lo,
                            now() - i * make_interval(secs => $3::double precision) AS hi
                       FROM generate_series(0, $4::int - 1) AS i`;
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `CREATE TEMP TABLE lateness_window ON COMMIT DROP AS
         SELECT b.i AS b, s.* FROM (${buckets}) b
          CROSS JOIN LATERAL (
            SELECT r.job_id, r.tenant_id, r.status, r.attempt,
                   CASE WHEN r.started_at IS NULL THEN NULL
                        -- From the nominal time under a herd window: the slot's offset counts as lateness.
                        ELSE greatest(0, extract(epoch FROM r.started_at - r.scheduled_for) * 1000 + r.spread_offset_ms) END AS late_ms
              FROM job_runs r
             WHERE r.created_at >= b.lo AND r.created_at < b.hi AND ${runScope}
             ORDER BY r.created_at DESC LIMIT $5) s`,
        [...params, perBucket],
      );
      // One index range scan counts every bucket (up to countCap runs in all).
      const totals = await client.query<{ b: number; n: string }>(
        `SELECT floor(extract(epoch FROM now() - created_at) / $3::double precision)::int AS b, count(*) AS n
           FROM (SELECT r.created_at FROM job_runs r
                  WHERE r.created_at >= now() - $4::int * make_interval(secs => $3::double precision) AND ${runScope}
                  LIMIT $5) x
          GROUP BY 1`,
        [...params, countCap],
      );
      const stats = (group: string) =>
        client.query<{ key: string; runs: string; p50: number | null; p99: number | null }>(
          `SELECT ${group} AS key, count(*) AS runs,
                  percentile_cont(0.5) WITHIN GROUP (ORDER BY late_ms) AS p50,
                  percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms) AS p99
             FROM lateness_window GROUP BY 1 ORDER BY p99 DESC NULLS LAST, 1 LIMIT 50`,
        );
      const perBucketStats = await client.query<{
        b: number;
        runs: string;
        retried: string;
        dead: string;
        p50: number | null;
        p99: number | null;
      }>(
        `SELECT b, count(*) AS runs, count(*) FILTER (WHERE attempt > 1) AS retried,
                count(*) FILTER (WHERE status = 'DEAD_LETTERED') AS dead,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY late_ms) AS p50,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms) AS p99
           FROM lateness_window GROUP BY b`,
      );
      const overall = await client.query<{ p50: number | null; p99: number | null }>(
        `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY late_ms) AS p50,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms) AS p99
           FROM lateness_window`,
      );
      const skipped = await client.query<{ n: string | null }>(
        `SELECT sum(occurrences) AS n FROM (
           SELECT occurrences FROM occurrence_skips r
            WHERE r.first_nominal >= now() - make_interval(secs => $3::double precision)
              AND ${scope$}
            ORDER BY r.first_nominal DESC LIMIT $4) s`,
        [scope.jobId ?? null, scope.tenantId ?? null, windowMs / 1000, countCap],
      );
      const byJob = await stats('job_id');
      const byTenant = await stats('tenant_id');
      await client.query('COMMIT');
      const now = Date.now();
      const bucketSecs = windowMs / 1000 / bucketCount;
      const sample = new Map(perBucketStats.rows.map((r) => [r.b, r]));
      const total = new Map(totals.rows.map((r) => [r.b, Number(r.n)]));
      let fired = 0;
      let retried = 0;
      let deadLettered = 0;
      let sampled = false;
      if (totals.rows.reduce((a, r) => a + Number(r.n), 0) >= countCap) sampled = true;
      for (let b = 0; b < bucketCount; b++) {
        const n = total.get(b) ?? 0;
        const r = sample.get(b);
        const read = Number(r?.runs ?? 0);
        fired += n;
        if (read > 0) {
          // A bucket read in part stands for all its runs in the same proportions.
          const scale = n / read;
          if (n > read) sampled = true;
          retried += Number(r!.retried) * scale;
          deadLettered += Number(r!.dead) * scale;
        }
      }
      const row = (r: {
        key: string;
        runs: string;
        p50: number | null;
        p99: number | null;
      }): LatenessRow => ({
        key: r.key,
        runs: Number(r.runs),
        p50Ms: num(r.p50),
        p99Ms: num(r.p99),
      });
      return {
        buckets: Array.from({ length: bucketCount }, (_, i) => {
          const b = bucketCount - 1 - i;
          const r = sample.get(b);
          return {
            start: new Date(now - (b + 1) * bucketSecs * 1000),
            runs: total.get(b) ?? 0,
            p50Ms: num(r?.p50),
            p99Ms: num(r?.p99),
          };
        }),
        byJob: byJob.rows.map(row),
        byTenant: byTenant.rows.map(row),
        counts: {
          fired,
          retried: Math.round(retried),
          deadLettered: Math.round(deadLettered),
          skipped: Number(skipped.rows[0]?.n ?? 0),
        },
        overall: { p50Ms: num(overall.rows[0]?.p50), p99Ms: num(overall.rows[0]?.p99) },
        truncated: sampled,
      };
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }
}
