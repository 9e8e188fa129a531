/**
 * Lookahead: occurrences are claimed up to TICKWORK_LOOKAHEAD_MS before they are due, and each
 * fire is still published at its scheduled time, never before — the claim's database work is
 * done before a herd is due. A batch held for later does not hold back one due sooner, and a herd
 * is claimed ahead up to TICKWORK_LOOKAHEAD_MAX_FIRES, not further.
 */
import { startApp, type AppProcess } from '../support/apps';
import { testDatabase, type TestDatabase } from '../support/db';
import { eventually, freePort } from '../support/env';
import { TopicTap } from '../support/kafka';
import { seedJobs } from '../support/seed';

const SHARDS = 4;
const LOOKAHEAD_MS = 3_000;

/** A scheduler with a lookahead on a fresh database, and a tap on its fires topic. */
interface LookaheadStack {
  db: TestDatabase;
  scheduler?: AppProcess;
  tap?: TopicTap;
}

/** Starts the stack before the describe's tests and stops it after them. */
function lookaheadStack(label: string, env: Record<string, string> = {}): LookaheadStack {
  const stack = {} as LookaheadStack;
  beforeAll(async () => {
    stack.db = await testDatabase(label);
    stack.scheduler = startApp(
      'scheduler',
      stack.db.iso.env({
        TICKWORK_SHARDS: String(SHARDS),
        TICKWORK_TICK_MS: '100',
        TICKWORK_LOOKAHEAD_MS: String(LOOKAHEAD_MS),
        ...env,
      }),
      await freePort(),
    );
    await stack.scheduler.ready();
    stack.tap = await TopicTap.open(`${stack.db.iso.topicPrefix}.fires`);
  }, 120_000);
  afterAll(async () => {
    await stack.tap?.close();
    await stack.scheduler?.stop();
    await stack.db.close();
  });
  return stack;
}

/** `count` one-shot jobs due at `at`, with a Kafka target nobody reads. */
function seedOnce(stack: LookaheadStack, prefix: string, count: number, at: number): Promise<string[]> {
  return seedJobs(stack.db.pool, {
    prefix,
    count,
    shardCount: SHARDS,
    schedule: () => ({ kind: 'once', at: new Date(at) }),
    firstAt: () => new Date(at),
    target: { type: 'kafka', topic: `${stack.db.iso.topicPrefix}.unused`, key: null, headers: {} },
  });
}

/** Fires claimed so far (each claimed fire has a row, published or not). */
async function claimedCount(stack: LookaheadStack): Promise<number> {
  return Number((await stack.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM fires')).rows[0]!.n);
}

describe('scheduler lookahead', () => {
  const stack = lookaheadStack('lookahead');

  it('claims early and publishes each fire at its time', async () => {
    // Two herds 1.5 s apart: the second is claimed while the first is held for its time, and a
    // third, due at once, is seeded while both are held.
    const first = Date.now() + 5_000;
    const herd = (prefix: string, at: number, count: number) => seedOnce(stack, prefix, count, at);
    await herd('a', first, 300);
    await herd('b', first + 1_500, 300);
    await eventually(
      'both herds claimed',
      async () => ((await claimedCount(stack)) === 600 ? true : undefined),
      15_000,
    );
    const urgent = Date.now();
    expect(urgent).toBeLessThan(first - 500);
    await herd('now', urgent, 20);

    await eventually(
      '620 fire messages',
      () => (stack.tap!.messages.length >= 620 ? true : undefined),
      30_000,
    );
    expect(stack.tap!.messages).toHaveLength(620);
    const { rows } = await stack.db.pool.query<{ fire_id: string; scheduled_for: Date; claimed_at: Date }>(
      `SELECT job_id || ':' || fence_token AS fire_id, scheduled_for, claimed_at FROM fires`,
    );
    const byId = new Map(rows.map((r) => [r.fire_id, r]));
    for (const m of stack.tap!.messages) {
      const fire = byId.get(String(m.headers['tickwork-fire-id']))!;
      expect(fire).toBeDefined();
      const due = fire.scheduled_for.getTime();
      // Never before its time, and promptly at it.
      expect(m.timestamp).toBeGreaterThanOrEqual(due);
      expect(m.timestamp).toBeLessThan(due + 1_000);
    }
    const claimedEarly = (prefix: string) =>
      rows
        .filter((r) => r.fire_id.startsWith(`${prefix}-`))
        .map((r) => r.scheduled_for.getTime() - r.claimed_at.getTime());
    // Claimed about LOOKAHEAD_MS before they were due; the urgent ones at once.
    expect(Math.min(...claimedEarly('a'))).toBeGreaterThan(1_000);
    expect(Math.min(...claimedEarly('b'))).toBeGreaterThan(1_000);
    const urgentMessages = stack.tap!.messages.filter((m) =>
      String(m.headers['tickwork-fire-id']).startsWith('now-'),
    );
    expect(Math.max(...urgentMessages.map((m) => m.timestamp))).toBeLessThan(first);
  }, 90_000);
});

describe('scheduler lookahead, bounded by TICKWORK_LOOKAHEAD_MAX_FIRES', () => {
  const MAX_HELD = 100;
  const BATCH = 10;
  // One lane claiming batches of 10: a herd of 300 takes 30 claims, so how far ahead it gets
  // is set by the bound, not by the batch size.
  const stack = lookaheadStack('lookahead-bound', {
    TICKWORK_CLAIM_BATCH: String(BATCH),
    TICKWORK_CLAIM_LANES: '1',
    TICKWORK_LOOKAHEAD_MAX_FIRES: String(MAX_HELD),
  });

  it('claims a herd ahead up to the bound, fires what is due meanwhile, and publishes every fire at its time', async () => {
    const due = Date.now() + LOOKAHEAD_MS + 2_000;
    const seed = (prefix: string, count: number, at: number) => seedOnce(stack, prefix, count, at);
    await seed('herd', 300, due);
    const claimed = () => claimedCount(stack);
    // More than a few batches ahead: the bound, not 4 batches per lane.
    await eventually(
      `${MAX_HELD} of the herd claimed ahead`,
      async () => ((await claimed()) >= MAX_HELD ? true : undefined),
      due - 1_000 - Date.now(),
    );
    // At the bound, jobs due now are still claimed and fired at once.
    const urgentAt = Date.now();
    await seed('urgent', 5, urgentAt);
    const urgentOnes = () =>
      stack.tap!.messages.filter((m) => String(m.headers['tickwork-fire-id']).startsWith('urgent-'));
    let most = 0;
    await eventually(
      'the urgent jobs fired before the herd is due',
      async () => {
        most = Math.max(most, await claimed());
        return urgentOnes().length === 5 ? true : undefined;
      },
      due - 200 - Date.now(),
      25,
    );
    const urgent = urgentOnes();
    expect(stack.tap!.messages).toHaveLength(5);
    while (Date.now() < due - 200) {
      most = Math.max(most, await claimed());
      await new Promise((r) => setTimeout(r, 25));
    }
    // Never much past the bound: the lane checks it before each claim, so at most one batch more.
    expect(most).toBeLessThanOrEqual(MAX_HELD + BATCH + 5);

    await eventually(
      '305 fire messages',
      () => (stack.tap!.messages.length >= 305 ? true : undefined),
      30_000,
    );
    expect(stack.tap!.messages).toHaveLength(305);
    expect(new Set(stack.tap!.messages.map((m) => m.headers['tickwork-fire-id'])).size).toBe(305);
    for (const m of stack.tap!.messages)
      if (!urgent.includes(m)) expect(m.timestamp).toBeGreaterThanOrEqual(due);
  }, 90_000);
});

describe('scheduler lookahead across a crash', () => {
  // A lookahead far longer than the relay age: a next owner must still publish held fires at
  // their time, not as soon as the relay age after their claim.
  const LONG_LOOKAHEAD_MS = 25_000;
  const RELAY_AGE_MS = 1_000;
  let db: TestDatabase;
  let tap: TopicTap | undefined;
  const apps: AppProcess[] = [];
  const start = async () => {
    const app = startApp(
      'scheduler',
      db.iso.env({
        TICKWORK_SHARDS: String(SHARDS),
        TICKWORK_TICK_MS: '100',
        TICKWORK_LOOKAHEAD_MS: String(LONG_LOOKAHEAD_MS),
        TICKWORK_OUTBOX_RELAY_AGE_MS: String(RELAY_AGE_MS),
        TICKWORK_SHARD_LEASE_MS: '2000',
      }),
      await freePort(),
    );
    apps.push(app);
    await app.ready();
    return app;
  };

  beforeAll(async () => {
    db = await testDatabase('lookahead-crash');
  }, 120_000);
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.kill()));
    await tap?.close();
    await db.close();
  });

  it('kill -9 while holding fires claimed ahead: the next owner publishes each at its time, none early, none lost', async () => {
    const holder = await start();
    // The scheduler provisions the topics: tap them once it is up.
    tap = await TopicTap.open(`${db.iso.topicPrefix}.fires`);
    const due = Date.now() + 20_000;
    const ids = await seedJobs(db.pool, {
      prefix: 'held',
      count: 200,
      shardCount: SHARDS,
      schedule: () => ({ kind: 'once', at: new Date(due) }),
      firstAt: () => new Date(due),
      target: { type: 'kafka', topic: `${db.iso.topicPrefix}.unused`, key: null, headers: {} },
    });
    const claimers = async () =>
      (
        await db.pool.query<{ claimed_by: string; n: string }>(
          'SELECT claimed_by, count(*) AS n FROM fires GROUP BY 1',
        )
      ).rows;
    const [claim] = await eventually(
      'the herd claimed ahead',
      async () => {
        const rows = await claimers();
        return rows.length === 1 && Number(rows[0]!.n) === ids.length ? rows : undefined;
      },
      10_000,
    );
    await holder.kill();
    expect(tap!.messages).toHaveLength(0); // held for their time: nothing was published

    await start();
    // The heir holds every shard well before the herd is due, so its relay has the held batches
    // in reach for seconds before their time.
    await eventually(
      'the heir holding every shard',
      async () => {
        const { rows } = await db.pool.query<{ owner: string }>(
          'SELECT owner FROM shard_leases WHERE expires_at > now()',
        );
        return rows.length === SHARDS && rows.every((r) => r.owner !== claim!.claimed_by) ? true : undefined;
      },
      due - 3_000 - Date.now(),
    );
    expect(Date.now()).toBeLessThan(due - 3_000);

    await eventually(
      'every held fire published by the heir',
      () => (tap!.messages.length >= ids.length ? true : undefined),
      30_000,
    );
    expect(new Set(tap!.messages.map((m) => m.headers['tickwork-fire-id'])).size).toBe(ids.length);
    for (const m of tap!.messages) {
      expect(m.timestamp).toBeGreaterThanOrEqual(due);
      // Relayed at the relay age past their time, not much later.
      expect(m.timestamp).toBeLessThan(due + RELAY_AGE_MS + 5_000);
    }
    // Still exactly one message per fire a moment later: nothing published twice.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(tap!.messages).toHaveLength(ids.length);
  }, 120_000);
});
