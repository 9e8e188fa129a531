/**
 * The fire loop through a publish outage, against real PostgreSQL and Kafka: fires whose publish
 * failed go out again as soon as Kafka takes them, oldest first and before anything claimed later,
 * without waiting for the outbox relay; a lane that cannot publish claims nothing new meanwhile.
 * The outage is real: the fires topic does not exist yet (the producer's sends fail as they do with
 * the broker gone) until the test creates it.
 */
import { EventCodecs, type MessageBus, type MessageProducer, type TopicAdmin } from '@tickwork/messaging';
import { FireLoop, FirePublisher, ShardOwnership } from '@tickwork/scheduling';
import { FireStore, JobRepository, ShardLeaseRepository } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';
import { eventually, STACK } from '../support/env';
import { fireOnce, oneShot } from '../support/fire-loop';
import { testKafkaBus, TopicTap } from '../support/kafka';

describe('fire loop through a publish outage', () => {
  const topic = `it.outage.${Date.now()}.fires`;
  const SHARD = 0;
  let db: TestDatabase;
  let bus: MessageBus;
  let admin: TopicAdmin;
  let producer: MessageProducer;
  let tap: TopicTap | undefined;

  beforeAll(async () => {
    db = await testDatabase('fire-loop-outage');
    bus = testKafkaBus('it-outage');
    admin = await bus.admin();
    producer = await bus.producer({ idempotent: true });
  });
  afterAll(async () => {
    await tap?.close();
    await producer.disconnect();
    await admin.disconnect();
    await db.close();
  });

  it('sends the failed fires first and at once when Kafka is back, and claims nothing new before', async () => {
    const jobs = new JobRepository(db.pool);
    const fires = new FireStore(db.pool);
    const insert = async (prefix: string, n: number, at: Date) => {
      for (let i = 0; i < n; i++)
        await jobs.insertJob({
          definition: oneShot(`${prefix}-${i}`, at),
          shard: SHARD,
          next: { nominalTime: at, scheduledFor: at },
        });
    };
    await insert('early', 10, new Date(Date.now() - 1_000));
    const ownership = new ShardOwnership(new ShardLeaseRepository(db.pool), 'outage-test', 60_000);
    await ownership.assign([SHARD]);
    const codecs = await EventCodecs.connect(STACK.registryUrl, { fireTopics: [topic], resultTopics: [] });
    const errors: Error[] = [];
    const claimed: string[][] = [];
    const enqueued: { relayed: boolean; jobs: string[] }[] = [];
    const loop = new FireLoop(
      fires,
      fires,
      ownership,
      new FirePublisher(producer, codecs, topic),
      fireOnce,
      // Batches of 5: the ten early jobs take two claims. The relay age is far beyond the test, so
      // only the loop's own resend can send the failed fires.
      { owner: 'outage-test', tickMs: 100, batchSize: 5, lookaheadMs: 0, relayAgeMs: 600_000 },
      {
        onError: (e) => errors.push(e),
        onClaimed: (f) => claimed.push(f.map((x) => x.event.jobId)),
        onEnqueued: (f, relayed) => enqueued.push({ relayed, jobs: f.map((x) => x.event.jobId) }),
      },
    );
    loop.start();
    try {
      await eventually('a publish to fail', () => (errors.length > 0 ? true : undefined), 60_000);
      await eventually(
        'both early batches claimed',
        () => (claimed.flat().length >= 10 ? true : undefined),
        60_000,
      );
      // Due now, while the early fires are still unsent: claimed only after they are out.
      await insert('late', 5, new Date());
      const claimsBeforeBack = claimed.length;
      await new Promise((r) => setTimeout(r, 500));
      expect(claimed.length).toBe(claimsBeforeBack);
      // Kafka takes the fires from now on.
      await admin.createTopics([{ name: topic, partitions: 3, replicationFactor: 1, configs: {} }]);
      const back = Date.now();
      tap = await TopicTap.open(topic);
      await eventually(
        'all 15 fires on the topic',
        () => (tap!.messages.length >= 15 ? true : undefined),
        60_000,
      );
      // Sent by the loop itself within a few producer retries of the topic's creation.
      const early = tap.messages.filter((m) => m.key?.toString().startsWith('early-'));
      const late = tap.messages.filter((m) => m.key?.toString().startsWith('late-'));
      expect(early).toHaveLength(10);
      expect(late).toHaveLength(5);
      expect(Math.max(...early.map((m) => m.timestamp)) - back).toBeLessThan(10_000);
      expect(Math.max(...early.map((m) => m.timestamp))).toBeLessThanOrEqual(
        Math.min(...late.map((m) => m.timestamp)),
      );
    } finally {
      await loop.stop();
    }
    // The first confirmed publish is both early batches together, none relayed; the late ones after.
    expect(enqueued.every((e) => !e.relayed)).toBe(true);
    expect(enqueued[0]!.jobs.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `early-${i}`).sort());
    expect(
      enqueued
        .slice(1)
        .flatMap((e) => e.jobs)
        .sort(),
    ).toEqual(Array.from({ length: 5 }, (_, i) => `late-${i}`));
    // Each fire sent once: the end offsets count every message ever written, copies included.
    const ends = await admin.groupLag(`none-${Date.now()}`, topic);
    expect(ends.reduce((sum, p) => sum + Number(p.end), 0)).toBe(15);
    const { rows } = await db.pool.query<{ pending: number }>(
      `SELECT count(*) FILTER (WHERE enqueued_at IS NULL)::int AS pending FROM fire_batches`,
    );
    expect(rows[0]!.pending).toBe(0);
  }, 120_000);
});
