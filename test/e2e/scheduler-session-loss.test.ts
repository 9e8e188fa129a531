/**
 * A scheduler frozen (SIGSTOP) inside a claim transaction for longer than the database's
 * idle-in-transaction timeout loses that session: on SIGCONT it must not crash, and it must be
 * claiming again within a bounded time — at once when its leases still hold, after a self-fence
 * and a rejoin of the group when they ran out while it was frozen.
 *
 * The freeze is made to land inside a transaction every round: the test takes an exclusive lock on
 * `fires` (read by the claim's second statement), waits until a claim of the scheduler is blocked
 * on it, freezes the scheduler, and releases the lock. The claim's statement then completes on the
 * server while the process cannot send the next one, and PostgreSQL ends the idle session.
 */
import type { PoolClient } from 'pg';
import { testDatabase, type TestDatabase } from '../support/db';
import { startApp, type AppProcess } from '../support/apps';
import { eventually, freePort } from '../support/env';
import { seedJobs } from '../support/seed';

const SHARDS = 4;
const IDLE_IN_TRANSACTION_MS = 1_000;
const LEASE_MS = 6_000;

describe('scheduler frozen inside a claim transaction', () => {
  let db: TestDatabase;
  let scheduler: AppProcess | undefined;

  beforeEach(async () => {
    db = await testDatabase('sessionloss');
  });

  afterEach(async () => {
    scheduler?.signal('SIGCONT');
    await scheduler?.kill();
    await db.close();
  });

  /** The scheduler's backends blocked on a lock inside a transaction of more than one statement. */
  const blockedInTransaction = async (app: string): Promise<number[]> => {
    const { rows } = await db.pool.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
        WHERE application_name = $1 AND state = 'active' AND wait_event_type = 'Lock'
          AND xact_start < query_start`,
      [app],
    );
    return rows.map((r) => r.pid);
  };

  const claimedSince = async (owner: string, since: Date): Promise<number> => {
    const { rows } = await db.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM fire_log WHERE claimed_by = $1 AND claimed_at > $2`,
      [owner, since],
    );
    return Number(rows[0]!.n);
  };

  it('survives repeated freezes past the idle-in-transaction timeout and claims again afterwards', async () => {
    const port = await freePort();
    const owner = `scheduler-${port}`;
    const app = `tickwork-${owner}`;
    scheduler = startApp(
      'scheduler',
      db.iso.env({
        TICKWORK_SHARDS: String(SHARDS),
        TICKWORK_TICK_MS: '100',
        TICKWORK_SHARD_LEASE_MS: String(LEASE_MS),
        TICKWORK_OUTBOX_RELAY_AGE_MS: '1000',
        TICKWORK_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: String(IDLE_IN_TRANSACTION_MS),
      }),
      port,
    );
    await scheduler.ready();
    const anchor = new Date(Math.ceil((Date.now() + 1_000) / 1_000) * 1_000);
    await seedJobs(db.pool, {
      prefix: 'tick',
      count: 300,
      shardCount: SHARDS,
      schedule: () => ({ kind: 'interval', everyMs: 1_000, anchor }),
      firstAt: () => anchor,
      target: { type: 'kafka', topic: `${db.iso.topicPrefix}.unused`, key: null, headers: {} },
    });
    await eventually('the scheduler to claim', async () =>
      (await claimedSince(owner, new Date(0))) > 0 ? true : undefined,
    );

    // Short freezes keep the leases (the claim lanes go on at once); long ones outlast the lease
    // and the Kafka session (the instance self-fences, rejoins and takes its shards again).
    const freezes = [2_500, LEASE_MS + 3_000, 2_500, LEASE_MS + 3_000];
    for (const [round, freezeMs] of freezes.entries()) {
      const locker: PoolClient = await db.pool.connect();
      let frozenPids: number[];
      try {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE fires IN ACCESS EXCLUSIVE MODE');
        frozenPids = await eventually(
          `round ${round}: a claim of the scheduler to block inside its transaction`,
          async () => {
            const pids = await blockedInTransaction(app);
            return pids.length > 0 ? pids : undefined;
          },
          4_000,
          20,
        );
        scheduler.signal('SIGSTOP');
      } finally {
        await locker.query('ROLLBACK');
        locker.release();
      }
      const frozenAt = Date.now();
      try {
        // Its statement completes on the server; the frozen client sends nothing more, and the
        // server ends the session once it has been idle in the transaction for the timeout.
        await eventually(
          `round ${round}: the server to end the frozen claim sessions ${frozenPids.join(', ')}`,
          async () => {
            const { rows } = await db.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1)', [
              frozenPids,
            ]);
            return rows.length === 0 ? true : undefined;
          },
          IDLE_IN_TRANSACTION_MS + 5_000,
          50,
        );
        const rest = freezeMs - (Date.now() - frozenAt);
        if (rest > 0) await new Promise((r) => setTimeout(r, rest));
      } finally {
        scheduler.signal('SIGCONT');
      }
      const wokeAt = (await db.pool.query<{ now: Date }>('SELECT now()')).rows[0]!.now;
      // Still running, and claiming again: at once with its leases, or after rejoining the group.
      const recoveredAt = await eventually(
        `round ${round}: the woken scheduler to claim again`,
        async () => {
          if (scheduler!.child.exitCode !== null || scheduler!.child.signalCode !== null)
            throw new Error(`the scheduler exited:\n${scheduler!.tail()}`);
          return (await claimedSince(owner, wokeAt)) > 0 ? Date.now() : undefined;
        },
        30_000,
        100,
      );
      if (process.env.TEST_VERBOSE)
        process.stdout.write(
          `round ${round}: freeze ${freezeMs} ms, claiming again ${recoveredAt - wokeAt.getTime()} ms after SIGCONT\n`,
        );
    }
    expect(scheduler.child.exitCode).toBeNull();
    expect(scheduler.output.filter((l) => /Unhandled 'error'|uncaught/i.test(l))).toEqual([]);
    // It said what happened: the claims' sessions were lost, and after each long freeze its leases.
    expect(scheduler.output.some((l) => /session lost|idle-in-transaction timeout/.test(l))).toBe(true);
    expect(scheduler.output.filter((l) => /lease lost/.test(l)).length).toBeGreaterThanOrEqual(2);
  }, 180_000);
});
