/**
 * Backfills on PostgreSQL: the plan read from the occurrence ledger (fires and skip records), the
 * fenced paced steps that fire each planned occurrence once with trigger BACKFILL, idempotence
 * across two backfills of one window (planned apart and planned together), a scheduler taking a
 * backfill over mid-way (the old owner is fenced out, the new one goes on, nothing twice), cancel,
 * and a scheduled claim of an occurrence a backfill fired (no second fire, no error).
 */
import {
  DEFAULT_BACKFILL_SKIP_REASONS,
  DEFAULT_POLICIES,
  occurrencesInWindow,
  pacedFires,
  parseBackfillRequest,
  planBackfill,
  planDueOccurrences,
  type AuditEntry,
  type BackfillRequest,
  type JobDefinition,
  type PacedFires,
} from '@tickwork/domain';
import { BackfillRunner } from '@tickwork/scheduling';
import {
  BackfillRepository,
  FireStore,
  JobRepository,
  ShardLeaseRepository,
  type DueBackfill,
} from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';
import { claimWith } from '../support/fire-loop';

const SHARD = 5;
const MIN = 60_000;
const audit: AuditEntry = { actor: 'it', role: 'admin', via: 'rest', action: 'CreateBackfill' };
/** Fire everything left at once (the pace is tested on its own below and in the unit spec). */
const all = (nextAtMs: number, _now: number, _rate: number, left: number): PacedFires => ({
  count: left,
  nextAtMs,
});

describe('backfills on PostgreSQL', () => {
  let db: TestDatabase;
  let repo: BackfillRepository;
  let jobs: JobRepository;
  let leases: ShardLeaseRepository;
  // Occurrences every minute from T0 (an hour ago, on a minute).
  const T0 = Math.floor((Date.now() - 60 * MIN) / MIN) * MIN;
  const occ = (k: number) => new Date(T0 + k * MIN);

  function definition(jobId: string): JobDefinition {
    return {
      jobId,
      tenantId: 'acme',
      schedule: { kind: 'interval', everyMs: MIN, anchor: new Date(T0) },
      target: { type: 'kafka', topic: 'sink', key: null, headers: {} },
      payload: { job: jobId },
      policies: DEFAULT_POLICIES,
      labels: {},
    };
  }

  async function newJob(jobId: string): Promise<void> {
    // Not due for a day: only the backfills fire it.
    const later = new Date(Date.now() + 86_400_000);
    await jobs.insertJob({
      definition: definition(jobId),
      shard: SHARD,
      next: { nominalTime: later, scheduledFor: later },
    });
  }

  async function scheduledFire(jobId: string, k: number, token: number): Promise<void> {
    await db.pool.query(
      `WITH b AS (INSERT INTO fire_batches (shard, trigger, claimed_by, fires, enqueued_at)
                  VALUES ($3, 'SCHEDULE', 'earlier', 1, now()) RETURNING batch_id)
       INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, scheduled_for, claimed_by, batch_id, event)
       SELECT $1, $4, 'acme', $3, $2, $2, 'earlier', b.batch_id, '{}'::jsonb FROM b`,
      [jobId, occ(k), SHARD, token],
    );
    await db.pool.query('UPDATE jobs SET fence_token = greatest(fence_token, $2) WHERE job_id = $1', [
      jobId,
      token,
    ]);
  }

  async function skip(jobId: string, reason: string, first: number, last: number): Promise<void> {
    await db.pool.query(
      `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences)
       VALUES ($1, 'acme', $2, $3, $4, $5)`,
      [jobId, reason, occ(first), occ(last), last - first + 1],
    );
  }

  async function plan(jobId: string, request: BackfillRequest) {
    const job = (await repo.findJob(jobId))!;
    const ledger = await repo.ledger(jobId, request.from, request.to);
    return {
      job,
      plan: planBackfill(
        occurrencesInWindow(job.schedule, request.from, request.to),
        ledger,
        request.skipReasons,
      ),
    };
  }

  async function create(jobId: string, request: BackfillRequest) {
    const p = await plan(jobId, request);
    return repo.create({ ...p, request, createdBy: 'it', audit });
  }

  const window = (from: number, to: number, extra: Record<string, unknown> = {}) =>
    parseBackfillRequest({ from: occ(from).toISOString(), to: occ(to).toISOString(), ...extra }, new Date());

  async function backfillFires(jobId: string) {
    const { rows } = await db.pool.query<{
      nominal_time: Date;
      fence_token: string;
      trigger: string;
      claimed_by: string;
      enqueued_at: Date | null;
    }>(
      `SELECT f.nominal_time, f.fence_token, f.trigger, f.claimed_by, b.enqueued_at
         FROM fires f JOIN fire_batches b USING (batch_id)
        WHERE f.job_id = $1 AND f.trigger = 'BACKFILL' ORDER BY f.nominal_time`,
      [jobId],
    );
    return rows;
  }

  async function drain(owner: string, b: { backfillId: number }, lease: { epoch: number }) {
    const due: DueBackfill = {
      backfillId: b.backfillId,
      tenantId: 'acme',
      jobId: '',
      shard: SHARD,
      epoch: lease.epoch,
    };
    for (let i = 0; i < 50; i++) {
      const step = await repo.fireNext({ owner, due, pace: all });
      if (step.fenced || step.status !== 'RUNNING') return step;
    }
    throw new Error('backfill did not finish');
  }

  beforeAll(async () => {
    db = await testDatabase('backfill');
    repo = new BackfillRepository(db.pool);
    jobs = new JobRepository(db.pool);
    leases = new ShardLeaseRepository(db.pool);
  });

  afterAll(async () => {
    await db.close();
  });

  it('plans from the ledger: never fired and skipped-for-an-included-reason occurrences, each fired once with trigger BACKFILL', async () => {
    await newJob('ledger');
    await scheduledFire('ledger', 0, 1);
    await scheduledFire('ledger', 1, 2);
    await skip('ledger', 'PAUSED', 2, 3);
    await skip('ledger', 'COALESCED', 4, 4);
    await skip('ledger', 'INVALID_DEFINITION: bad cron', 5, 5);
    await skip('ledger', 'OVERLAP', 6, 6);
    // 7, 8, 9: no record at all.
    const request = window(0, 10);
    const { plan: p } = await plan('ledger', request);
    expect(p.items.map((i) => [(i.nominal.getTime() - T0) / MIN, i.reason])).toEqual([
      [2, 'PAUSED'],
      [3, 'PAUSED'],
      [4, 'COALESCED'],
      [6, 'OVERLAP'],
      [7, 'NEVER_FIRED'],
      [8, 'NEVER_FIRED'],
      [9, 'NEVER_FIRED'],
    ]);
    expect(p.alreadyRan).toBe(2);
    expect(p.excluded).toEqual({ INVALID_DEFINITION: 1 });

    const b = await create('ledger', request);
    expect(b).toMatchObject({ status: 'PENDING', planned: 7, fired: 0, alreadyRan: 2 });
    const [lease] = await leases.acquire([SHARD], 'sched-a', 30_000);
    const step = await drain('sched-a', b, lease!);
    expect(step).toMatchObject({ fenced: false, status: 'DONE' });
    const fired = await backfillFires('ledger');
    expect(fired.map((f) => (f.nominal_time.getTime() - T0) / MIN)).toEqual([2, 3, 4, 6, 7, 8, 9]);
    expect(fired.every((f) => f.claimed_by === `backfill:${b.backfillId}` && f.enqueued_at === null)).toBe(
      true,
    );
    // New fence tokens after the job's last one, each once.
    expect(fired.map((f) => Number(f.fence_token)).sort((x, y) => x - y)).toEqual([3, 4, 5, 6, 7, 8, 9]);
    const after = await repo.get(b.jobId, b.backfillId);
    expect(after).toMatchObject({ status: 'DONE', fired: 7, foundRan: 0 });
    expect(after!.startedAt).not.toBeNull();
    expect(after!.finishedAt).not.toBeNull();
    const items = await repo.items(b.jobId, b.backfillId, 100);
    expect(items.every((i) => i.state === 'FIRED' && i.fenceToken !== null)).toBe(true);
    // The event carries the occurrence's nominal time.
    const { rows } = await db.pool.query<{ event: { nominal_time: string; fire_id: string } }>(
      `SELECT event FROM fires WHERE job_id = 'ledger' AND trigger = 'BACKFILL' AND nominal_time = $1`,
      [occ(7)],
    );
    expect(rows[0]!.event.nominal_time).toBe(occ(7).toISOString());

    // A second backfill of the same window fires nothing: it plans nothing and is DONE at once.
    const again = await create('ledger', request);
    expect(again).toMatchObject({ status: 'DONE', planned: 0, alreadyRan: 9 });
    expect(await backfillFires('ledger')).toHaveLength(7);
    // Including INVALID_DEFINITION now plans just that one.
    const withInvalid = await plan(
      'ledger',
      window(0, 10, { skip_reasons: [...DEFAULT_BACKFILL_SKIP_REASONS, 'INVALID_DEFINITION'] }),
    );
    expect(withInvalid.plan.items.map((i) => [(i.nominal.getTime() - T0) / MIN, i.reason])).toEqual([
      [5, 'INVALID_DEFINITION'],
    ]);
  });

  it('two backfills of one window planned before either fired: each occurrence fires once', async () => {
    await newJob('twice');
    const request = window(10, 20);
    const first = await create('twice', request);
    const second = await create('twice', request);
    expect(first.planned).toBe(10);
    expect(second.planned).toBe(10);
    const [lease] = await leases.acquire([SHARD], 'sched-a', 30_000);
    await drain('sched-a', first, lease!);
    await drain('sched-a', second, lease!);
    expect(await backfillFires('twice')).toHaveLength(10);
    expect(await repo.get(second.jobId, second.backfillId)).toMatchObject({
      status: 'DONE',
      fired: 0,
      foundRan: 10,
    });
    expect(
      (await repo.items(second.jobId, second.backfillId, 100)).every((i) => i.state === 'ALREADY_RAN'),
    ).toBe(true);
  });

  it('a scheduler taking a backfill over: the old owner is fenced out, the new one goes on at the next occurrence; nothing twice', async () => {
    await newJob('takeover');
    const b = await create('takeover', window(20, 30));
    const [a] = await leases.acquire([SHARD], 'sched-a', 30_000);
    const due: DueBackfill = {
      backfillId: b.backfillId,
      tenantId: 'acme',
      jobId: 'takeover',
      shard: SHARD,
      epoch: a!.epoch,
    };
    const three = (nextAtMs: number): PacedFires => ({ count: 3, nextAtMs });
    expect((await repo.fireNext({ owner: 'sched-a', due, pace: three })).fired).toHaveLength(3);
    // sched-a "crashes"; sched-b takes the shard (a new epoch).
    const [bLease] = await leases.acquire([SHARD], 'sched-b', 30_000);
    const stale = await repo.fireNext({ owner: 'sched-a', due, pace: all });
    expect(stale).toMatchObject({ fenced: true, fired: [] });
    expect(await repo.due('sched-a', [a!], 10)).toEqual([]);
    const dueB = await repo.due('sched-b', [bLease!], 10);
    expect(dueB.map((d) => d.backfillId)).toContain(b.backfillId);
    const rest = await drain('sched-b', b, bLease!);
    expect(rest.status).toBe('DONE');
    const fired = await backfillFires('takeover');
    expect(fired.map((f) => (f.nominal_time.getTime() - T0) / MIN)).toEqual([
      20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
    ]);
    expect(await repo.get(b.jobId, b.backfillId)).toMatchObject({ fired: 10, foundRan: 0 });
  });

  it('cancel stops further fires; the ones made stay', async () => {
    await newJob('cancel');
    const b = await create('cancel', window(30, 40));
    const [lease] = await leases.acquire([SHARD], 'sched-a', 30_000);
    const due: DueBackfill = {
      backfillId: b.backfillId,
      tenantId: 'acme',
      jobId: 'cancel',
      shard: SHARD,
      epoch: lease!.epoch,
    };
    await repo.fireNext({ owner: 'sched-a', due, pace: (n) => ({ count: 2, nextAtMs: n }) });
    const cancelled = await repo.cancel(b.jobId, b.backfillId, 'it', { ...audit, action: 'CancelBackfill' });
    expect(cancelled).toMatchObject({ status: 'CANCELLED', fired: 2, cancelledBy: 'it' });
    expect(await repo.fireNext({ owner: 'sched-a', due, pace: all })).toMatchObject({
      fired: [],
      status: null,
    });
    expect(await backfillFires('cancel')).toHaveLength(2);
    // Cancelling again changes nothing.
    expect(await repo.cancel(b.jobId, b.backfillId, 'other', audit)).toMatchObject({
      status: 'CANCELLED',
      cancelledBy: 'it',
    });
    const { rows } = await db.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM audit_events WHERE action = 'CancelBackfill' AND job_id = 'cancel'`,
    );
    expect(Number(rows[0]!.n)).toBe(1);
  });

  it('a backfill of a deleted job fails, naming why', async () => {
    await newJob('gone');
    const b = await create('gone', window(40, 45));
    await db.pool.query(`DELETE FROM jobs WHERE job_id = 'gone'`);
    const [lease] = await leases.acquire([SHARD], 'sched-a', 30_000);
    const step = await drain('sched-a', b, lease!);
    expect(step.status).toBe('FAILED');
    expect((await repo.get(b.jobId, b.backfillId))!.failure).toMatch(/gone was deleted/);
  });

  it('the runner paces fires at max_per_second', async () => {
    await newJob('paced');
    const b = await create('paced', window(45, 51, { max_per_second: 4 }));
    const [lease] = await leases.acquire([SHARD], 'sched-r', 30_000);
    const runner = new BackfillRunner(
      repo,
      { owner: 'sched-r', everyMs: 20, maxPerStep: 100, maxPerTick: 10, shards: () => [lease!] },
      {
        onError: (e) => {
          throw e;
        },
      },
    );
    const started = Date.now();
    runner.start();
    try {
      const deadline = Date.now() + 10_000;
      while ((await repo.get(b.jobId, b.backfillId))!.status !== 'DONE' && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
    } finally {
      await runner.stop();
    }
    const fired = await db.pool.query<{ claimed_at: Date }>(
      `SELECT claimed_at FROM fires WHERE job_id = 'paced' AND trigger = 'BACKFILL' ORDER BY claimed_at`,
    );
    expect(fired.rows).toHaveLength(6);
    // 6 fires at 4/s: the first at once, the last 5 × 250 ms later.
    const span = fired.rows[5]!.claimed_at.getTime() - fired.rows[0]!.claimed_at.getTime();
    expect(span).toBeGreaterThanOrEqual(1_150);
    expect(span).toBeLessThan(5_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_150);
    expect(pacedFires(0, 1_000, 4, 100).count).toBe(5);
  });

  it('a scheduled claim of an occurrence a backfill fired makes no second fire (one guard for both)', async () => {
    await newJob('claimed');
    const b = await create('claimed', window(51, 53));
    const [lease] = await leases.acquire([SHARD], 'sched-a', 30_000);
    await drain('sched-a', b, lease!);
    // The job's schedule cursor is set back onto the backfilled occurrences (a resume catching up).
    await db.pool.query(
      `UPDATE jobs SET next_nominal_at = $2, next_run_at = $2, status = 'SCHEDULED',
                       policies = policies || '{"misfire": "FIRE_ALL"}' WHERE job_id = $1`,
      ['claimed', occ(51)],
    );
    const fires = new FireStore(db.pool);
    const claim = await claimWith(
      fires,
      { owner: 'sched-a', shards: [lease!], limit: 10, lookaheadMs: 0 },
      ({ job, previousFireInFlight }, now) =>
        planDueOccurrences(
          job,
          job.nextNominalAt ?? now,
          now,
          { maxCatchUp: 100, herdJitterMs: 0 },
          previousFireInFlight,
        ),
    );
    expect(claim.parked).toEqual([]);
    const { rows } = await db.pool.query<{ nominal_time: Date; trigger: string }>(
      `SELECT nominal_time, trigger FROM fires WHERE job_id = 'claimed' AND nominal_time IN ($1, $2) ORDER BY nominal_time`,
      [occ(51), occ(52)],
    );
    expect(rows.map((r) => r.trigger)).toEqual(['BACKFILL', 'BACKFILL']);
    // The claim fired the occurrences after them, not those two again.
    const claimed = claim.fires
      .filter((f) => f.event.jobId === 'claimed')
      .map((f) => (f.event.nominalTime.getTime() - T0) / MIN);
    expect(claimed[0]).toBe(53);
    expect(claimed.length).toBeGreaterThanOrEqual(5);
  });
});
