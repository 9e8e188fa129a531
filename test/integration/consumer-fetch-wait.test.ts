/**
 * The messaging lib's two fetch waits, on a real broker: an idle consumer long-polls with the
 * long wait and still gets a new message at once, and a partition resumed after a pause is
 * fetched within the short wait rather than after the long fetch in flight for the others.
 */
import { randomUUID } from 'node:crypto';
import { type InboundMessage, type MessageBus, type MessageConsumer } from '@tickwork/messaging';
import { testKafkaBus } from '../support/kafka';

const LONG_WAIT_MS = 4_000;
const SHORT_WAIT_MS = 100;

async function until(what: string, ok: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('consumer fetch waits', () => {
  let bus: MessageBus;
  let topic: string;
  let consumer: MessageConsumer | undefined;
  const received: { message: InboundMessage; at: number }[] = [];
  let onMessage: (m: InboundMessage) => void = () => undefined;

  beforeEach(async () => {
    bus = testKafkaBus('fetch-wait-test');
    topic = `test.fetch-wait.${randomUUID()}`;
    const admin = await bus.admin();
    await admin.createTopics([{ name: topic, partitions: 2, replicationFactor: 1, configs: {} }]);
    await admin.disconnect();
    received.length = 0;
    onMessage = () => undefined;
  });

  afterEach(async () => {
    await consumer?.stop();
    consumer = undefined;
  });

  async function consume(): Promise<MessageConsumer> {
    const c = await bus.consumer({
      groupId: `fetch-wait-${randomUUID()}`,
      topics: [topic],
      fromBeginning: true,
      maxWaitTimeMs: LONG_WAIT_MS,
      pausedMaxWaitTimeMs: SHORT_WAIT_MS,
    });
    let assigned = false;
    await c.start({
      onAssignment: () => void (assigned = true),
      onBatch: async (batch) => {
        for (const m of batch.messages) {
          received.push({ message: m, at: Date.now() });
          onMessage(m);
          batch.markProcessed(m.offset);
        }
      },
    });
    await until('the assignment', () => assigned, 30_000);
    return c;
  }

  async function produce(partition: number, value: string): Promise<void> {
    const producer = await bus.producer();
    try {
      await producer.send([{ topic, messages: [{ key: null, value: Buffer.from(value), partition }] }]);
    } finally {
      await producer.disconnect();
    }
  }

  it('answers an idle long poll as soon as a message arrives', async () => {
    consumer = await consume();
    // Let the consumer settle into its idle long polls.
    await new Promise((r) => setTimeout(r, 1_000));
    const sent = Date.now();
    await produce(1, 'idle');
    await until('the message', () => received.length === 1, 10_000);
    expect(received[0]!.message.value!.toString()).toBe('idle');
    expect(received[0]!.at - sent).toBeLessThan(LONG_WAIT_MS / 3);
  });

  it('fetches a resumed partition within the short wait while the others long-poll', async () => {
    const c = await consume();
    consumer = c;
    // The first message pauses its partition, as the executor's flow control does.
    onMessage = (m) => {
      if (m.value!.toString() === 'first') c.pause(topic, [m.partition]);
    };
    await produce(0, 'first');
    await until('the first message', () => received.length === 1, 10_000);
    // Partition 1 alone is fetched now, with no data: that fetch is in flight when 0 resumes.
    await new Promise((r) => setTimeout(r, 500));
    await produce(0, 'second');
    const resumed = Date.now();
    c.resume(topic, [0]);
    await until('the second message', () => received.length === 2, 15_000);
    expect(received[1]!.message.value!.toString()).toBe('second');
    // Without the short wait, partition 0 would wait out partition 1's long poll (4 s).
    expect(received[1]!.at - resumed).toBeLessThan(1_500);
  });
});
