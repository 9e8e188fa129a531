/** PostgreSQL connections: pools with the timeouts a fenced scheduler needs, and database bootstrap. */
import { Client, Pool, types, type PoolClient } from 'pg';
import { parseTimestamptz } from './timestamptz';

export interface PoolOptions {
  readonly max?: number;
  /** A frozen owner must not hold locks forever: its idle transaction is killed after this. */
  readonly idleInTransactionTimeoutMs?: number;
  /** How long a statement waits for a lock before failing (e.g. a takeover behind a zombie's lock). */
  readonly lockTimeoutMs?: number;
  readonly statementTimeoutMs?: number;
  readonly applicationName?: string;
  /** Told about errors on idle connections (they are discarded either way). */
  readonly onIdleError?: (error: Error) => void;
}

// bigint columns (fence tokens, counters) fit in a double for any realistic lifetime.
const parseInt8 = (v: string): number => Number(v);
const INT8 = 20;
const TIMESTAMPTZ = 1184;
const pgTimestamptz = types.getTypeParser(TIMESTAMPTZ, 'text');
const parseTimestamptzText = (v: string) => parseTimestamptz(v, pgTimestamptz);
const typeParsers = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8
      ? parseInt8
      : oid === TIMESTAMPTZ && format !== 'binary'
        ? parseTimestamptzText
        : types.getTypeParser(oid, format as 'text')) as typeof types.getTypeParser,
};

/** Opens a pool whose sessions carry Tickwork's timeouts. */
export function createPool(databaseUrl: string, opts: PoolOptions = {}): Pool {
  const settings = [
    `-c idle_in_transaction_session_timeout=${opts.idleInTransactionTimeoutMs ?? 10_000}`,
    `-c lock_timeout=${opts.lockTimeoutMs ?? 5_000}`,
    `-c statement_timeout=${opts.statementTimeoutMs ?? 30_000}`,
  ].join(' ');
  const pool = new Pool({
    connectionString: databaseUrl,
    max: opts.max ?? 10,
    options: settings,
    application_name: opts.applicationName ?? 'tickwork',
    types: typeParsers,
  });
  // An idle connection that the server ends (restart, failover, a killed session) must not crash
  // the process: the pool drops it, and the next query opens a new one.
  pool.on('error', (e) => opts.onIdleError?.(e));
  return pool;
}

/** Creates the database named in the URL if it does not exist (connecting to the `postgres` database). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL names no database');
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) {
      await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`).catch((e: { code?: string }) => {
        if (e.code !== '42P04') throw e; // created by a concurrent starter
      });
    }
  } finally {
    await admin.end();
  }
}

/** Runs `work` in a transaction, rolling back on any error. */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (e) {
    // A connection that cannot even roll back is discarded rather than returned to the pool.
    await client.query('ROLLBACK').catch(() => (broken = true));
    throw e;
  } finally {
    client.release(broken);
  }
}
