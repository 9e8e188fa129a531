/**
 * A job's shard is the commands-topic partition Kafka's default partitioner picks for its id.
 * Pinned against what kafkajs actually chose on a real broker, through the messaging lib.
 */
import { randomUUID } from 'node:crypto';
import { shardOf } from '@tickwork/domain';
import type { InboundMessage } from '@tickwork/messaging';
import { testKafkaBus } from '../support/kafka';
import { eventually } from '../support/env';

describe('shardOf', () => {
  it('matches the partition kafkajs chose for every key', async () => {
    const bus = testKafkaBus('shard-test');
    const topic = `test.shard.${randomUUID()}`;
    const partitions = 7;
    const admin = await bus.admin();
    await admin.createTopics([{ name: topic, partitions, replicationFactor: 1, configs: {} }]);
    await admin.disconnect();
    const keys = [
      ...Array.from({ length: 300 }, () => randomUUID()),
      'a',
      'ab',
      'abc',
      'job-1',
      'ünïcødé-jöb',
      'x'.repeat(128),
      ...Array.from({ length: 50 }, (_, i) => `tenant:job:${i}`),
    ];
    const producer = await bus.producer();
    await producer.send([{ topic, messages: keys.map((k) => ({ key: k, value: Buffer.from(k) })) }]);
    await producer.disconnect();
    const seen: InboundMessage[] = [];
    const consumer = await bus.consumer({
      groupId: `shard-test-${randomUUID()}`,
      topics: [topic],
      fromBeginning: true,
    });
    await consumer.start({
      onBatch: async (b) => {
        seen.push(...b.messages);
      },
    });
    try {
      await eventually('every keyed message', () => (seen.length >= keys.length ? true : undefined), 30_000);
    } finally {
      await consumer.stop();
    }
    const mismatches = seen.filter((m) => m.partition !== shardOf(m.key!.toString('utf8'), partitions));
    expect(mismatches).toEqual([]);
    expect(new Set(seen.map((m) => m.partition)).size).toBe(partitions);
  });
});
