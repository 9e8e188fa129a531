/**
 * Scheduler group membership changes with real processes: kill -9 of one of two schedulers and
 * its immediate restart (the restarted member joins while the dead one is still in the group).
 * The survivor keeps claiming its shards on time through the rebalance (its leases fence the
 * claims), the dead member's shards are claimed again within the session timeout + 5 s, and no
 * occurrence is claimed twice or skipped.
 */
import { DEFAULT_POLICIES } from '@tickwork/domain';
import { testDatabase, type TestDatabase } from '../support/db';
import { startApp, type AppProcess } from '../support/apps';
import { eventually, freePort } from '../support/env';
import { seedJobs } from '../support/seed';
import { KafkaSink } from '../support/sink';

const SHARDS = 6;
const EVERY_MS = 500;

describe('scheduler membership changes', () => {
  let db: TestDatabase;
  let sink: KafkaSink;
  let apps: AppProcess[] = [];

  const start = async (): Promise<AppProcess> => {
    const app = startApp('scheduler', db.iso.env({ TICKWORK_SHARDS: String(SHARDS) }), await freePort());
    apps.push(app);
    await app.ready();
    return app;
  };
  const shardsOf = async (app: AppProcess): Promise<number[]> =>
    (
      await db.pool.query<{ shard: number }>(
        'SELECT shard FROM shard_leases WHERE owner = $1 ORDER BY shard',
        [`scheduler-${app.port}`],
      )
    ).rows.map((r) => r.shard);

  beforeAll(async () => {
    db = await testDatabase('schedmember');
    sink = await KafkaSink.create(`${db.iso.topicPrefix}.sink`);
  });

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.kill()));
    await sink?.close();
    await db?.close();
  });

  it('kill -9 of one scheduler and its restart: the survivor’s fires stay on time, the dead one’s shards come back', async () => {
    const [survivor, victim] = [await start(), await start()];
    await eventually(
      'shards split between the two schedulers',
      async () =>
        (await shardsOf(survivor)).length > 0 && (await shardsOf(victim)).length > 0 ? true : undefined,
      60_000,
    );
    const anchor = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1_000);
    await seedJobs(db.pool, {
      prefix: 'tick',
      count: 60,
      shardCount: SHARDS,
      schedule: () => ({ kind: 'interval', everyMs: EVERY_MS, anchor }),
      firstAt: () => anchor,
      target: sink.target(),
      // Every missed occurrence fires (none is coalesced), so each one's lateness is measured.
      policies: { ...DEFAULT_POLICIES, misfire: 'FIRE_ALL' },
    });
    await new Promise((r) => setTimeout(r, 3_000));
    const survivorShards = await shardsOf(survivor);
    const killedAt = Date.now();
    await victim.kill();
    apps = apps.filter((a) => a !== victim);
    await start();
    const windowEnd = killedAt + 15_000;
    await eventually(
      'every occurrence of the 15 s after the kill claimed',
      async () => {
        const { rows } = await db.pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM jobs WHERE next_nominal_at <= $1`,
          [new Date(windowEnd)],
        );
        return Number(rows[0]!.n) === 0 ? true : undefined;
      },
      60_000,
      200,
    );

    const { rows } = await db.pool.query<{ job_id: string; shard: number; nominal: number; late: number }>(
      `SELECT job_id, shard, extract(epoch FROM nominal_time) * 1000 AS nominal,
              extract(epoch FROM (claimed_at - nominal_time)) * 1000 AS late
         FROM fires WHERE nominal_time > $1 AND nominal_time <= $2`,
      [new Date(killedAt), new Date(windowEnd)],
    );
    const perJob = new Map<string, number[]>();
    for (const r of rows) perJob.set(r.job_id, [...(perJob.get(r.job_id) ?? []), Number(r.nominal)]);
    // No occurrence twice, none skipped: every job's nominal times step by EVERY_MS.
    expect(perJob.size).toBe(60);
    for (const nominals of perJob.values()) {
      nominals.sort((a, b) => a - b);
      expect(new Set(nominals).size).toBe(nominals.length);
      for (let i = 1; i < nominals.length; i++) expect(nominals[i]! - nominals[i - 1]!).toBe(EVERY_MS);
    }
    const late = (onSurvivor: boolean) =>
      rows
        .filter((r) => survivorShards.includes(r.shard) === onSurvivor)
        .reduce((m, r) => Math.max(m, Number(r.late)), 0);
    // The survivor claims on through the rebalance; the dead member's shards wait for its session
    // (6 s) to run out, then for their new owner's takeover.
    expect(late(true)).toBeLessThan(1_500);
    expect(late(false)).toBeLessThan(11_000);
  }, 120_000);
});
