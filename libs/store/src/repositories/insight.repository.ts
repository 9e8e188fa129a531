/**
 * Read-only queries behind the console's cluster and lateness views. Every query is bounded: the
 * lateness of a window reads at most `cap` ledger rows through an index (newest first), and says
 * when it was cut; shard leases and runs in flight are small by construction.
 */
import type { Pool } from 'pg';
import type {
  ExecutorInFlight,
  LatenessReport,
  LatenessRow,
  LatenessScope,
  ShardLease,
} from '@tickwork/domain';

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** The console's cluster and lateness reads: implements libs/jobs' InsightStore port. */
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
    // One statement reads the sample (at most perBucket of each bucket's newest runs, through the
    // index) and aggregates it per bucket, per job, per tenant and overall; a temporary table and
    // a round trip per aggregate used to cost more than the reads.
    const pct = (col: string) =>
      `percentile_cont(0.5) WITHIN GROUP (ORDER BY ${col}) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY ${col}) AS p99`;
    const sampleRows = this.pool.query<{
      kind: 'bucket' | 'job' | 'tenant' | 'overall';
      key: string;
      runs: string;
      retried: string;
      dead: string;
      p50: number | null;
      p99: number | null;
    }>(
      `WITH s AS MATERIALIZED (
         SELECT b.i AS b, x.* FROM (${buckets}) b
          CROSS JOIN LATERAL (
            SELECT r.job_id, r.tenant_id, r.status, r.attempt,
                   CASE WHEN r.started_at IS NULL THEN NULL
                        -- From the nominal time under a herd window: the slot's offset counts as lateness.
                        ELSE greatest(0, extract(epoch FROM r.started_at - r.scheduled_for) * 1000 + r.spread_offset_ms) END AS late_ms
              FROM job_runs r
             WHERE r.created_at >= b.lo AND r.created_at < b.hi AND ${runScope}
             ORDER BY r.created_at DESC LIMIT $5) x
       ),
       per_bucket AS (
         SELECT 'bucket'::text AS kind, b::text AS key, count(*) AS runs,
                count(*) FILTER (WHERE attempt > 1) AS retried,
                count(*) FILTER (WHERE status = 'DEAD_LETTERED') AS dead, ${pct('late_ms')}
           FROM s GROUP BY b
       ),
       -- Grouped in byte order: a locale-aware sort of thousands of ids costs more than the rest.
       per_job AS (
         SELECT 'job'::text AS kind, job_id COLLATE "C" AS key, count(*) AS runs, 0::bigint AS retried, 0::bigint AS dead, ${pct('late_ms')}
           FROM s GROUP BY 2 ORDER BY p99 DESC NULLS LAST, 2 LIMIT 50
       ),
       per_tenant AS (
         SELECT 'tenant'::text AS kind, tenant_id COLLATE "C" AS key, count(*) AS runs, 0::bigint AS retried, 0::bigint AS dead, ${pct('late_ms')}
           FROM s GROUP BY 2 ORDER BY p99 DESC NULLS LAST, 2 LIMIT 50
       )
       SELECT * FROM per_bucket
       UNION ALL SELECT * FROM per_job
       UNION ALL SELECT * FROM per_tenant
       UNION ALL SELECT 'overall', '', count(*), 0, 0, ${pct('late_ms')} FROM s`,
      [...params, perBucket],
    );
    // Each bucket counted by an index-only range scan of its own (at most its share of countCap):
    // grouping one scan of the whole window by an expression per row cost several times more.
    const totals = this.pool.query<{ b: number; n: string }>(
      `SELECT b.i AS b, (SELECT count(*) FROM (SELECT 1 FROM job_runs r
                           WHERE r.created_at >= b.lo AND r.created_at < b.hi AND ${runScope}
                           LIMIT $5) x) AS n
         FROM (${buckets}) b`,
      [...params, Math.ceil(countCap / bucketCount)],
    );
    const skipped = this.pool.query<{ n: string | null }>(
      `SELECT sum(occurrences) AS n FROM (
         SELECT occurrences FROM occurrence_skips r
          WHERE r.first_nominal >= now() - make_interval(secs => $3::double precision)
            AND ${scope$}
          ORDER BY r.first_nominal DESC LIMIT $4) s`,
      [scope.jobId ?? null, scope.tenantId ?? null, windowMs / 1000, countCap],
    );
    // Independent reads, side by side on the pool. Each has its own now(): bucket edges may differ
    // by the milliseconds between them, which a window of an hour or a day does not show.
    const [{ rows }, { rows: totalRows }, { rows: skippedRows }] = await Promise.all([
      sampleRows,
      totals,
      skipped,
    ]);
    const perBucketStats = rows.filter((r) => r.kind === 'bucket').map((r) => ({ ...r, b: Number(r.key) }));
    const byJobRows = rows.filter((r) => r.kind === 'job');
    const byTenantRows = rows.filter((r) => r.kind === 'tenant');
    const overallRow = rows.find((r) => r.kind === 'overall');
    const now = Date.now();
    const bucketSecs = windowMs / 1000 / bucketCount;
    const sample = new Map(perBucketStats.map((r) => [r.b, r]));
    const total = new Map(totalRows.map((r) => [Number(r.b), Number(r.n)]));
    let fired = 0;
    let retried = 0;
    let deadLettered = 0;
    let sampled = false;
    if (totalRows.reduce((a, r) => a + Number(r.n), 0) >= countCap) sampled = true;
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
    const row = (r: { key: string; runs: string; p50: number | null; p99: number | null }): LatenessRow => ({
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
      byJob: byJobRows.map(row),
      byTenant: byTenantRows.map(row),
      counts: {
        fired,
        retried: Math.round(retried),
        deadLettered: Math.round(deadLettered),
        skipped: Number(skippedRows[0]?.n ?? 0),
      },
      overall: { p50Ms: num(overallRow?.p50), p99Ms: num(overallRow?.p99) },
      truncated: sampled,
    };
  }
}
