/**
 * Topic creation through the messaging lib returns only once every partition has a leader, so
 * the first produce to a topic just created (say, by a scheduler provisioning its topics at
 * start) never meets an unknown topic. kafkajs's own wait gives up on UNKNOWN_TOPIC_OR_PARTITION
 * (tulios/kafkajs#1222); this is the lib's contract, checked on a real broker.
 */
import { randomUUID } from 'node:crypto';
// A client of its own to read the broker's view, as stack.test.ts does.
// eslint-disable-next-line no-restricted-imports
import { Kafka, logLevel } from 'kafkajs';
import { STACK } from '../support/env';
import { testKafkaBus } from '../support/kafka';

describe('topic admin', () => {
  it('creates topics and returns when every partition has a leader; creating them again is a no-op', async () => {
    const bus = testKafkaBus('topic-admin-test');
    const names = Array.from({ length: 4 }, () => `test.admin.${randomUUID()}`);
    const admin = await bus.admin();
    try {
      await admin.createTopics(
        names.map((name) => ({ name, partitions: 12, replicationFactor: 1, configs: {} })),
      );
      // Read with a client of its own, right away: no retry, no wait.
      const raw = new Kafka({ brokers: STACK.kafkaBrokers.split(','), logLevel: logLevel.NOTHING }).admin();
      await raw.connect();
      try {
        const { topics } = await raw.fetchTopicMetadata({ topics: names });
        expect(topics.map((t) => t.name).sort()).toEqual([...names].sort());
        for (const t of topics) {
          expect(t.partitions).toHaveLength(12);
          expect(t.partitions.filter((p) => p.leader < 0 || p.partitionErrorCode !== 0)).toEqual([]);
        }
      } finally {
        await raw.disconnect();
      }
      await expect(
        admin.createTopics(
          names.map((name) => ({ name, partitions: 12, replicationFactor: 1, configs: {} })),
        ),
      ).resolves.toBeUndefined();
    } finally {
      await admin.disconnect();
    }
  });
});
