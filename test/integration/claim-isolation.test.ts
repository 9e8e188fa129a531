/**
 * A bad job is quarantined, never contagious: poison jobs of one tenant, written straight into the
 * store (as an old row or a bug would, around the validation), sit on the same shard as another
 * tenant's due jobs. The claim fires the healthy jobs, parks each poison job with its reason in the
 * occurrence ledger, and the lane claims on at its next tick.
 */
import {
  DEFAULT_POLICIES,
  planDueOccurrences,
  type ClaimPlanner,
  type ClaimResult,
  type JobDefinition,
} from '@tickwork/domain';
import { FireStore, JobRepository, ShardLeaseRepository } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';
import { claimWith } from '../support/fire-loop';

const SHARD = 3;
const planner: ClaimPlanner = ({ job, previousFireInFlight }, now) =>
  planDueOccurrences(
    job,
    job.nextNominalAt ?? now,
    now,
    { maxCatchUp: 10, herdJitterMs: 0 },
    previousFireInFlight,
  );

function definition(jobId: string, tenantId: string): JobDefinition {
  return {
    jobId,
    tenantId,
    schedule: { kind: 'interval', everyMs: 60_000, anchor: new Date(Date.now() - 1_000) },
    target: { type: 'kafka', topic: 'sink', key: null, headers: {} },
    payload: { tenant: tenantId },
    policies: DEFAULT_POLICIES,
    labels: {},
  };
}

/** Each poison job and the SQL that spoils it (run after it was stored valid). */
const POISON: Record<string, { sql: string; reason: RegExp }> = {
  // The one-shot of issue 24: year 0 (stored by pg as 0001-01-01 BC).
  'mallory-year0': {
    sql: `UPDATE jobs SET schedule = '{"kind": "once", "at": "0000-01-01T00:00:00.000Z"}', schedule_kind = 'once',
                 next_run_at = '0001-01-01 00:00:00+00 BC', next_nominal_at = '0001-01-01 00:00:00+00 BC'
           WHERE job_id = $1`,
    reason: /schedule\.at must be within 1970-01-01T00:00:00Z to 9999-12-31T23:59:59\.999Z/,
  },
  // Due occurrence stored out of range while the schedule is fine.
  'mallory-nominal-bc': {
    sql: `UPDATE jobs SET next_nominal_at = '0044-03-15 12:00:00+00 BC' WHERE job_id = $1`,
    reason: /next_nominal_at must be within/,
  },
  'mallory-nominal-infinity': {
    sql: `UPDATE jobs SET next_nominal_at = '-infinity' WHERE job_id = $1`,
    reason: /next_nominal_at is -Infinity/,
  },
  // A schedule that throws in planning.
  'mallory-cron': {
    sql: `UPDATE jobs SET schedule = '{"kind": "cron", "expression": "61 * * * *", "time_zone": "UTC", "dst_gap": "AUTO", "dst_repeat": "AUTO"}',
                 schedule_kind = 'cron' WHERE job_id = $1`,
    reason: /61/,
  },
  'mallory-every0': {
    sql: `UPDATE jobs SET schedule = jsonb_set(schedule, '{every_ms}', '0') WHERE job_id = $1`,
    reason: /every_ms 0/,
  },
  'mallory-fence': {
    sql: `UPDATE jobs SET fence_token = 9223372036854775807 WHERE job_id = $1`,
    reason: /fence_token .* beyond/,
  },
  // A target its fire event could not carry (Avro map<string>): it would fail the publish of its batch.
  'mallory-header': {
    sql: `UPDATE jobs SET target = '{"type": "kafka", "topic": "sink", "key": null, "headers": {"n": 1}}' WHERE job_id = $1`,
    reason: /target\.headers must map names to strings/,
  },
  // Passes every check in the scheduler, fails the claim's statement (23505 on the fires key):
  // the job's fence token was set back under a fire it already had.
  'mallory-refenced': {
    sql: `WITH b AS (INSERT INTO fire_batches (shard, trigger, claimed_by, fires, enqueued_at)
                     VALUES (${SHARD}, 'SCHEDULE', 'earlier', 1, now()) RETURNING batch_id)
          INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, scheduled_for, claimed_by, batch_id, event)
          SELECT $1, 1, 'mallory', ${SHARD}, now() - interval '1 day', now() - interval '1 day', 'earlier', b.batch_id, '{}'::jsonb FROM b`,
    reason: /duplicate key value violates unique constraint "fires_pkey"/,
  },
};

describe('claim isolation of poison jobs', () => {
  let db: TestDatabase;
  let fires: FireStore;
  let jobs: JobRepository;
  let leases: ShardLeaseRepository;

  beforeAll(async () => {
    db = await testDatabase('claimiso');
    fires = new FireStore(db.pool);
    jobs = new JobRepository(db.pool);
    leases = new ShardLeaseRepository(db.pool);
  });

  afterAll(async () => {
    await db.close();
  });

  const due = () => {
    const at = new Date(Date.now() - 1_000);
    return { nominalTime: at, scheduledFor: at };
  };

  it("another tenant's due jobs on the same shard fire; each poison job is parked with its reason", async () => {
    for (const id of Object.keys(POISON)) {
      await jobs.insertJob({ definition: definition(id, 'mallory'), shard: SHARD, next: due() });
      await db.pool.query(POISON[id]!.sql, [id]);
    }
    // A retry policy the validation would refuse (text, and a number past double precision) on an
    // overlap FORBID job: read by the claim's due scan itself, it must not fail it.
    await jobs.insertJob({ definition: definition('mallory-age', 'mallory'), shard: SHARD, next: due() });
    await db.pool.query(
      `UPDATE jobs SET policies = policies || '{"overlap": "FORBID", "retry": {"max_event_age_ms": "soon"}}' WHERE job_id = 'mallory-age'`,
    );
    await jobs.insertJob({ definition: definition('mallory-age2', 'mallory'), shard: SHARD, next: due() });
    await db.pool.query(
      `UPDATE jobs SET policies = policies || '{"overlap": "FORBID", "retry": {"max_event_age_ms": 1e400}}' WHERE job_id = 'mallory-age2'`,
    );
    const healthy: string[] = [];
    for (let i = 0; i < 20; i++) {
      healthy.push(`acme-${i}`);
      await jobs.insertJob({ definition: definition(`acme-${i}`, 'acme'), shard: SHARD, next: due() });
    }

    const [lease] = await leases.acquire([SHARD], 'lane', 30_000);
    const claim = await claimWith(
      fires,
      { owner: 'lane', shards: [lease!], limit: 100, lookaheadMs: 0 },
      planner,
    );
    const fired = new Set(claim.fires.map((f) => f.event.jobId));
    for (const id of healthy) expect(fired.has(id)).toBe(true);
    expect(fired.has('mallory-age')).toBe(true);
    expect(fired.has('mallory-age2')).toBe(true);
    expect([...claim.parked].sort()).toEqual(Object.keys(POISON).sort());

    const { rows } = await db.pool.query<{ job_id: string; status: string; reason: string }>(
      `SELECT j.job_id, j.status, s.reason FROM jobs j JOIN occurrence_skips s USING (job_id)
        WHERE j.tenant_id = 'mallory' ORDER BY j.job_id`,
    );
    expect(rows.map((r) => r.job_id).sort()).toEqual(Object.keys(POISON).sort());
    for (const r of rows) {
      expect(r.status).toBe('PAUSED');
      expect(r.reason).toMatch(/^INVALID_DEFINITION: /);
      expect(r.reason).toMatch(POISON[r.job_id]!.reason);
    }
    // The healthy fires are in the outbox, in batches of the shard.
    const outbox = await db.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM fire_log WHERE tenant_id = 'acme' AND enqueued_at IS NULL`,
    );
    expect(Number(outbox.rows[0]!.n)).toBe(healthy.length);

    // The lane goes on: the next claim neither fails nor finds the parked jobs.
    const next: ClaimResult = await claimWith(
      fires,
      { owner: 'lane', shards: [lease!], limit: 100, lookaheadMs: 0 },
      planner,
    );
    expect(next.parked).toEqual([]);
    expect(next.fires).toEqual([]);
  });

  it('a statement error of one job among many: the others are written, the job is parked', async () => {
    await db.pool.query(
      `DELETE FROM jobs; DELETE FROM fires; DELETE FROM fire_batches; DELETE FROM occurrence_skips`,
    );
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) {
      ids.push(`bulk-${i}`);
      await jobs.insertJob({ definition: definition(`bulk-${i}`, 'acme'), shard: SHARD, next: due() });
    }
    await jobs.insertJob({
      definition: definition('mallory-refenced', 'mallory'),
      shard: SHARD,
      next: due(),
    });
    await db.pool.query(POISON['mallory-refenced']!.sql, ['mallory-refenced']);
    const [lease] = await leases.acquire([SHARD], 'lane2', 30_000);
    const claim = await claimWith(
      fires,
      { owner: 'lane2', shards: [lease!], limit: 1_000, lookaheadMs: 0 },
      planner,
    );
    expect(claim.parked).toEqual(['mallory-refenced']);
    expect(claim.fires.map((f) => f.event.jobId).sort()).toEqual([...ids].sort());
    // Every fire's batch exists and counts it.
    const { rows } = await db.pool.query<{ batch_id: string; fires: number; n: string }>(
      `SELECT b.batch_id, b.fires, count(f.*) AS n FROM fire_batches b JOIN fires f USING (batch_id)
        WHERE b.claimed_by = 'lane2' GROUP BY b.batch_id, b.fires`,
    );
    expect(rows.every((r) => Number(r.n) === r.fires)).toBe(true);
    expect(rows.reduce((sum, r) => sum + r.fires, 0)).toBe(ids.length);
    expect(new Set(claim.fires.map((f) => f.batchId))).toEqual(new Set(rows.map((r) => Number(r.batch_id))));
  });
});
