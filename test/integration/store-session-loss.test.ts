/**
 * A transaction whose database session the server ends while it is checked out (idle in
 * transaction past the timeout, or terminated by an administrator) fails as a rejected promise:
 * no unhandled 'error' event takes the process down, and the pool serves the next transaction.
 */
import { createPool, inTransaction, isSessionLoss, type Pool } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';
import { eventually } from '../support/env';

describe('a lost database session inside a transaction', () => {
  let db: TestDatabase;
  let pool: Pool;
  const uncaught: unknown[] = [];
  const onUncaught = (e: unknown) => uncaught.push(e);

  beforeAll(async () => {
    db = await testDatabase('sessionloss');
  });

  beforeEach(() => {
    uncaught.length = 0;
    // An unhandled 'error' event is thrown from the socket's data handler: catch it here so the
    // test can assert there was none (instead of the worker dying with it).
    process.on('uncaughtException', onUncaught);
  });

  afterEach(async () => {
    process.removeListener('uncaughtException', onUncaught);
    await pool?.end();
  });

  afterAll(async () => {
    await db.close();
  });

  /** True once PostgreSQL no longer lists the backend. */
  const gone = (pid: number) =>
    eventually(`backend ${pid} to end`, async () => {
      const { rows } = await db.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
      return rows.length === 0 ? true : undefined;
    });

  /** Runs a transaction that waits (idle in it) until `kill` has ended its session. */
  const transactionKilledBy = (kill: (pid: number) => Promise<void>) =>
    inTransaction(pool, async (client) => {
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const pid = rows[0]!.pid;
      await kill(pid);
      await gone(pid);
      // Let the client read the server's goodbye (FATAL + end of stream) before the next statement.
      await new Promise((r) => setTimeout(r, 200));
      await client.query('SELECT 2');
      return 'committed';
    }).then(
      (v) => ({ ok: true as const, v }),
      (e: unknown) => ({ ok: false as const, e: e as Error & { code?: string } }),
    );

  it('idle in transaction past the timeout: the transaction rejects, no unhandled error, the pool goes on', async () => {
    pool = createPool(db.iso.databaseUrl, { max: 2, idleInTransactionTimeoutMs: 300 });
    const result = await transactionKilledBy(async () => {
      // The server's timeout does the killing.
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.e.message).toMatch(/idle-in-transaction timeout|terminat/i);
    expect(result.e.code).toBe('25P03');
    expect(isSessionLoss(result.e)).toBe(true);
    expect(uncaught).toEqual([]);
    // The broken connection was discarded, and the pool serves the next transaction.
    await expect(inTransaction(pool, async (c) => (await c.query('SELECT 42 AS n')).rows[0].n)).resolves.toBe(
      42,
    );
    expect(pool.totalCount).toBeLessThanOrEqual(1);
  });

  it('session terminated by pg_terminate_backend: the transaction rejects, no unhandled error, the pool goes on', async () => {
    pool = createPool(db.iso.databaseUrl, { max: 2 });
    const result = await transactionKilledBy(async (pid) => {
      await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.e.code).toBe('57P01');
    expect(isSessionLoss(result.e)).toBe(true);
    expect(uncaught).toEqual([]);
    await expect(inTransaction(pool, async (c) => (await c.query('SELECT 7 AS n')).rows[0].n)).resolves.toBe(
      7,
    );
  });

  it('session terminated while a statement runs: the statement rejects, no unhandled error', async () => {
    pool = createPool(db.iso.databaseUrl, { max: 2 });
    const failed = await inTransaction(pool, async (c) => {
      const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      setTimeout(() => void db.pool.query('SELECT pg_terminate_backend($1)', [pid]), 200);
      await c.query('SELECT pg_sleep(5)');
    }).catch((e: unknown) => e);
    expect(isSessionLoss(failed)).toBe(true);
    // The end of the stream comes after the statement's error: it must find a listener too.
    await new Promise((r) => setTimeout(r, 300));
    expect(uncaught).toEqual([]);
    await expect(inTransaction(pool, async (c) => (await c.query('SELECT 3 AS n')).rows[0].n)).resolves.toBe(
      3,
    );
  });

  it('a statement error is not mistaken for a lost session, and the connection is kept', async () => {
    pool = createPool(db.iso.databaseUrl, { max: 1 });
    const failed = await inTransaction(pool, async (c) => c.query('SELECT 1/0')).catch((e: unknown) => e);
    expect((failed as { code?: string }).code).toBe('22012');
    expect(isSessionLoss(failed)).toBe(false);
    expect(uncaught).toEqual([]);
    await expect(inTransaction(pool, async (c) => (await c.query('SELECT 1 AS n')).rows[0].n)).resolves.toBe(
      1,
    );
  });
});
