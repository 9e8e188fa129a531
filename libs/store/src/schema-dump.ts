/**
 * The committed schema dump (libs/store/schema.sql): `pg_dump --schema-only` of a database that
 * has every migration applied, normalised so that it depends on the migrations alone (no server
 * or pg_dump version, owner, privilege or session setting). Review reads schema changes in it;
 * test/integration/schema-dump.test.ts fails when it is not what the migrations produce.
 */
import { execFile } from 'node:child_process';
import { Client } from 'pg';
import { createPool, ensureDatabase } from './database';
import { migrate } from './migrate';

/** The dump's path relative to the repository root. */
export const SCHEMA_DUMP_PATH = 'libs/store/schema.sql';

const HEADER = [
  '-- The PostgreSQL schema after every migration in libs/store/src/migrations (pg_dump --schema-only,',
  '-- normalised). Generated: regenerate with `npm run schema:dump`; do not edit.',
  '',
].join('\n');

/** Lines that vary with the server, the pg_dump build or the run, not with the migrations. */
const VOLATILE = [
  /^-- Dumped (from database|by pg_dump) version /,
  // pg_dump 15.14+ wraps its script in \restrict / \unrestrict with a random key.
  /^\\(un)?restrict /,
  /^SET [a-z_]+ = /,
  /^SELECT pg_catalog\.set_config\('search_path', '', false\);$/,
];

/** `pg_dump --schema-only` output, normalised: volatile lines dropped, blank runs collapsed. */
export function normaliseSchemaDump(dump: string): string {
  const kept = dump
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => !VOLATILE.some((re) => re.test(line)));
  const body = kept
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return `${HEADER}\n${body}\n`;
}

/** The normalised schema of the database at `databaseUrl` (pg_dump: `PG_DUMP`, else from PATH). */
export function dumpSchema(databaseUrl: string): Promise<string> {
  const pgDump = process.env['PG_DUMP'] ?? 'pg_dump';
  const args = [
    '--schema-only',
    '--no-owner',
    '--no-privileges',
    '--no-tablespaces',
    `--dbname=${databaseUrl}`,
  ];
  return new Promise((resolve, reject) =>
    execFile(pgDump, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err)
        reject(
          new Error(
            `${pgDump} failed (install PostgreSQL's client, e.g. apt-get install postgresql-client): ` +
              `${stderr.trim() || err.message}`,
          ),
        );
      else resolve(normaliseSchemaDump(stdout));
    }),
  );
}

/**
 * Creates a database named `databaseUrl`'s plus `suffix`, applies every migration, dumps its
 * schema and drops it again: the schema a fresh install gets.
 */
export async function dumpFreshSchema(databaseUrl: string, suffix: string): Promise<string> {
  const url = new URL(databaseUrl);
  const name = `${decodeURIComponent(url.pathname.replace(/^\//, ''))}_${suffix}`;
  url.pathname = `/${encodeURIComponent(name)}`;
  const fresh = url.toString();
  await dropDatabase(fresh);
  await ensureDatabase(fresh);
  try {
    const pool = createPool(fresh, { max: 1 });
    try {
      await migrate(pool);
    } finally {
      await pool.end();
    }
    return await dumpSchema(fresh);
  } finally {
    await dropDatabase(fresh);
  }
}

async function dropDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
