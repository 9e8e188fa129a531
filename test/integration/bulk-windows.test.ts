/**
 * Bulk actions in the real PostgreSQL: a selection is worked through in windows, each its own
 * short transaction (never one over the whole selection); two bulk actions over the same jobs at
 * once do not deadlock; one tenant's call never touches another tenant's jobs; the pause-until
 * sweep resumes only the shards it is given, with the pause's catch-up choice, and audits it.
 */
import { MAX_JITTER_MS } from '@tickwork/domain';
import { BulkActionService, JobService, type Caller } from '@tickwork/jobs';
import { BulkRepository, HistoryRepository, JobRepository } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';

const N = 1_200;
const WINDOW = 100;

describe('bulk action windows', () => {
  let db: TestDatabase;
  let service: BulkActionService;
  const acme: Caller = { actor: 'acme-user', role: 'tenant', tenantId: 'acme', via: 'rest' };

  beforeAll(async () => {
    db = await testDatabase('bulkwin');
    // acme: N jobs in team=a (ids interleaved with globex's, so the windows cross them); globex: N/2 in team=a.
    await db.pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, time_zone, status, next_run_at, next_nominal_at, target, payload, policies, labels)
       SELECT 'j-' || lpad(i::text, 6, '0'), CASE WHEN i % 3 = 0 THEN 'globex' ELSE 'acme' END, i % 4, 'cron',
              '{"kind":"cron","expression":"0 * * * *","time_zone":"UTC"}', 'UTC', 'SCHEDULED',
              now() + interval '1 hour', now() + interval '1 hour', '{"type":"kafka","topic":"x"}', '{"n":1}', '{}',
              '{"team":"a"}'
         FROM generate_series(1, $1::int) i`,
      [(N * 3) / 2],
    );
    service = new BulkActionService(
      new BulkRepository(db.pool),
      new JobService(new JobRepository(db.pool), new HistoryRepository(db.pool), {
        shardCount: 4,
        herdJitterMs: 0,
        limits: { minIntervalMs: 1_000, maxPayloadBytes: 65_536, maxJitterMs: MAX_JITTER_MS },
      }),
      { windowJobs: WINDOW },
    );
  }, 60_000);
  afterAll(async () => db?.close());

  const countBy = async (sql: string, params: unknown[] = []) =>
    Number((await db.pool.query<{ n: string }>(sql, params)).rows[0]!.n);

  it('a pause and a trigger of the same selection at once both finish, window by window', async () => {
    const [pause, trigger] = await Promise.all([
      service.run(acme, { action: 'PAUSE', label_selector: 'team=a' }),
      service.run(acme, { action: 'TRIGGER', label_selector: 'team=a' }),
    ]);
    expect(pause).toMatchObject({ matched: N, changed: N, failed: 0 });
    expect(trigger).toMatchObject({ matched: N, changed: N, failed: 0 });
    expect(await countBy(`SELECT count(*) n FROM jobs WHERE tenant_id = 'acme' AND status = 'PAUSED'`)).toBe(
      N,
    );
    expect(
      await countBy(`SELECT count(*) n FROM jobs WHERE tenant_id = 'globex' AND status = 'SCHEDULED'`),
    ).toBe(N / 2);
    expect(
      await countBy(`SELECT count(*) n FROM fires WHERE trigger = 'MANUAL' AND tenant_id = 'acme'`),
    ).toBe(N);
    expect(await countBy(`SELECT count(*) n FROM fires WHERE tenant_id = 'globex'`)).toBe(0);
    for (const r of [pause, trigger]) {
      // One audit row per job; now() is the transaction's start, so distinct instants are transactions.
      const rows = await db.pool.query<{ n: string; tx: string; biggest: string }>(
        `SELECT count(*) n, count(DISTINCT at) tx, max(c) biggest
           FROM (SELECT at, count(*) OVER (PARTITION BY at) c FROM audit_events WHERE details->>'bulk_action_id' = $1) x`,
        [r.bulkActionId],
      );
      expect(Number(rows.rows[0]!.n)).toBe(N);
      // Windows of WINDOW jobs in key order over acme's (tenant_id, job_id): N / WINDOW of them.
      expect(Number(rows.rows[0]!.tx)).toBeGreaterThanOrEqual(N / WINDOW);
      expect(Number(rows.rows[0]!.biggest)).toBeLessThanOrEqual(WINDOW);
    }
  });

  it('counts in a dry run without locks or audit rows', async () => {
    const r = await service.run(acme, { action: 'DELETE', label_selector: 'team=a', dry_run: true });
    expect(r.matched).toBe(N);
    expect(r.sampleJobIds).toHaveLength(20);
    expect(
      await countBy(`SELECT count(*) n FROM audit_events WHERE details->>'bulk_action_id' = $1`, [
        r.bulkActionId,
      ]),
    ).toBe(0);
  });

  it('the sweep resumes due pause-untils of the given shards only, with the choice, audited', async () => {
    await db.pool.query(
      `UPDATE jobs SET paused_until = now() - interval '1 second',
              pause_resume = '{"actor":"acme-user","role":"tenant","via":"grpc","bulk_action_id":"b-1","catch_up":{"missed":"SKIP","window_ms":null,"limit":1000}}'
        WHERE job_id IN ('j-000001', 'j-000002')`,
    ); // shards 1 and 2
    const bulk = new BulkRepository(db.pool);
    expect(await bulk.resumeExpiredPauses([1, 3], 10, 'sched-a')).toEqual([
      { jobId: 'j-000001', tenantId: 'acme', resumed: true },
    ]);
    const { rows } = await db.pool.query<{
      job_id: string;
      status: string;
      resume_catch_up: unknown;
      paused_until: Date | null;
    }>(
      `SELECT job_id, status, resume_catch_up, paused_until FROM jobs WHERE job_id IN ('j-000001', 'j-000002') ORDER BY 1`,
    );
    expect(rows).toEqual([
      {
        job_id: 'j-000001',
        status: 'SCHEDULED',
        resume_catch_up: { missed: 'SKIP', window_ms: null, limit: 1000 },
        paused_until: null,
      },
      { job_id: 'j-000002', status: 'PAUSED', resume_catch_up: null, paused_until: expect.any(Date) },
    ]);
    const audit = await db.pool.query(
      `SELECT actor, role, via, action, outcome, details->>'paused_by' AS by FROM audit_events WHERE job_id = 'j-000001' AND action = 'ResumeJob'`,
    );
    expect(audit.rows).toEqual([
      {
        actor: 'scheduler:sched-a',
        role: 'tenant',
        via: 'grpc',
        action: 'ResumeJob',
        outcome: 'OK',
        by: 'acme-user',
      },
    ]);
    expect(await bulk.resumeExpiredPauses([1, 3], 10, 'sched-a')).toEqual([]);
  });
});
