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
  /** True when the window held more than `cap` runs and only the newest were read. */
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
   * Lateness (run start − scheduled time) of the runs created in the last `windowMs`, in
   * `bucketCount` time buckets, per job and per tenant, with counts; reads at most `cap` runs.
   */
  async lateness(
    scope: LatenessScope,
    windowMs: number,
    bucketCount: number,
    cap = 200_000,
  ): Promise<LatenessReport> {
    // One bounded, index-ordered read of the window's runs; the aggregates run over it.
    const runs = `SELECT r.job_id, r.tenant_id, r.status, r.attempt, r.created_at,
                         CASE WHEN r.started_at IS NULL THEN NULL
                              ELSE greatest(0, extract(epoch FROM r.started_at - r.scheduled_for) * 1000) END AS late_ms
                    FROM job_runs r
                   WHERE r.created_at >= now() - make_interval(secs => $3::double precision / 1000)
                     AND ($1::text IS NULL OR r.job_id = $1)
                     AND ($2::text IS NULL OR r.tenant_id = $2)
                   ORDER BY r.created_at DESC LIMIT $4`;
    const params = [scope.jobId ?? null, scope.tenantId ?? null, windowMs, cap];
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`CREATE TEMP TABLE lateness_window ON COMMIT DROP AS ${runs}`, params);
      const stats = (group: string) =>
        client.query<{ key: string; runs: string; p50: number | null; p99: number | null }>(
          `SELECT ${group} AS key, count(*) AS runs,
                  percentile_cont(0.5) WITHIN GROUP (ORDER BY late_ms) AS p50,
                  percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms) AS p99
             FROM lateness_window GROUP BY 1 ORDER BY p99 DESC NULLS LAST, 1 LIMIT 50`,
        );
      const bucketSecs = windowMs / 1000 / bucketCount;
      const buckets = await client.query<{ b: number; runs: string; p50: number | null; p99: number | null }>(
        `SELECT floor(extract(epoch FROM now() - created_at) / $1)::int AS b, count(*) AS runs,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY late_ms) AS p50,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms) AS p99
           FROM lateness_window GROUP BY 1`,
        [bucketSecs],
      );
      const counts = await client.query<{ fired: string; retried: string; dead: string; all: string }>(
        `SELECT count(*) AS fired, count(*) FILTER (WHERE attempt > 1) AS retried,
                count(*) FILTER (WHERE status = 'DEAD_LETTERED') AS dead,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY late_ms) AS p50,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms) AS p99
           FROM lateness_window`,
      );
      const skipped = await client.query<{ n: string | null }>(
        `SELECT sum(occurrences) AS n FROM (
           SELECT occurrences FROM occurrence_skips
            WHERE first_nominal >= now() - make_interval(secs => $3::double precision / 1000)
              AND ($1::text IS NULL OR job_id = $1)
              AND ($2::text IS NULL OR tenant_id = $2)
            ORDER BY first_nominal DESC LIMIT $4) s`,
        params,
      );
      const byJob = await stats('job_id');
      const byTenant = await stats('tenant_id');
      await client.query('COMMIT');
      const now = Date.now();
      const byIndex = new Map(buckets.rows.map((r) => [r.b, r]));
      const c = counts.rows[0] as unknown as Record<string, unknown>;
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
          const r = byIndex.get(b);
          return {
            start: new Date(now - (b + 1) * bucketSecs * 1000),
            runs: Number(r?.runs ?? 0),
            p50Ms: num(r?.p50),
            p99Ms: num(r?.p99),
          };
        }),
        byJob: byJob.rows.map(row),
        byTenant: byTenant.rows.map(row),
        counts: {
          fired: Number(c.fired),
          retried: Number(c.retried),
          deadLettered: Number(c.dead),
          skipped: Number(skipped.rows[0]?.n ?? 0),
        },
        overall: { p50Ms: num(c.p50), p99Ms: num(c.p99) },
        truncated: Number(c.fired) >= cap,
      };
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }
}
