/**
 * The PostgreSQL databases the suite owns (bench_suite_*): created fresh for a contender and
 * dropped after it. Only names with this prefix are ever dropped.
 */
import { createPool, ensureDatabase } from '@tickwork/store';
import { config } from './config';

const PREFIX = 'bench_suite_';

export function databaseUrl(name: string): string {
  return config.adminDatabaseUrl.replace(/\/[^/]*$/, `/${PREFIX}${name}`);
}

/** Drops (if left over from an aborted run) and creates `bench_suite_<name>`; returns its URL. */
export async function freshDatabase(name: string): Promise<string> {
  await dropDatabase(name);
  const url = databaseUrl(name);
  await ensureDatabase(url);
  return url;
}

export async function dropDatabase(name: string): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`unexpected database name ${name}`);
  const admin = createPool(config.adminDatabaseUrl, { max: 1 });
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${PREFIX}${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** The PostgreSQL durability every PostgreSQL-backed figure carries. */
export async function postgresDurability(url: string): Promise<string> {
  const pool = createPool(url, { max: 1 });
  try {
    const { rows } = await pool.query<{ v: string; sc: string; fs: string }>(
      `SELECT current_setting('server_version') AS v, current_setting('synchronous_commit') AS sc, current_setting('fsync') AS fs`,
    );
    const r = rows[0]!;
    return `PostgreSQL ${r.v}: synchronous_commit ${r.sc}, fsync ${r.fs}`;
  } finally {
    await pool.end();
  }
}

/** What the suite did to PostgreSQL's autovacuum, for the results: its setting, and why. */
export interface AutovacuumNote {
  readonly during: 'on' | 'off';
  readonly note: string;
  /** Puts the server's setting back as it was (a no-op when the suite changed nothing). */
  readonly restore: () => Promise<void>;
}

/**
 * Runs PostgreSQL with autovacuum on, as every production server does (it is PostgreSQL's
 * default). A box whose configuration turns it off (this one's CI config does) leaves tables
 * without statistics: the planner then misjudges a queue's fetch query, and with JIT on (also the
 * default) Graphile Worker spent 50–85 CPU-s of PostgreSQL per 100k jobs instead of ~8.
 * Set with ALTER SYSTEM and a reload, and set back afterwards (as BullMQ's AOF is).
 */
export async function ensureAutovacuum(enable: boolean): Promise<AutovacuumNote> {
  const admin = createPool(config.adminDatabaseUrl, { max: 1 });
  try {
    const { rows } = await admin.query<{ setting: string; sourcefile: string | null; jit: string }>(
      `SELECT setting, sourcefile, current_setting('jit') AS jit FROM pg_settings WHERE name = 'autovacuum'`,
    );
    const was = rows[0]!.setting === 'on' ? 'on' : 'off';
    const jit = `JIT ${rows[0]!.jit}`;
    if (was === 'on' || !enable)
      return {
        during: was,
        note: `autovacuum ${was}${was === 'off' ? ' (as this server is configured; BENCH_PG_AUTOVACUUM=0)' : ''}, ${jit}`,
        restore: async () => {},
      };
    // A value set by an earlier ALTER SYSTEM is put back as it was; otherwise the override goes.
    const viaAlterSystem = rows[0]!.sourcefile?.endsWith('postgresql.auto.conf') ?? false;
    await admin.query(`ALTER SYSTEM SET autovacuum = on`);
    await admin.query(`SELECT pg_reload_conf()`);
    return {
      during: 'on',
      note: `autovacuum on (PostgreSQL's default; this server's configuration turns it off, so the suite turned it on for its run and back off after), ${jit}`,
      restore: async () => {
        const pool = createPool(config.adminDatabaseUrl, { max: 1 });
        try {
          await pool.query(
            viaAlterSystem ? `ALTER SYSTEM SET autovacuum = off` : `ALTER SYSTEM RESET autovacuum`,
          );
          await pool.query(`SELECT pg_reload_conf()`);
        } finally {
          await pool.end();
        }
      },
    };
  } finally {
    await admin.end();
  }
}
