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

/** Opens a pool whose sessions carry Tickwork's timeouts, with JIT compilation off. */
export function createPool(databaseUrl: string, opts: PoolOptions = {}): Pool {
  const settings = [
    `-c idle_in_transaction_session_timeout=${opts.idleInTransactionTimeoutMs ?? 10_000}`,
    `-c lock_timeout=${opts.lockTimeoutMs ?? 5_000}`,
    `-c statement_timeout=${opts.statementTimeoutMs ?? 30_000}`,
    // Every statement of ours is short OLTP work, which JIT compilation only slows: on a server
    // with PostgreSQL's default jit=on, the claim's due read (costed high for its per-row
    // subplans) was compiled on every call, 870 ms of LLVM work for a statement that runs in
    // ~40 ms (auto_explain, bench:scheduler: 11,000 claimed fires/s with it, against ~22,000).
    '-c jit=off',
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
  // Errors of this short-lived session surface through its queries; the event must not crash start-up.
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) {
      await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`).catch((e: { code?: string }) => {
        // Created by a concurrent starter: 42P04 once it committed; 23505 (pg_database's unique
        // index) when both CREATE DATABASE statements ran at the same moment.
        if (e.code !== '42P04' && e.code !== '23505') throw e;
      });
    }
  } finally {
    await admin.end();
  }
}

/**
 * Runs `work` in a transaction, rolling back on any error. A session the server ends meanwhile
 * (idle-in-transaction timeout, restart, terminated backend) rejects with that error (its `code`
 * kept, see `isSessionLoss`), and its connection is discarded rather than returned to the pool.
 */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  const session = watchCheckedOut(client);
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (e) {
    // A connection that cannot even roll back is discarded rather than returned to the pool.
    if (session.lost === undefined) await client.query('ROLLBACK').catch(() => (broken = true));
    // The server's own reason (it has a SQLSTATE) beats the "not queryable" a later statement got.
    throw session.lost !== undefined && !hasCode(e) ? session.lost : e;
  } finally {
    session.release(broken);
  }
}

/**
 * Listens for the errors of a checked-out client until it is released. pg-pool removes its idle
 * listener while a client is checked out, and pg emits 'error' when the server ends the session
 * between statements: with no listener, that event would crash the process.
 */
export function watchCheckedOut(client: PoolClient): {
  readonly lost: Error | undefined;
  /** Gives the client back; a lost or broken one is discarded. */
  release(broken?: boolean): void;
} {
  let lost: Error | undefined;
  const onError = (e: Error) => {
    lost ??= e;
  };
  client.on('error', onError);
  return {
    get lost() {
      return lost;
    },
    release(broken = false) {
      client.removeListener('error', onError);
      // pg-pool re-attaches its idle listener here, so a later error is still handled.
      client.release(lost ?? (broken ? new Error('connection could not roll back') : undefined));
    },
  };
}

function hasCode(e: unknown): boolean {
  return typeof (e as { code?: unknown } | null)?.code === 'string';
}

/** SQLSTATEs of a session the server ended (its transaction is gone) or could not start. */
const SESSION_LOSS_CODES = new Set(['25P03', '57P01', '57P02', '57P03', '57P05']);

/**
 * Whether an error means the database session was lost (ended by the server, or the connection
 * broke) rather than that a statement failed: the work can go on with a new session.
 */
export function isSessionLoss(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown } | null;
  if (!err || typeof err !== 'object') return false;
  const code = typeof err.code === 'string' ? err.code : '';
  if (SESSION_LOSS_CODES.has(code) || code.startsWith('08')) return true;
  if (['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH'].includes(code))
    return true;
  const message = typeof err.message === 'string' ? err.message : '';
  return /Connection terminated|not queryable|connection error|Client was closed/i.test(message);
}
