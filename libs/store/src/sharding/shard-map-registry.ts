/**
 * The store_shards control table in the DATABASE_URL database: seeded from the first app's shard
 * map, then the one every app's map must agree with (see migration 0030).
 */
import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '../database';

/** What an app's configuration says: each shard's database identity (host:port/name), by shard. */
export interface ConfiguredShardMap {
  /** The identity of shard i's database at index i. */
  readonly databaseOfShard: readonly string[];
  /** The variable the map came from, named in every refusal. */
  readonly variable: string;
}

/** The app's shard map differs from the one recorded: starting would route shards elsewhere. */
export class ShardMapMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ShardMapMismatchError';
  }
}

/**
 * Records the map when none is (first start), or checks it against the recorded one; throws
 * ShardMapMismatchError naming the variable and each differing shard. `strandedJobs` is asked, on
 * first seeding only, whether a database holds jobs of shards the map puts elsewhere (a map
 * introduced after jobs were stored would hide them).
 */
export async function reconcileShardMap(
  main: Pool,
  map: ConfiguredShardMap,
  strandedJobs: () => Promise<readonly string[]> = async () => [],
): Promise<'seeded' | 'agrees' | 'unsharded'> {
  const single = new Set(map.databaseOfShard).size === 1 ? map.databaseOfShard[0]! : null;
  if (single !== null) return checkUnsharded(main, map, single);
  return inTransaction(main, async (client) => {
    // One starter seeds; the others wait here and then compare against what it wrote.
    await client.query('LOCK TABLE store_shards IN EXCLUSIVE MODE');
    const recorded = await recordedMap(client);
    if (recorded.length === 0) {
      const stranded = await strandedJobs();
      if (stranded.length > 0)
        throw new ShardMapMismatchError(
          `${map.variable} moves shards away from databases that still hold their jobs (${stranded.join('; ')}): ` +
            'moving a shard to another database is not supported; keep the map these jobs were stored under',
        );
      await client.query(
        `INSERT INTO store_shards (shard, database) SELECT s - 1, d FROM unnest($1::text[]) WITH ORDINALITY AS m(d, s)`,
        [[...map.databaseOfShard]],
      );
      return 'seeded';
    }
    const differences = shardMapDifferences(recorded, map.databaseOfShard);
    if (differences.length > 0)
      throw new ShardMapMismatchError(
        `${map.variable} disagrees with the shard map recorded in store_shards (DATABASE_URL) by the first app that started: ` +
          `${differences.slice(0, 10).join('; ')}${differences.length > 10 ? `; and ${differences.length - 10} more` : ''}. ` +
          'Start every app with the same map (moving shards between databases is not supported)',
      );
    return 'agrees';
  });
}

/**
 * A map with every shard in one database is not recorded: apps on one database have always been
 * free to start with another shard count (tests and benches do), and there is nothing to route.
 * It is refused only when a sharded map is recorded, which it would contradict.
 */
async function checkUnsharded(
  main: Pool,
  map: ConfiguredShardMap,
  database: string,
): Promise<'agrees' | 'unsharded'> {
  const { rows } = await main.query<{ database: string }>('SELECT DISTINCT database FROM store_shards');
  if (rows.length === 0) return 'unsharded';
  const elsewhere = rows.map((r) => r.database).filter((d) => d !== database);
  if (elsewhere.length > 0)
    throw new ShardMapMismatchError(
      `${map.variable} puts every shard in ${database}, but store_shards (DATABASE_URL) records shards in ` +
        `${elsewhere.join(', ')}: start every app with the recorded shard map`,
    );
  return 'agrees';
}

/** Each way `configured` differs from `recorded` (database identities by shard), for messages. */
export function shardMapDifferences(recorded: readonly string[], configured: readonly string[]): string[] {
  const out: string[] = [];
  if (recorded.length !== configured.length)
    out.push(`${configured.length} shards configured (TICKWORK_SHARDS), ${recorded.length} recorded`);
  for (let s = 0; s < Math.min(recorded.length, configured.length); s++)
    if (recorded[s] !== configured[s])
      out.push(`shard ${s} is in ${recorded[s]}, configured ${configured[s]}`);
  return out;
}

async function recordedMap(client: PoolClient): Promise<string[]> {
  const { rows } = await client.query<{ shard: number; database: string }>(
    'SELECT shard, database FROM store_shards ORDER BY shard',
  );
  return rows.map((r) => r.database);
}

/** The shards among `foreign` of which the database holds jobs (one index probe per shard). */
export async function shardsWithJobs(pool: Pool, foreign: readonly number[]): Promise<number[]> {
  if (foreign.length === 0) return [];
  const { rows } = await pool.query<{ shard: number }>(
    `SELECT s AS shard FROM unnest($1::int[]) AS s WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.shard = s)`,
    [[...foreign]],
  );
  return rows.map((r) => r.shard);
}
