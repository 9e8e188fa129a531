/**
 * The fire loop's outbox relay against real PostgreSQL and Kafka: a batch the loop itself is still
 * publishing (held for its time by the lookahead) is older than the relay age, yet not orphaned.
 * The relay must leave it alone, or each of its fires goes out twice, the copy before its time.
 */
import { EventCodecs, type MessageBus, type MessageProducer, type TopicAdmin } from '@tickwork/messaging';
import { FireLoop, FirePublisher, ShardOwnership } from '@tickwork/scheduling';
import { FireStore, JobRepository, ShardLeaseRepository } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';
import { eventually, STACK } from '../support/env';
import { fireOnce, oneShot } from '../support/fire-loop';
import { testKafkaBus, TopicTap } from '../support/kafka';

describe('fire loop relay', () => {
  const topic = `it.relay.${Date.now()}.fires`;
  const SHARD = 0;
  let db: TestDatabase;
  let bus: MessageBus;
  let admin: TopicAdmin;
  let producer: MessageProducer;
  let tap: TopicTap | undefined;

  beforeAll(async () => {
    db = await testDatabase('fire-loop-relay');
    bus = testKafkaBus('it-relay');
    admin = await bus.admin();
    await admin.createTopics([{ name: topic, partitions: 3, replicationFactor: 1, configs: {} }]);
    producer = await bus.producer({ idempotent: true });
  });
  afterAll(async () => {
    await tap?.close();
    await producer.disconnect();
    await admin.disconnect();
    await db.close();
  });

  it('does not re-publish a batch the loop holds for its time past the relay age', async () => {
    const jobs = new JobRepository(db.pool);
    const fires = new FireStore(db.pool);
    // Due 1.5 s from now, claimed at once (lookahead 2.5 s), so each batch is held ~1.5 s: far
    // past the relay age of 200 ms, as a herd's batches are when the box is slow to send them.
    const dueAt = new Date(Date.now() + 1_500);
    const n = 30;
    for (let i = 0; i < n; i++)
      await jobs.insertJob({
        definition: oneShot(`held-${i}`, dueAt),
        shard: SHARD,
        next: { nominalTime: dueAt, scheduledFor: dueAt },
      });
    const ownership = new ShardOwnership(new ShardLeaseRepository(db.pool), 'relay-test', 30_000);
    await ownership.assign([SHARD]);
    const codecs = await EventCodecs.connect(STACK.registryUrl, { fireTopics: [topic], resultTopics: [] });
    const errors: Error[] = [];
    const enqueued: { relayed: boolean; fires: number }[] = [];
    const loop = new FireLoop(
      fires,
      fires,
      ownership,
      new FirePublisher(producer, codecs, topic),
      fireOnce,
      // Batches of 10: three batches held at once.
      { owner: 'relay-test', tickMs: 100, batchSize: 10, lookaheadMs: 2_500, relayAgeMs: 200 },
      {
        onError: (e) => errors.push(e),
        onEnqueued: (f, relayed) => enqueued.push({ relayed, fires: f.length }),
      },
    );
    loop.start();
    try {
      tap = await TopicTap.open(topic);
      await eventually(
        'every claimed batch to be marked enqueued',
        async () => {
          const { rows } = await db.pool.query<{ pending: number; batches: number }>(
            `SELECT count(*) FILTER (WHERE enqueued_at IS NULL)::int AS pending, count(*)::int AS batches
               FROM fire_batches`,
          );
          return rows[0]!.batches >= 3 && rows[0]!.pending === 0 ? true : undefined;
        },
        15_000,
      );
    } finally {
      await loop.stop();
    }
    expect(errors).toEqual([]);
    // The topic's end offsets count every message ever sent to it, copies included.
    const ends = await admin.groupLag(`none-${Date.now()}`, topic);
    expect(ends.reduce((sum, p) => sum + Number(p.end), 0)).toBe(n);
    expect(enqueued.filter((e) => e.relayed)).toEqual([]);
    await eventually(
      'the tap to read every fire',
      () => (tap!.messages.length >= n ? true : undefined),
      15_000,
    );
    // None went out before its time.
    expect(Math.min(...tap!.messages.map((m) => m.timestamp))).toBeGreaterThanOrEqual(dueAt.getTime());
  });
});
