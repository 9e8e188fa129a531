/**
 * Start-up of the sharded schedule store: every database of the shard map created and migrated
 * like the main one, and the map checked against (or, first, recorded in) store_shards.
 */
import { databaseIdentity, STORE_SHARDS_VARIABLE, type TickworkConfig } from '@tickwork/config';
import {
  createPool,
  ensureDatabase,
  migrate,
  reconcileShardMap,
  ShardPools,
  shardsWithJobs,
  type Pool,
  type PoolOptions,
} from '@tickwork/store';

/** Collations under which PostgreSQL orders job ids as the merged pages do (by code point). */
const CODE_POINT_COLLATIONS = new Set(['C', 'POSIX', 'C.UTF-8', 'C.utf8', 'ucs_basic']);

/**
 * Opens a pool per database of the shard map (the main pool serves the database it is), migrates
 * each, and reconciles the map with store_shards in the main database. Throws, naming
 * TICKWORK_STORE_SHARDS, when the map disagrees with the recorded one.
 */
export async function openShardDatabases(
  config: TickworkConfig,
  main: Pool,
  opts: PoolOptions = {},
): Promise<ShardPools> {
  const map = config.storeShards;
  const mainIdentity = databaseIdentity(config.databaseUrl);
  const mainHoldsShards = map.databases.some((d) => d.identity === mainIdentity);
  const opened: Pool[] = [];
  try {
    for (const db of map.databases) {
      if (db.identity === mainIdentity) {
        opened.push(main);
        continue;
      }
      await ensureDatabase(db.url);
      const pool = createPool(db.url, {
        applicationName: `tickwork-${config.instanceId}`,
        idleInTransactionTimeoutMs: config.dbIdleInTransactionTimeoutMs,
        ...opts,
      });
      opened.push(pool);
      await migrate(pool);
    }
    const pools = new ShardPools(map, opened);
    if (pools.sharded) await checkCollations(pools);
    await reconcileShardMap(
      main,
      {
        databaseOfShard: map.databaseOfShard.map((i) => map.databases[i]!.identity),
        variable: STORE_SHARDS_VARIABLE,
      },
      () => strandedJobs(pools, main, !mainHoldsShards),
    );
    return pools;
  } catch (e) {
    await Promise.all(opened.filter((p) => p !== main).map((p) => p.end().catch(() => undefined)));
    throw e;
  }
}

/** Ends the shard databases' pools other than the main one (which its owner ends). */
export async function closeShardDatabases(pools: ShardPools, main: Pool): Promise<void> {
  await Promise.all(pools.databases.filter((d) => d.pool !== main).map((d) => d.pool.end()));
}

/** Jobs a database holds of shards the map puts elsewhere, described per database. */
async function strandedJobs(pools: ShardPools, main: Pool, mainHoldsNoShard: boolean): Promise<string[]> {
  const all = Array.from({ length: pools.shardCount }, (_, s) => s);
  const checks = pools.databases.map(async (d) => {
    const foreign = all.filter((s) => !d.shards.includes(s));
    const found = await shardsWithJobs(d.pool, foreign);
    return found.length > 0 ? `${d.identity} holds jobs of shards ${found.join(', ')}` : undefined;
  });
  if (mainHoldsNoShard)
    checks.push(
      shardsWithJobs(main, all).then((found) =>
        found.length > 0 ? `DATABASE_URL holds jobs of shards ${found.join(', ')}` : undefined,
      ),
    );
  return (await Promise.all(checks)).filter((x): x is string => x !== undefined);
}

/**
 * Cross-database pages merge job ids in code-point order, which is PostgreSQL's only under a
 * C-like collation: under another (en_US), a page boundary could skip or repeat jobs.
 */
async function checkCollations(pools: ShardPools): Promise<void> {
  const wrong: string[] = [];
  for (const d of pools.databases) {
    const { rows } = await d.pool.query<{ collation: string }>(
      `SELECT datcollate AS collation FROM pg_database WHERE datname = current_database()`,
    );
    const collation = rows[0]?.collation ?? '?';
    if (!CODE_POINT_COLLATIONS.has(collation)) wrong.push(`${d.identity} (${collation})`);
  }
  if (wrong.length > 0)
    throw new Error(
      `${STORE_SHARDS_VARIABLE}: a sharded store needs databases with a C collation (CREATE DATABASE … LC_COLLATE 'C' TEMPLATE template0), so job ids sort alike in every database; not: ${wrong.join(', ')}`,
    );
}
