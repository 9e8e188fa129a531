/**
 * The store_shards control table against real PostgreSQL: the first map is recorded, later ones
 * must agree, concurrent starters agree on one, and a map that would hide stored jobs is refused.
 */
import { reconcileShardMap, ShardMapMismatchError, shardsWithJobs } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';

const A = '127.0.0.1:5432/a';
const B = '127.0.0.1:5433/b';
const map = (...databaseOfShard: string[]) => ({ databaseOfShard, variable: 'TICKWORK_STORE_SHARDS' });

describe('store_shards', () => {
  let db: TestDatabase;

  beforeEach(async () => {
    db = await testDatabase('storeshards');
  });
  afterEach(async () => db?.close());

  it('records the first map and accepts the same one again', async () => {
    expect(await reconcileShardMap(db.pool, map(A, A, B, B))).toBe('seeded');
    expect(await reconcileShardMap(db.pool, map(A, A, B, B))).toBe('agrees');
    const { rows } = await db.pool.query('SELECT shard, database FROM store_shards ORDER BY shard');
    expect(rows).toEqual([
      { shard: 0, database: A },
      { shard: 1, database: A },
      { shard: 2, database: B },
      { shard: 3, database: B },
    ]);
  });

  it('refuses a map that routes a shard elsewhere or counts other shards, naming the variable and the shards', async () => {
    await reconcileShardMap(db.pool, map(A, A, B, B));
    await expect(reconcileShardMap(db.pool, map(A, B, B, B))).rejects.toThrow(ShardMapMismatchError);
    await expect(reconcileShardMap(db.pool, map(A, B, B, B))).rejects.toThrow(
      /TICKWORK_STORE_SHARDS disagrees .*shard 1 is in 127\.0\.0\.1:5432\/a, configured 127\.0\.0\.1:5433\/b/,
    );
    await expect(reconcileShardMap(db.pool, map(A, A, B, B, B, B))).rejects.toThrow(/6 shards configured/);
  });

  it('lets concurrent starters with different maps record one of them, and refuses the other', async () => {
    const results = await Promise.allSettled([
      reconcileShardMap(db.pool, map(A, A, B, B)),
      reconcileShardMap(db.pool, map(A, B, B, B)),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    // Refused for disagreeing with the map the other recorded (not by a duplicate key of a race).
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused?.reason).toBeInstanceOf(ShardMapMismatchError);
  });

  it('refuses to record a map while a database holds jobs of shards it would put elsewhere', async () => {
    await db.pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, time_zone, status, target, payload, policies, labels)
       VALUES ('stored', 't', 3, 'once', '{}', 'UTC', 'COMPLETED', '{}', 'null', '{}', '{}')`,
    );
    expect(await shardsWithJobs(db.pool, [2, 3])).toEqual([3]);
    await expect(
      reconcileShardMap(db.pool, map(A, A, B, B), async () => ['a holds jobs of shards 3']),
    ).rejects.toThrow(
      /moves shards away from databases that still hold their jobs \(a holds jobs of shards 3\)/,
    );
    const { rowCount } = await db.pool.query('SELECT 1 FROM store_shards');
    expect(rowCount).toBe(0);
  });

  it('records no map with every shard in one database, and refuses one after a sharded map is recorded', async () => {
    expect(await reconcileShardMap(db.pool, map(A, A, A, A))).toBe('unsharded');
    // Another shard count on one database stays allowed, as it always was.
    expect(await reconcileShardMap(db.pool, map(A, A))).toBe('unsharded');
    const { rowCount } = await db.pool.query('SELECT 1 FROM store_shards');
    expect(rowCount).toBe(0);
    expect(await reconcileShardMap(db.pool, map(A, A, B, B))).toBe('seeded');
    await expect(reconcileShardMap(db.pool, map(A, A, A, A))).rejects.toThrow(
      /TICKWORK_STORE_SHARDS puts every shard in 127\.0\.0\.1:5432\/a, but store_shards .* records shards in 127\.0\.0\.1:5433\/b/,
    );
  });
});
