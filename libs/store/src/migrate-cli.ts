/**
 * `npm run migrate`: creates the databases if needed and applies pending migrations: DATABASE_URL
 * and every database of the shard map (TICKWORK_STORE_SHARDS).
 */
import { databaseIdentity, loadConfig } from '@tickwork/config';
import { createPool, ensureDatabase } from './database';
import { migrate } from './migrate';

async function main(): Promise<void> {
  const config = loadConfig();
  const urls = new Map([[databaseIdentity(config.databaseUrl), config.databaseUrl]]);
  for (const db of config.storeShards.databases) if (!urls.has(db.identity)) urls.set(db.identity, db.url);
  for (const [identity, url] of urls) {
    await ensureDatabase(url);
    const pool = createPool(url);
    try {
      const applied = await migrate(pool);
      console.log(
        `${identity}: ${applied.length ? `applied migrations ${applied.join(', ')}` : 'database is up to date'}`,
      );
    } finally {
      await pool.end();
    }
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
