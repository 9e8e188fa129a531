/**
 * A scheduler outage spanning many occurrences of a per-second cron job: after the restart each
 * misfire policy does what it says, and every occurrence ends in the occurrence ledger exactly
 * once (fired, coalesced or skipped) — the answer to "why did this not fire at 09:00:05?".
 */
import { DEFAULT_POLICIES, type MisfirePolicy } from '@tickwork/domain';
import { startApp, type AppProcess } from '../support/apps';
import { testDatabase, type TestDatabase } from '../support/db';
import { eventually, freePort } from '../support/env';
import { seedJobs } from '../support/seed';

const SHARDS = 4;
const OUTAGE_MS = 8_000;

describe('misfire policies after a scheduler outage', () => {
  let db: TestDatabase;
  let scheduler: AppProcess | undefined;

  beforeAll(async () => {
    db = await testDatabase('misfire');
  });
  afterAll(async () => {
    await scheduler?.kill();
    await db.close();
  });

  const startScheduler = async () => {
    scheduler = startApp(
      'scheduler',
      db.iso.env({ TICKWORK_SHARDS: String(SHARDS), TICKWORK_TICK_MS: '100' }),
      await freePort(),
    );
    await scheduler.ready();
  };
  const dbNow = async () =>
    (await db.pool.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now.getTime();
  const fired = async (jobId: string) =>
    (
      await db.pool.query<{ t: Date }>('SELECT nominal_time AS t FROM fires WHERE job_id = $1 ORDER BY 1', [
        jobId,
      ])
    ).rows.map((r) => r.t.getTime());
  const skips = async (jobId: string) =>
    (
      await db.pool.query<{ reason: string; first: Date; last: Date; n: string }>(
        'SELECT reason, first_nominal AS first, last_nominal AS last, occurrences AS n FROM occurrence_skips WHERE job_id = $1 ORDER BY first_nominal',
        [jobId],
      )
    ).rows.map((r) => ({
      reason: r.reason,
      first: r.first.getTime(),
      last: r.last.getTime(),
      n: Number(r.n),
    }));

  it('FIRE_ONCE coalesces, FIRE_ALL catches up each, SKIP skips; nothing is unaccounted for', async () => {
    await startScheduler();
    const policies: MisfirePolicy[] = ['FIRE_ONCE', 'FIRE_ALL', 'SKIP'];
    const firstAt = new Date(Math.ceil((Date.now() + 1_000) / 1000) * 1000);
    for (const misfire of policies) {
      await seedJobs(db.pool, {
        prefix: misfire,
        count: 1,
        shardCount: SHARDS,
        schedule: () => ({
          kind: 'cron',
          expression: '* * * * * *',
          timeZone: 'UTC',
          dstGap: 'AUTO',
          dstRepeat: 'AUTO',
        }),
        firstAt: () => firstAt,
        target: { type: 'kafka', topic: `${db.iso.topicPrefix}.unused`, key: null, headers: {} },
        policies: { ...DEFAULT_POLICIES, misfire },
      });
    }
    const ids = policies.map((p) => `${p}-0`);
    await eventually(
      'two fires of each job before the outage',
      async () => ((await Promise.all(ids.map(fired))).every((f) => f.length >= 2) ? true : undefined),
      20_000,
    );

    await scheduler!.stop();
    const downAt = await dbNow();
    // The outage itself: the database clock moves on while no scheduler runs.
    await eventually(
      'the outage to last',
      async () => ((await dbNow()) >= downAt + OUTAGE_MS ? true : undefined),
      OUTAGE_MS + 5_000,
      250,
    );
    const restartAt = await dbNow();
    await startScheduler();
    await eventually(
      'each job to fire on time again after the restart',
      async () => {
        const all = await Promise.all(ids.map(fired));
        return all.every((f) => f.some((t) => t >= restartAt + 2_000)) ? true : undefined;
      },
      30_000,
    );
    await scheduler!.stop();

    const missedFrom = downAt + 1_000; // the first occurrence no scheduler was there for
    const missedTo = restartAt - 3_000; // safely older than the 2 s late tolerance at restart
    for (const id of ids) {
      const fires = await fired(id);
      const ranges = await skips(id);
      // Account for every second from the first fire to the last: exactly once each.
      const seen = new Map<number, string>();
      const mark = (t: number, what: string) => {
        expect(seen.get(t)).toBeUndefined();
        seen.set(t, what);
      };
      for (const t of fires) mark(t, 'FIRED');
      for (const r of ranges) {
        expect(r.n).toBe((r.last - r.first) / 1_000 + 1);
        for (let t = r.first; t <= r.last; t += 1_000) mark(t, r.reason);
      }
      const first = Math.min(...seen.keys());
      const last = Math.max(...seen.keys());
      for (let t = first; t <= last; t += 1_000) expect(seen.has(t)).toBe(true);

      const inGap = [...seen.entries()]
        .filter(([t]) => t >= missedFrom && t <= missedTo)
        .map(([, what]) => what);
      expect(inGap.length).toBeGreaterThanOrEqual(4);
      if (id.startsWith('FIRE_ALL')) expect(new Set(inGap)).toEqual(new Set(['FIRED']));
      if (id.startsWith('SKIP')) expect(new Set(inGap)).toEqual(new Set(['MISFIRE_SKIP']));
      if (id.startsWith('FIRE_ONCE')) {
        expect(new Set(inGap)).toEqual(new Set(['COALESCED']));
        // The one catch-up fire stands for the coalesced ones and follows them directly.
        const coalesced = ranges.find((r) => r.reason === 'COALESCED')!;
        expect(fires).toContain(coalesced.last + 1_000);
      }
    }
  });
});
