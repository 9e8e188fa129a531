/** A migrated, throwaway database for integration tests of the store. */
import { createPool, ensureDatabase, migrate, type Migration, type Pool } from '@tickwork/store';
import { isolate, type Isolation } from './env';

export interface TestDatabase {
  readonly pool: Pool;
  readonly iso: Isolation;
  close(): Promise<void>;
}

/** Creates and migrates a database of its own for one test file (to `migrations`, default all). */
export async function testDatabase(
  label: string,
  opts: { readonly migrations?: readonly Migration[] } = {},
): Promise<TestDatabase> {
  const iso = isolate(label);
  await ensureDatabase(iso.databaseUrl);
  const pool = createPool(iso.databaseUrl, { max: 8, lockTimeoutMs: 2_000 });
  await migrate(pool, opts.migrations ? [...opts.migrations] : undefined);
  return {
    pool,
    iso,
    close: async () => {
      await pool.end();
      await iso.dispose();
    },
  };
}
