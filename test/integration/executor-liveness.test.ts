/**
 * Executor liveness against real PostgreSQL: a run leased by a process that stopped beating is
 * taken over once it has been silent for the dead-holder limit while another process beat without
 * a break; never while its holder beats, never for a holder that has no beat row, and never when
 * everyone fell silent together (a database outage), until the witnesses have beaten long enough
 * again.
 */
import { issueLeaseToken, newLeaseIssuer } from '@tickwork/execution';
import { ExecutorLivenessRepository, RunRepository, type RunStart } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';
import { fireOf, insertJob, webhook } from '../e2e/executor-harness';

const DEAD_AFTER_MS = 5_000;
const CONTINUITY_MS = 2_500;

describe('executor liveness and the takeover of a dead holder’s runs', () => {
  let db: TestDatabase;
  let runs: RunRepository;
  let liveness: ExecutorLivenessRepository;
  const target = webhook('https://example.com/hook');
  let n = 0;

  beforeAll(async () => {
    db = await testDatabase('execliveness');
    runs = new RunRepository(db.pool, { deadAfterMs: DEAD_AFTER_MS, witnessFreshMs: 2_500 });
    liveness = new ExecutorLivenessRepository(db.pool);
  });
  afterAll(async () => db?.close());
  beforeEach(async () => {
    await db.pool.query('DELETE FROM executor_liveness');
  });

  /** Moves a process's beats into the past: its last beat `silentMs` ago, unbroken since `sinceMs` ago. */
  const age = async (issuer: string, silentMs: number, sinceMs = silentMs + 60_000) => {
    await db.pool.query(
      `UPDATE executor_liveness
          SET beat_at = now() - make_interval(secs => $2::double precision / 1000),
              live_since = now() - make_interval(secs => $3::double precision / 1000)
        WHERE issuer = $1`,
      [issuer, silentMs, sinceMs],
    );
  };

  /** A fire leased by `holder` (its issuer), and the lease token. */
  const leasedBy = async (holder: string) => {
    const jobId = `live-${++n}`;
    await insertJob(db.pool, jobId, target);
    const fire = fireOf(jobId, target);
    const start = await runs.beginRun(fire, 'exec-holder', 30_000, issueLeaseToken(holder));
    expect(start.action).toBe('execute');
    return fire;
  };

  const takeOver = (fire: ReturnType<typeof fireOf>, taker: string): Promise<RunStart> =>
    runs.beginRun(fire, 'exec-taker', 30_000, issueLeaseToken(taker));

  it('takes over the run of a holder silent past the limit while a witness beat without a break', async () => {
    const holder = newLeaseIssuer();
    const taker = newLeaseIssuer();
    await liveness.beat(holder, 'exec-holder', CONTINUITY_MS);
    await liveness.beat(taker, 'exec-taker', CONTINUITY_MS);
    const fire = await leasedBy(holder);
    expect(await takeOver(fire, taker)).toMatchObject({ action: 'skip', reason: 'LEASE_HELD' });

    await age(holder, DEAD_AFTER_MS + 500);
    await age(taker, 0);
    const start = await takeOver(fire, taker);
    expect(start).toMatchObject({ action: 'execute', takenOver: true });
    // The holder's token is fenced out: its late outcome is not recorded.
    const row = await db.pool.query<{ lease_owner: string }>(
      'SELECT lease_owner FROM job_runs WHERE job_id = $1',
      [fire.jobId],
    );
    expect(row.rows[0]?.lease_owner).toBe('exec-taker');
  });

  it('leaves the run of a holder that beats, or that was silent for less than the limit', async () => {
    const holder = newLeaseIssuer();
    const taker = newLeaseIssuer();
    await liveness.beat(holder, 'exec-holder', CONTINUITY_MS);
    await liveness.beat(taker, 'exec-taker', CONTINUITY_MS);
    await age(taker, 0);
    const fire = await leasedBy(holder);
    await age(holder, DEAD_AFTER_MS - 1_500);
    expect(await takeOver(fire, taker)).toMatchObject({ action: 'skip', reason: 'LEASE_HELD' });
  });

  it('never judges a holder with no beat row (an executor that does not beat) dead', async () => {
    const holder = newLeaseIssuer();
    const taker = newLeaseIssuer();
    await liveness.beat(taker, 'exec-taker', CONTINUITY_MS);
    await age(taker, 0);
    const fire = await leasedBy(holder);
    expect(await takeOver(fire, taker)).toMatchObject({ action: 'skip', reason: 'LEASE_HELD' });
  });

  it('after a database outage (everyone silent together) waits until a witness has beaten for the limit again', async () => {
    const holder = newLeaseIssuer();
    const witness = newLeaseIssuer();
    await liveness.beat(holder, 'exec-holder', CONTINUITY_MS);
    await liveness.beat(witness, 'exec-witness', CONTINUITY_MS);
    const fire = await leasedBy(holder);
    // Both beat last 8 s ago (the outage), then the witness beat again just now: its unbroken run
    // starts now, so the holder's silence is not yet its own.
    await age(holder, 8_000);
    await age(witness, 8_000);
    await liveness.beat(witness, 'exec-witness', CONTINUITY_MS);
    const since = await db.pool.query<{ fresh: boolean }>(
      `SELECT live_since > now() - interval '1 second' AS fresh FROM executor_liveness WHERE issuer = $1`,
      [witness],
    );
    expect(since.rows[0]?.fresh).toBe(true);
    expect(await takeOver(fire, witness)).toMatchObject({ action: 'skip', reason: 'LEASE_HELD' });
    // The witness has now beaten without a break for longer than the limit; the holder has not.
    await age(witness, 0, DEAD_AFTER_MS + 500);
    expect(await takeOver(fire, witness)).toMatchObject({ action: 'execute', takenOver: true });
  });

  it('a witness that stopped beating itself proves nothing', async () => {
    const holder = newLeaseIssuer();
    const witness = newLeaseIssuer();
    const taker = newLeaseIssuer();
    await liveness.beat(holder, 'exec-holder', CONTINUITY_MS);
    await liveness.beat(witness, 'exec-witness', CONTINUITY_MS);
    const fire = await leasedBy(holder);
    await age(holder, DEAD_AFTER_MS + 3_000);
    await age(witness, 3_000);
    // The taker has no row: only the stale witness could vouch, and it is not beating now.
    expect(await takeOver(fire, taker)).toMatchObject({ action: 'skip', reason: 'LEASE_HELD' });
  });

  it('keeps a process’s unbroken run across beats on time and restarts it after a gap; retire and forget remove rows', async () => {
    const a = newLeaseIssuer();
    await liveness.beat(a, 'exec-a', CONTINUITY_MS);
    await age(a, 1_000, 30_000);
    await liveness.beat(a, 'exec-a', CONTINUITY_MS);
    const kept = await db.pool.query<{ s: number }>(
      `SELECT EXTRACT(EPOCH FROM now() - live_since)::float8 AS s FROM executor_liveness WHERE issuer = $1`,
      [a],
    );
    expect(kept.rows[0]!.s).toBeGreaterThan(29);
    await age(a, CONTINUITY_MS + 1_000, 30_000);
    await liveness.beat(a, 'exec-a', CONTINUITY_MS);
    const restarted = await db.pool.query<{ s: number }>(
      `SELECT EXTRACT(EPOCH FROM now() - live_since)::float8 AS s FROM executor_liveness WHERE issuer = $1`,
      [a],
    );
    expect(restarted.rows[0]!.s).toBeLessThan(1);

    const b = newLeaseIssuer();
    await liveness.beat(b, 'exec-b', CONTINUITY_MS);
    await age(b, 7_200_000);
    expect(await liveness.forgetSilent(3_600_000)).toBe(1);
    await liveness.retire(a);
    const left = await db.pool.query('SELECT 1 FROM executor_liveness');
    expect(left.rowCount).toBe(0);
  });
});
