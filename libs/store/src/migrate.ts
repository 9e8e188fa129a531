/**
 * Applies the numbered SQL migrations in order, each once, in its own transaction.
 * An advisory lock serialises concurrent runners, so several processes may start at once.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pool } from 'pg';
import { watchCheckedOut } from './database';

const MIGRATIONS_DIR = join(__dirname, 'migrations');
// Any constant works; it only has to be the same for every Tickwork process.
const MIGRATION_LOCK_KEY = 7_363_117;

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** The migrations shipped with this build, ordered by version. */
export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({
      version: Number(f.slice(0, 4)),
      name: f.replace(/\.sql$/, ''),
      sql: readFileSync(join(dir, f), 'utf8'),
    }));
}

/** Brings the database up to the newest migration; returns the versions it applied. */
export async function migrate(pool: Pool, migrations = listMigrations()): Promise<number[]> {
  const client = await pool.connect();
  // A session the server ends while this runs must reject the migration, not crash the process.
  const session = watchCheckedOut(client);
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map(
        (r) => r.version,
      ),
    );
    const newest = Math.max(0, ...done);
    const known = Math.max(0, ...migrations.map((m) => m.version));
    if (newest > known)
      throw new Error(`database schema is at version ${newest}, newer than this build knows (${known})`);
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          m.version,
          m.name,
        ]);
        await client.query('COMMIT');
        applied.push(m.version);
      } catch (e) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(`migration ${m.name} failed: ${(e as Error).message}`);
      }
    }
  } finally {
    const unlocked = await client
      .query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY])
      .then(() => true)
      .catch(() => false);
    // A session that cannot unlock is discarded (its advisory lock ends with it).
    session.release(!unlocked);
  }
  return applied;
}
