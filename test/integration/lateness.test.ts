/**
 * Lateness from the run ledger (InsightRepository.lateness, behind GET /v1/lateness and the
 * console's Lateness view) against real PostgreSQL: counts, and p50/p99 per bucket, job, tenant
 * and overall equal to percentile_cont's linear interpolation computed here from the same runs.
 */
import { InsightRepository } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';

/** percentile_cont: linear interpolation between the ranks around p × (n − 1). */
function percentileCont(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const v = [...values].sort((a, b) => a - b);
  const h = p * (v.length - 1);
  const lo = Math.floor(h);
  return v[lo]! + (h - lo) * ((v[Math.min(lo + 1, v.length - 1)] ?? v[lo]!) - v[lo]!);
}

interface SeededRun {
  job: string;
  tenant: string;
  lateMs: number | null;
  minutesAgo: number;
  attempt?: number;
  status?: 'SUCCEEDED' | 'DEAD_LETTERED' | 'RUNNING';
}

describe('lateness from the run ledger', () => {
  let db: TestDatabase;
  let insight: InsightRepository;
  const runs: SeededRun[] = [];

  beforeAll(async () => {
    db = await testDatabase('lateness');
    insight = new InsightRepository(db.pool);
    // Job a-1 has many runs (its percentiles interpolate), the others a few; one run never
    // started (it counts as a run, not in the percentiles); one is still running (not counted).
    for (let i = 0; i < 23; i++)
      runs.push({ job: 'a-1', tenant: 'acme', lateMs: 10 + i * i, minutesAgo: 2 + i });
    runs.push({ job: 'a-2', tenant: 'acme', lateMs: 400, minutesAgo: 3, attempt: 2 });
    runs.push({ job: 'a-2', tenant: 'acme', lateMs: 900, minutesAgo: 4, status: 'DEAD_LETTERED' });
    runs.push({ job: 'a-3', tenant: 'acme', lateMs: null, minutesAgo: 5 });
    runs.push({ job: 'g-1', tenant: 'globex', lateMs: 50, minutesAgo: 6 });
    runs.push({ job: 'g-1', tenant: 'globex', lateMs: 70, minutesAgo: 7 });
    runs.push({ job: 'g-1', tenant: 'globex', lateMs: 5, minutesAgo: 8, status: 'RUNNING' });
    // Outside the hour, inside the day.
    runs.push({ job: 'a-1', tenant: 'acme', lateMs: 5000, minutesAgo: 120 });
    let fence = 0;
    for (const r of runs) {
      fence++;
      await db.pool.query(
        `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, attempt, status,
                               started_at, finished_at, created_at, updated_at)
         SELECT $1::text, $2::bigint, $3::text, $1::text || ':' || $2::bigint, t, t, $4::int, $5::text,
                CASE WHEN $6::int IS NULL THEN NULL ELSE t + $6::int * interval '1 millisecond' END,
                CASE WHEN $5::text = 'RUNNING' THEN NULL ELSE t + interval '2 seconds' END, t, t
           FROM (SELECT now() - $7::int * interval '1 minute' AS t) x`,
        [r.job, fence, r.tenant, r.attempt ?? 1, r.status ?? 'SUCCEEDED', r.lateMs, r.minutesAgo],
      );
    }
    await db.pool.query(
      `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences)
       VALUES ('a-1', 'acme', 'MISFIRE_SKIP', now() - interval '10 minutes', now() - interval '9 minutes', 3),
              ('g-1', 'globex', 'OVERLAP', now() - interval '10 minutes', now() - interval '10 minutes', 1)`,
    );
  });
  afterAll(async () => db.close());

  const finishedInHour = () => runs.filter((r) => r.status !== 'RUNNING' && r.minutesAgo < 60);
  const lates = (rs: SeededRun[]) => rs.flatMap((r) => (r.lateMs === null ? [] : [r.lateMs]));

  it('gives every tenant, job and bucket its percentiles and counts over the last hour', async () => {
    const report = await insight.lateness({}, 3_600_000, 12);
    const hour = finishedInHour();
    expect(report.counts).toEqual({ fired: hour.length, retried: 1, deadLettered: 1, skipped: 4 });
    expect(report.truncated).toBe(false);
    expect(report.overall.p50Ms).toBeCloseTo(percentileCont(lates(hour), 0.5)!, 6);
    expect(report.overall.p99Ms).toBeCloseTo(percentileCont(lates(hour), 0.99)!, 6);
    // Worst p99 first; a job whose runs never started has no percentiles and comes last.
    expect(report.byJob.map((j) => j.key)).toEqual(['a-2', 'a-1', 'g-1', 'a-3']);
    for (const job of ['a-1', 'a-2', 'g-1']) {
      const mine = hour.filter((r) => r.job === job);
      const row = report.byJob.find((j) => j.key === job)!;
      expect(row.runs).toBe(mine.length);
      expect(row.p50Ms).toBeCloseTo(percentileCont(lates(mine), 0.5)!, 6);
      expect(row.p99Ms).toBeCloseTo(percentileCont(lates(mine), 0.99)!, 6);
    }
    expect(report.byJob.find((j) => j.key === 'a-3')).toEqual({
      key: 'a-3',
      runs: 1,
      p50Ms: null,
      p99Ms: null,
    });
    for (const tenant of ['acme', 'globex']) {
      const mine = hour.filter((r) => r.tenant === tenant);
      const row = report.byTenant.find((t) => t.key === tenant)!;
      expect(row.runs).toBe(mine.length);
      expect(row.p99Ms).toBeCloseTo(percentileCont(lates(mine), 0.99)!, 6);
    }
    // 12 buckets of 5 minutes, oldest first; every run of the hour is in one.
    expect(report.buckets).toHaveLength(12);
    expect(report.buckets.reduce((n, b) => n + b.runs, 0)).toBe(hour.length);
    const newest = report.buckets[11]!;
    const inNewest = hour.filter((r) => r.minutesAgo < 5);
    expect(newest.runs).toBe(inNewest.length);
    expect(newest.p99Ms).toBeCloseTo(percentileCont(lates(inNewest), 0.99)!, 6);
  });

  it('scopes to one tenant or one job, and a day reaches further back', async () => {
    const acme = await insight.lateness({ tenantId: 'acme' }, 3_600_000, 12);
    expect(acme.byTenant.map((t) => t.key)).toEqual(['acme']);
    expect(acme.counts.fired).toBe(finishedInHour().filter((r) => r.tenant === 'acme').length);
    expect(acme.counts.skipped).toBe(3);
    const day = await insight.lateness({ jobId: 'a-1' }, 86_400_000, 24);
    const a1 = runs.filter((r) => r.job === 'a-1');
    expect(day.counts.fired).toBe(a1.length);
    expect(day.byJob).toHaveLength(1);
    expect(day.byJob[0]!.p99Ms).toBeCloseTo(percentileCont(lates(a1), 0.99)!, 6);
  });

  it('reads a bounded sample: a bucket with more runs than its share is cut and says so', async () => {
    // 2 runs read per bucket at most: the newest bucket (4 finished runs) is cut; counts stay exact.
    const report = await insight.lateness({ tenantId: 'acme' }, 3_600_000, 12, 2);
    expect(report.truncated).toBe(true);
    expect(report.counts.fired).toBe(finishedInHour().filter((r) => r.tenant === 'acme').length);
    expect(report.byJob.reduce((n, j) => n + j.runs, 0)).toBeLessThanOrEqual(24);
  });
});
