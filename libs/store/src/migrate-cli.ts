/** `npm run migrate`: creates the database if needed and applies pending migrations. */
import { loadConfig } from '@tickwork/config';
import { createPool, ensureDatabase } from './database';
import { migrate } from './migrate';

async function main(): Promise<void> {
  const config = loadConfig();
  await ensureDatabase(config.databaseUrl);
  const pool = createPool(config.databaseUrl);
  try {
    const applied = await migrate(pool);
    console.log(applied.length ? `applied migrations ${applied.join(', ')}` : 'database is up to date');
  } finally {
    await pool.end();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
