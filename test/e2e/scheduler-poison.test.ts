/**
 * A bad job is quarantined, never contagious, with a real scheduler: one tenant's poison jobs of
 * five kinds, written straight into the store (as an old row or a bug would), sit on the same
 * shard as another tenant's jobs. The other tenant's jobs fire on time, every one, and each poison
 * job is parked (paused) with its reason in the occurrence ledger.
 */
import { shardOf } from '@tickwork/domain';
import { startApp, type AppProcess } from '../support/apps';
import { testDatabase, type TestDatabase } from '../support/db';
import { eventually, freePort } from '../support/env';
import { seedJobs } from '../support/seed';

const SHARDS = 4;

/** Ids (with `prefix`) that land on `shard`. */
function idsOnShard(prefix: string, shard: number, count: number): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++)
    if (shardOf(`${prefix}-${i}`, SHARDS) === shard) ids.push(`${prefix}-${i}`);
  return ids;
}

describe('scheduler with a poison job on a shard', () => {
  let db: TestDatabase;
  let scheduler: AppProcess | undefined;

  beforeEach(async () => {
    db = await testDatabase('poison');
  });

  afterEach(async () => {
    await scheduler?.kill();
    await db.close();
  });

  it("another tenant's jobs on the same shard fire on time; each poison job is parked with its reason", async () => {
    const shard = 2;
    const port = await freePort();
    scheduler = startApp(
      'scheduler',
      db.iso.env({ TICKWORK_SHARDS: String(SHARDS), TICKWORK_TICK_MS: '100' }),
      port,
    );
    await scheduler.ready();
    const target = { type: 'kafka' as const, topic: `${db.iso.topicPrefix}.sink`, key: null, headers: {} };

    // Poison first, due now: every claim of the shard's lane meets it before the healthy jobs.
    const poisonIds = idsOnShard('mallory', shard, 5);
    const past = new Date(Date.now() - 5_000);
    for (const id of poisonIds)
      await db.pool.query(
        `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
         VALUES ($1, 'mallory', $2, 'once', '{"kind": "once", "at": "2026-01-01T00:00:00.000Z"}', 'PAUSED', $3, $3, $4, 'null', '{}')`,
        [id, shard, past, JSON.stringify({ type: 'kafka', topic: target.topic, key: null, headers: {} })],
      );
    const [year0, cron, every0, refenced, header] = poisonIds as [string, string, string, string, string];
    // The one-shot at year 0 of issue 24 (PostgreSQL stores it as 0001-01-01 BC).
    await db.pool.query(
      `UPDATE jobs SET schedule = '{"kind": "once", "at": "0000-01-01T00:00:00.000Z"}',
              next_run_at = '0001-01-01 00:00:00+00 BC', next_nominal_at = '0001-01-01 00:00:00+00 BC' WHERE job_id = $1`,
      [year0],
    );
    // A schedule that throws in planning, and one no arithmetic can use.
    await db.pool.query(
      `UPDATE jobs SET schedule_kind = 'cron', schedule = '{"kind": "cron", "expression": "61 * * * *", "time_zone": "UTC"}' WHERE job_id = $1`,
      [cron],
    );
    await db.pool.query(
      `UPDATE jobs SET schedule_kind = 'interval', schedule = jsonb_build_object('kind', 'interval', 'every_ms', 0, 'anchor', '2026-01-01T00:00:00.000Z') WHERE job_id = $1`,
      [every0],
    );
    // One that passes every check in the scheduler and fails the claim's statement (its fence
    // token was set back under a fire it already has).
    await db.pool.query(
      `WITH b AS (INSERT INTO fire_batches (shard, trigger, claimed_by, fires, enqueued_at)
                  VALUES ($2, 'SCHEDULE', 'earlier', 1, now()) RETURNING batch_id)
       INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, scheduled_for, claimed_by, batch_id, event)
       SELECT $1, 1, 'mallory', $2, now() - interval '1 day', now() - interval '1 day', 'earlier', b.batch_id, '{}'::jsonb FROM b`,
      [refenced, shard],
    );

    // A target its fire event cannot carry (Avro map<string>): its batch's publish would fail, every time.
    await db.pool.query(
      `UPDATE jobs SET target = jsonb_set(target, '{headers}', '{"n": 1}') WHERE job_id = $1`,
      [header],
    );

    // Spoiled while paused, so the running scheduler meets them only as they are now.
    await db.pool.query(`UPDATE jobs SET status = 'SCHEDULED' WHERE job_id = ANY($1)`, [poisonIds]);

    // The healthy tenant: one-shots due over the next few seconds on the same shard, and more on the others.
    const t0 = Date.now() + 2_000;
    const healthy = await seedJobs(db.pool, {
      prefix: 'acme',
      count: 200,
      shardCount: SHARDS,
      schedule: (i) => ({ kind: 'once', at: new Date(t0 + (i % 20) * 100) }),
      firstAt: (i) => new Date(t0 + (i % 20) * 100),
      target,
    });
    const onShard = healthy.filter((id) => shardOf(id, SHARDS) === shard);
    expect(onShard.length).toBeGreaterThan(20);

    const fired = await eventually(
      "every healthy job's fire published",
      async () => {
        const { rows } = await db.pool.query<{ job_id: string; late_ms: number }>(
          `SELECT job_id, extract(epoch FROM (enqueued_at - scheduled_for)) * 1000 AS late_ms
             FROM fire_log WHERE tenant_id = 'acme' AND enqueued_at IS NOT NULL`,
        );
        return rows.length >= healthy.length ? rows : undefined;
      },
      30_000,
      200,
    );
    expect(new Set(fired.map((r) => r.job_id))).toEqual(new Set(healthy));
    // On time: published within a second of its time (tick 100 ms), on the poisoned shard too.
    const worst = Math.max(...fired.filter((r) => onShard.includes(r.job_id)).map((r) => Number(r.late_ms)));
    expect(worst).toBeLessThan(1_000);

    const parked = await eventually('every poison job parked', async () => {
      const { rows } = await db.pool.query<{ job_id: string; status: string; reason: string }>(
        `SELECT j.job_id, j.status, s.reason FROM jobs j JOIN occurrence_skips s USING (job_id) WHERE j.tenant_id = 'mallory'`,
      );
      return rows.length >= poisonIds.length ? rows : undefined;
    });
    const reasonOf = new Map(parked.map((r) => [r.job_id, r.reason]));
    expect(parked.every((r) => r.status === 'PAUSED')).toBe(true);
    expect(reasonOf.get(year0)).toMatch(/^INVALID_DEFINITION: schedule\.at must be within 1970/);
    expect(reasonOf.get(cron)).toMatch(/^INVALID_DEFINITION: .*61/);
    expect(reasonOf.get(every0)).toMatch(/^INVALID_DEFINITION: schedule\.every_ms 0/);
    expect(reasonOf.get(refenced)).toMatch(
      /^INVALID_DEFINITION: duplicate key value violates unique constraint/,
    );
    expect(reasonOf.get(header)).toMatch(/^INVALID_DEFINITION: target\.headers must map names to strings/);
    // The lane never failed a tick over them, and said what it parked.
    expect(scheduler.output.filter((l) => /fire loop:/.test(l))).toEqual([]);
    expect(scheduler.output.some((l) => /parked \(paused\) \d+ job/.test(l))).toBe(true);
  });
});
