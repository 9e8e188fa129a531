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

/**
 * ANALYZE of one table (statistics only) or VACUUM (ANALYZE) of the whole database (also removes
 * dead rows) in `bench_suite_<name>`, unthrottled, as autovacuum would in time; resolves with how
 * long it took once it is done.
 */
export async function maintainDatabase(name: string, what: { analyze: string } | 'VACUUM'): Promise<number> {
  const pool = createPool(databaseUrl(name), { max: 1, statementTimeoutMs: 300_000 });
  const started = Date.now();
  try {
    await pool.query(what === 'VACUUM' ? 'VACUUM (ANALYZE)' : `ANALYZE ${what.analyze}`);
    return Date.now() - started;
  } finally {
    await pool.end();
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

/** What the suite set on PostgreSQL for its run, in words for the results, and how to undo it. */
export interface ServerSettings {
  readonly note: string;
  /** Puts each setting back as it was (a no-op for those the suite did not change). */
  readonly restore: () => Promise<void>;
}

/**
 * The PostgreSQL settings the suite runs every system with:
 * - autovacuum on, PostgreSQL's default and every production server's. This box's CI config
 *   turns it off, which leaves tables without planner statistics and dead rows unvacuumed.
 * - JIT off, the usual advice for short OLTP statements. It did not remove Graphile Worker's
 *   stalls (see bench/suite/README.md), which were seen with it on and off.
 */
const SUITE_SETTINGS: readonly (readonly [name: string, value: string])[] = [
  ['autovacuum', 'on'],
  ['jit', 'off'],
];

/**
 * Applies SUITE_SETTINGS with ALTER SYSTEM and a reload (both take effect without a restart) and
 * returns how to set them back, as the suite does with Redis's AOF. `apply` false: reports them.
 */
export async function applySuiteSettings(apply: boolean): Promise<ServerSettings> {
  const admin = createPool(config.adminDatabaseUrl, { max: 1 });
  try {
    const { rows } = await admin.query<{ name: string; setting: string; sourcefile: string | null }>(
      `SELECT name, setting, sourcefile FROM pg_settings WHERE name = ANY($1::text[])`,
      [SUITE_SETTINGS.map(([name]) => name)],
    );
    const before = new Map(rows.map((r) => [r.name, r]));
    const changed = apply
      ? SUITE_SETTINGS.filter(([name, value]) => before.get(name)?.setting !== value)
      : [];
    for (const [name, value] of changed) await admin.query(`ALTER SYSTEM SET ${name} = ${value}`);
    if (changed.length > 0) await admin.query(`SELECT pg_reload_conf()`);
    const words = SUITE_SETTINGS.map(([name, value]) =>
      changed.some(([n]) => n === name)
        ? `${name} ${value} (the server has ${before.get(name)!.setting}; set for the run and back after)`
        : `${name} ${before.get(name)?.setting ?? '?'}${apply ? '' : ' (as the server is configured: BENCH_PG_SETTINGS=0)'}`,
    );
    return {
      note: words.join(', '),
      restore: async () => {
        if (changed.length === 0) return;
        const pool = createPool(config.adminDatabaseUrl, { max: 1 });
        try {
          for (const [name] of changed) {
            const was = before.get(name)!;
            // A value an earlier ALTER SYSTEM set is put back; otherwise the override goes.
            await pool.query(
              was.sourcefile?.endsWith('postgresql.auto.conf')
                ? `ALTER SYSTEM SET ${name} = ${was.setting}`
                : `ALTER SYSTEM RESET ${name}`,
            );
          }
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
