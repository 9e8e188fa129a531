/**
 * The run ledger's executor side against real PostgreSQL: the job's retry policy read with the
 * lease, unknown jobs, RETRYING runs taken by the next attempt only, hand-off markers, lease
 * release, and the retention purge (batched, skipping rows locked by the hot path); and writes
 * tried again after their answer was lost (a database blip), which must recognise themselves.
 */
import type { FireEvent } from '@tickwork/domain';
import { issueLeaseToken, newLeaseIssuer } from '@tickwork/execution';
import { RunRepository } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';
import { fireOf, insertJob, quickRetry, webhook } from '../e2e/executor-harness';

describe('run ledger for the executor', () => {
  let db: TestDatabase;
  let runs: RunRepository;
  const target = webhook('https://example.com/hook');

  beforeAll(async () => {
    db = await testDatabase('execledger');
    runs = new RunRepository(db.pool);
  });
  afterAll(async () => db?.close());

  const begin = async (fire: FireEvent, owner = 'exec-a', leaseMs = 30_000) => {
    const s = await runs.beginRun(fire, owner, leaseMs);
    return s;
  };

  it('reads the job retry policy with the lease, and reports a job that no longer exists', async () => {
    await insertJob(db.pool, 'pol-1', target, quickRetry({ maxAttempts: 7 }));
    const s = await begin(fireOf('pol-1', target));
    expect(s).toMatchObject({
      action: 'execute',
      takenOver: false,
      attempt: 1,
      retryPolicy: { maxAttempts: 7, initialBackoffMs: 300 },
    });
    const gone = await begin(fireOf('never-existed', target));
    expect(gone).toMatchObject({ action: 'execute', retryPolicy: null });
  });

  it("reads the job's result_events policy with the lease, on a skip, and in an unleased record", async () => {
    await insertJob(db.pool, 're-fail', target, { ...quickRetry(), resultEvents: 'FAILURES' });
    await insertJob(db.pool, 're-none', target, { ...quickRetry(), resultEvents: 'NONE' });
    await insertJob(db.pool, 're-all', target);
    const started = await begin(fireOf('re-fail', target));
    expect(started).toMatchObject({ action: 'execute', resultEvents: 'FAILURES' });
    expect(await begin(fireOf('re-all', target))).not.toHaveProperty('resultEvents');
    // A skipped delivery (the run leased elsewhere) carries it too, for a re-published result.
    expect(await begin(fireOf('re-fail', target), 'exec-b')).toMatchObject({
      action: 'skip',
      reason: 'LEASE_HELD',
      resultEvents: 'FAILURES',
    });
    // An unleased record reads it in its insert; a job gone meanwhile reads as none (ALL).
    const unleased = (jobId: string) => ({
      fire: fireOf(jobId, target, { fenceToken: 2 }),
      owner: 'exec-a',
      durationMs: 3,
      httpStatus: null,
      leaseToken: issueLeaseToken(newLeaseIssuer()),
    });
    const recorded = await runs.recordUnleasedRuns([
      unleased('re-none'),
      unleased('re-all'),
      unleased('re-gone'),
    ]);
    expect(recorded.map((r) => r?.resultEvents)).toEqual(['NONE', undefined, undefined]);
    expect(recorded.every((r) => r !== null)).toBe(true);
    // Tried again after a lost answer, the row it stored reads the policy the same way.
    const own = { ...unleased('re-none'), fire: fireOf('re-none', target, { fenceToken: 3 }) };
    await runs.recordUnleasedRuns([own]);
    expect((await runs.recordUnleasedRuns([{ ...own, retried: true }]))[0]).toMatchObject({
      resultEvents: 'NONE',
    });
  });

  it('lets only a later attempt take a RETRYING run, and hands the retry off once', async () => {
    await insertJob(db.pool, 'retry-1', target);
    const fire = fireOf('retry-1', target);
    const a1 = await begin(fire);
    if (a1.action !== 'execute') throw new Error('expected execute');
    const notBefore = new Date(Date.now() + 5_000);
    expect(
      await runs.completeRun(fire, a1.leaseToken, {
        status: 'RETRYING',
        httpStatus: 503,
        error: 'HTTP 503',
        nextAttemptAt: notBefore,
      }),
    ).not.toBeNull();

    // A re-delivery of attempt 1 sees the retry scheduled, not yet handed off.
    const dup = await begin(fire, 'exec-b');
    expect(dup).toMatchObject({ action: 'skip', reason: 'RETRY_SCHEDULED', status: 'RETRYING' });
    if (dup.action !== 'skip') throw new Error('expected skip');
    expect(dup.run).toMatchObject({ attempt: 1, handedOffAt: null, error: 'HTTP 503' });
    expect(dup.run?.nextAttemptAt?.getTime()).toBe(notBefore.getTime());

    await runs.markHandedOff(fire, 'RETRYING', 1);
    const dup2 = await begin(fire, 'exec-b');
    if (dup2.action !== 'skip') throw new Error('expected skip');
    expect(dup2.run?.handedOffAt).toBeInstanceOf(Date);

    // Attempt 2 takes it, with a fresh lease; the old token is fenced out.
    const a2 = await begin({ ...fire, attempt: 2 }, 'exec-c');
    expect(a2).toMatchObject({ action: 'execute', takenOver: true, attempt: 2 });
    if (a2.action !== 'execute') throw new Error('expected execute');
    expect(
      await runs.completeRun(fire, a1.leaseToken, { status: 'SUCCEEDED', httpStatus: 200, error: null }),
    ).toBeNull();
    expect(await begin({ ...fire, attempt: 2 }, 'exec-d')).toMatchObject({
      action: 'skip',
      reason: 'LEASE_HELD',
    });
    expect(
      await runs.completeRun(fire, a2.leaseToken, { status: 'SUCCEEDED', httpStatus: 200, error: null }),
    ).not.toBeNull();
    const row = await runs.findRunState(fire);
    expect(row).toMatchObject({
      status: 'SUCCEEDED',
      attempt: 2,
      httpStatus: 200,
      nextAttemptAt: null,
      leaseRemainingMs: 0,
    });
  });

  it('a takeover of an expired lease keeps the highest attempt', async () => {
    await insertJob(db.pool, 'takeover-1', target);
    const fire = fireOf('takeover-1', target);
    const a = await begin({ ...fire, attempt: 3 }, 'exec-a', 1_000);
    if (a.action !== 'execute') throw new Error('expected execute');
    const held = await begin(fire, 'exec-b');
    if (held.action !== 'skip') throw new Error('expected skip');
    expect(held.reason).toBe('LEASE_HELD');
    expect(held.run!.leaseRemainingMs).toBeGreaterThan(0);
    expect(held.run!.leaseRemainingMs).toBeLessThanOrEqual(1_000);
    await db.pool.query(
      `UPDATE job_runs SET lease_expires_at = now() - interval '1 ms' WHERE job_id = 'takeover-1'`,
    );
    expect(await begin(fire, 'exec-b')).toMatchObject({ action: 'execute', takenOver: true, attempt: 3 });
  });

  it('releases a lease early so the next delivery takes the run at once', async () => {
    await insertJob(db.pool, 'release-1', target);
    const fire = fireOf('release-1', target);
    const a = await begin(fire, 'exec-a', 60_000);
    if (a.action !== 'execute') throw new Error('expected execute');
    expect(await begin(fire, 'exec-b')).toMatchObject({ action: 'skip', reason: 'LEASE_HELD' });
    await runs.releaseRun(fire, a.leaseToken);
    expect(await begin(fire, 'exec-b')).toMatchObject({ action: 'execute', takenOver: true });
    expect(await runs.heartbeat(fire, a.leaseToken, 60_000)).toBe(false);
  });

  it('purges finished runs past the retention in batches, never live ones, skipping locked rows', async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `purge-${i}`);
    for (const id of ids) {
      const f = fireOf(id, target);
      const s = await begin(f);
      if (s.action !== 'execute') throw new Error('expected execute');
      await runs.completeRun(f, s.leaseToken, {
        status: i(id) % 5 === 0 ? 'DEAD_LETTERED' : 'SUCCEEDED',
        httpStatus: 200,
        error: null,
      });
    }
    // Two old runs still in flight must survive; so must recent finished ones.
    for (const id of ['purge-live-1', 'purge-live-2']) await begin(fireOf(id, target));
    await db.pool.query(
      `UPDATE job_runs SET created_at = now() - interval '2 days' WHERE job_id LIKE 'purge-%'`,
    );
    await begin(fireOf('purge-recent', target)).then(async (s) => {
      if (s.action === 'execute')
        await runs.completeRun(fireOf('purge-recent', target), s.leaseToken, {
          status: 'SUCCEEDED',
          httpStatus: 200,
          error: null,
        });
    });

    // A transaction of the hot path holds one old finished row: the purge skips it instead of waiting.
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM job_runs WHERE job_id = 'purge-3' FOR UPDATE`);
      const started = Date.now();
      const first = await runs.purgeFinishedRuns(86_400_000, 10);
      expect(first).toBe(10);
      let total = first;
      for (let n = first; n === 10; total += n) n = await runs.purgeFinishedRuns(86_400_000, 10);
      expect(Date.now() - started).toBeLessThan(1_500); // lock_timeout is 2 s: it never waited on the row
      expect(total).toBe(24);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    const left = await db.pool.query<{ job_id: string; status: string }>(
      `SELECT job_id, status FROM job_runs WHERE job_id LIKE 'purge-%' ORDER BY job_id`,
    );
    expect(left.rows).toEqual([
      { job_id: 'purge-3', status: 'SUCCEEDED' },
      { job_id: 'purge-live-1', status: 'RUNNING' },
      { job_id: 'purge-live-2', status: 'RUNNING' },
      { job_id: 'purge-recent', status: 'SUCCEEDED' },
    ]);
    expect(await runs.purgeFinishedRuns(86_400_000, 10)).toBe(1);
  });
});

function i(id: string): number {
  return Number(id.split('-')[1]);
}

describe('batched ledger writes', () => {
  let db: TestDatabase;
  let runs: RunRepository;
  const target = webhook('https://example.com/hook');

  beforeAll(async () => {
    db = await testDatabase('execbatch');
    runs = new RunRepository(db.pool);
  });
  afterAll(async () => db?.close());

  it('begins many runs in one statement, in input order, a fire twice in one batch only once', async () => {
    await insertJob(db.pool, 'b-1', target, quickRetry({ maxAttempts: 9 }));
    const already = fireOf('b-2', target);
    const s = await runs.beginRun(already, 'other', 30_000);
    if (s.action !== 'execute') throw new Error('expected execute');
    await runs.completeRun(already, s.leaseToken, { status: 'SUCCEEDED', httpStatus: 200, error: null });

    const f1 = fireOf('b-1', target);
    const starts = await runs.beginRuns([f1, already, fireOf('b-3', target), f1], 'me', 30_000);
    expect(starts.map((x) => x.action)).toEqual(['execute', 'skip', 'execute', 'skip']);
    expect(starts[0]).toMatchObject({ retryPolicy: { maxAttempts: 9 } });
    expect(starts[1]).toMatchObject({ reason: 'ALREADY_FINAL', status: 'SUCCEEDED' });
    expect(starts[2]).toMatchObject({ retryPolicy: null });
    expect(starts[3]).toMatchObject({ reason: 'LEASE_HELD' });
  });

  it('completes many runs in one statement, fencing out the stale tokens only', async () => {
    const a = fireOf('c-1', target);
    const b = fireOf('c-2', target);
    const [sa, sb] = await runs.beginRuns([a, b], 'me', 30_000);
    if (sa?.action !== 'execute' || sb?.action !== 'execute') throw new Error('expected execute');
    const ok = await runs.completeRuns([
      { key: a, leaseToken: sa.leaseToken, outcome: { status: 'SUCCEEDED', httpStatus: 200, error: null } },
      {
        key: b,
        leaseToken: '00000000-0000-0000-0000-000000000000',
        outcome: { status: 'SUCCEEDED', httpStatus: 200, error: null },
      },
      {
        key: b,
        leaseToken: sb.leaseToken,
        outcome: { status: 'RETRYING', httpStatus: 503, error: 'HTTP 503', nextAttemptAt: new Date() },
      },
    ]);
    expect(ok.map(Boolean)).toEqual([true, false, true]);
    expect((await runs.findRunState(b))?.status).toBe('RETRYING');
    // Each recorded completion answers with the run's times as the ledger stored them.
    for (const [key, answer] of [
      [a, ok[0]],
      [b, ok[2]],
    ] as const) {
      const stored = await runs.findRun(key);
      expect(answer).toEqual({ startedAt: stored!.startedAt, finishedAt: stored!.finishedAt });
    }
  });
});

describe('ledger writes tried again after their answer was lost', () => {
  let db: TestDatabase;
  let runs: RunRepository;
  const target = webhook('https://example.com/hook');
  const me = newLeaseIssuer();
  const done = { status: 'SUCCEEDED', httpStatus: 200, error: null } as const;

  beforeAll(async () => {
    db = await testDatabase('execretried');
    runs = new RunRepository(db.pool);
  });
  afterAll(async () => db?.close());

  const tokenOf = async (fire: FireEvent) =>
    (
      await db.pool.query<{ t: string }>('SELECT lease_token::text AS t FROM job_runs WHERE job_id = $1', [
        fire.jobId,
      ])
    ).rows[0]?.t;

  it('beginRun under a token: a retry of an insert that committed proceeds under the same lease', async () => {
    const fire = fireOf('lost-begin', target);
    const token = issueLeaseToken(me);
    expect(await runs.beginRun(fire, 'exec-a', 30_000, token)).toMatchObject({
      action: 'execute',
      leaseToken: token,
    });
    // The answer was lost; the executor tries again with the same token: no wait for its own lease.
    expect(await runs.beginRun(fire, 'exec-a', 30_000, token)).toMatchObject({
      action: 'execute',
      leaseToken: token,
    });
    expect(await tokenOf(fire)).toBe(token);
    expect(await runs.completeRun(fire, token, done)).not.toBeNull();
  });

  it("takes back at once a live lease its own issuer gave up; another issuer's live lease is left alone", async () => {
    const fire = fireOf('given-up', target);
    const abandoned = issueLeaseToken(me);
    expect(await runs.beginRun(fire, 'exec-a', 30_000, abandoned)).toMatchObject({ action: 'execute' });

    const other = newLeaseIssuer();
    const theirs = await runs.beginRun(fire, 'exec-b', 30_000, issueLeaseToken(other));
    expect(theirs).toMatchObject({ action: 'skip', reason: 'LEASE_HELD', status: 'RUNNING' });
    if (theirs.action !== 'skip') throw new Error('expected skip');
    expect(theirs.run?.leaseRemainingMs).toBeGreaterThan(25_000);

    const again = issueLeaseToken(me);
    expect(await runs.beginRun(fire, 'exec-a', 30_000, again)).toMatchObject({
      action: 'execute',
      leaseToken: again,
      takenOver: true,
    });
    // The given-up lease is fenced out; the new one records.
    expect(await runs.completeRun(fire, abandoned, { ...done, retried: true })).toBeNull();
    expect(await runs.completeRun(fire, again, done)).not.toBeNull();
  });

  it('a retried completeRun recognises its own committed write; nothing else passes', async () => {
    const fire = fireOf('lost-complete', target);
    const token = issueLeaseToken(me);
    await runs.beginRun(fire, 'exec-a', 30_000, token);
    const retrying = {
      status: 'RETRYING',
      httpStatus: 503,
      error: 'HTTP 503',
      nextAttemptAt: new Date(Date.now() + 60_000),
    } as const;
    expect(await runs.completeRun(fire, token, retrying)).not.toBeNull();
    await runs.markHandedOff(fire, 'RETRYING', 1);
    // Tried again after the answer was lost: recorded, and the hand-off mark left as it was.
    expect(await runs.completeRun(fire, token, { ...retrying, retried: true })).not.toBeNull();
    expect((await runs.findRunState(fire))?.handedOffAt).not.toBeNull();
    // Not a retry, another status, or another lease: fenced out as before.
    expect(await runs.completeRun(fire, token, retrying)).toBeNull();
    expect(await runs.completeRun(fire, token, { ...done, retried: true })).toBeNull();
    expect(await runs.completeRun(fire, issueLeaseToken(me), { ...retrying, retried: true })).toBeNull();
  });

  it('a retried unleased record recognises the row it stored; a concurrent delivery’s row is not its own', async () => {
    await insertJob(db.pool, 'lost-record', target);
    const fire = fireOf('lost-record', target);
    const run = { fire, owner: 'exec-a', durationMs: 4, httpStatus: null, leaseToken: issueLeaseToken(me) };
    expect((await runs.recordUnleasedRuns([run])).map(Boolean)).toEqual([true]);
    expect((await runs.recordUnleasedRuns([{ ...run, retried: true }])).map(Boolean)).toEqual([true]);
    expect((await runs.recordUnleasedRuns([run])).map(Boolean)).toEqual([false]);
    expect(
      (
        await runs.recordUnleasedRuns([
          { ...run, owner: 'exec-b', leaseToken: issueLeaseToken(newLeaseIssuer()), retried: true },
        ])
      ).map(Boolean),
    ).toEqual([false]);
    // A batch mixing a retried record with a fresh one answers each.
    const fresh = {
      ...run,
      fire: fireOf('lost-record', target, { fenceToken: 2 }),
      leaseToken: issueLeaseToken(me),
    };
    expect((await runs.recordUnleasedRuns([{ ...run, retried: true }, fresh])).map(Boolean)).toEqual([
      true,
      true,
    ]);
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM job_runs WHERE job_id = 'lost-record' AND status = 'SUCCEEDED'`,
    );
    expect(rows[0]!.n).toBe(2);
  });
});
