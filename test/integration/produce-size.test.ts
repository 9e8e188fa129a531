/**
 * A send larger than the broker's record batch limit (message.max.bytes, 1 MiB by default) is
 * delivered whole, in order: the messaging lib cuts it into requests. kafkajs alone puts all of a
 * partition's messages in one batch, and the broker refuses it (MESSAGE_TOO_LARGE).
 */
import type { MessageProducer } from '@tickwork/messaging';
import { eventually } from '../support/env';
import { testKafkaBus, TopicTap } from '../support/kafka';

describe('a send over the broker batch limit', () => {
  const topic = `it.produce-size.${Date.now()}`;
  let producer: MessageProducer;
  let tap: TopicTap | undefined;

  beforeAll(async () => {
    const bus = testKafkaBus('it-produce-size');
    const admin = await bus.admin();
    // One partition: every message of the send lands in the same partition's batch.
    await admin.createTopics([{ name: topic, partitions: 1, replicationFactor: 1, configs: {} }]);
    await admin.disconnect();
    producer = await bus.producer({ idempotent: true });
  });
  afterAll(async () => {
    await tap?.close();
    await producer.disconnect();
  });

  it('delivers 10,000 messages of 400 bytes (~4.6 MB) to one partition, in order', async () => {
    const n = 10_000;
    const messages = Array.from({ length: n }, (_, i) => ({
      key: `job-${i}`,
      value: Buffer.alloc(400, i % 251),
      headers: { n: String(i) },
    }));
    await producer.send([{ topic, messages }]);

    tap = await TopicTap.open(topic);
    await eventually(`${n} messages`, () => (tap!.messages.length >= n ? true : undefined));
    expect(tap.messages).toHaveLength(n);
    expect(tap.messages.map((m) => Number(m.headers.n))).toEqual(messages.map((_, i) => i));
    expect(tap.messages[4_321]!.value).toEqual(messages[4_321]!.value);
  });
});
