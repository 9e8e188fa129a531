/**
 * The executor's batching producer against real Kafka: sends from concurrent fires to several
 * topics go out together, and a topic that does not exist fails only its own messages.
 */
import { BatchingProducer } from '@tickwork/execution';
import type { MessageBus, MessageProducer } from '@tickwork/messaging';
import { testKafkaBus, TopicTap } from '../support/kafka';

async function until(what: string, ok: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('batching producer', () => {
  const prefix = `it.produce.${Date.now()}`;
  const [a, b, missing] = [`${prefix}.a`, `${prefix}.b`, `${prefix}.missing`];
  let bus: MessageBus;
  let producer: MessageProducer;
  let taps: TopicTap[] = [];

  beforeAll(async () => {
    bus = testKafkaBus('it-produce');
    const admin = await bus.admin();
    await admin.createTopics(
      [a, b].map((name) => ({ name, partitions: 3, replicationFactor: 1, configs: {} })),
    );
    await admin.disconnect();
    producer = await bus.producer({ idempotent: true });
  });
  afterAll(async () => {
    await Promise.all(taps.map((t) => t.close()));
    await producer.disconnect();
  });

  it('delivers every topic of a mixed batch, and rejects only the messages of a missing topic', async () => {
    const batching = new BatchingProducer(producer);
    const msg = (i: number) => ({ key: `k${i}`, value: Buffer.from(`v${i}`), headers: { n: String(i) } });
    // Queued in one turn of the event loop: one request over three topics, one of them missing.
    const sends = [
      ...Array.from({ length: 50 }, (_, i) => batching.send(a, msg(i))),
      ...Array.from({ length: 50 }, (_, i) => batching.send(b, msg(i))),
      batching.send(missing, msg(0)),
    ];
    const settled = await Promise.allSettled(sends);
    expect(settled.slice(0, 100).every((s) => s.status === 'fulfilled')).toBe(true);
    expect(settled[100]!.status).toBe('rejected');
    await until('the producer to be idle', () => batching.pending() === 0);

    taps = await Promise.all([TopicTap.open(a), TopicTap.open(b)]);
    await until('both topics to hold their 50 messages', () =>
      taps.every((t) => new Set(t.messages.map((m) => m.headers.n)).size === 50),
    );
    const first = taps[0]!.messages.find((m) => m.headers.n === '7')!;
    expect(first.key?.toString()).toBe('k7');
    expect(first.value?.toString()).toBe('v7');
  });
});
