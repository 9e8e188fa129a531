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
