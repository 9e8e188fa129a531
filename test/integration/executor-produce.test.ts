/**
 * The executor's batching producer against real Kafka: sends from concurrent fires to several
 * topics go out together, and a topic that does not exist fails only its own messages.
 */
import { BatchingProducer, KafkaRunner } from '@tickwork/execution';
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

  it('publishes the Kafka targets of a group of fires together; each call gets its own outcome', async () => {
    const runner = new KafkaRunner(new BatchingProducer(producer), ['tickwork.fires']);
    const request = (n: number) => ({
      jobId: `job-${n}`,
      tenantId: 'acme',
      fenceToken: n,
      fireId: `job-${n}:${n}`,
      scheduledFor: new Date(),
      attempt: 1,
      body: JSON.stringify({ n }),
    });
    const to = (topic: string) => ({ type: 'kafka' as const, topic, key: null, headers: { via: 'many' } });
    const outcomes = await runner.runMany([
      { target: to(a), request: request(1) },
      { target: to('tickwork.fires'), request: request(2) },
      { target: to(b), request: request(3) },
      { target: to('not a topic!'), request: request(4) },
      { target: to(missing), request: request(5) },
      { target: to(a), request: request(6) },
    ]);
    expect(outcomes.map((o) => o.ok)).toEqual([true, false, true, false, false, true]);
    expect(outcomes[1]).toMatchObject({ refused: true, retryable: false });
    expect(outcomes[3]!.error).toMatch(/^INVALID_TARGET/);
    expect(outcomes[4]).toMatchObject({ retryable: true });
    expect(outcomes[4]!.error).toMatch(/^KAFKA: /);

    const [tapA, tapB] = taps.length ? taps : await Promise.all([TopicTap.open(a), TopicTap.open(b)]);
    await until(
      'the group to arrive',
      () =>
        ['1', '6'].every((n) => tapA!.messages.some((m) => m.headers['tickwork-fence-token'] === n)) &&
        tapB!.messages.some((m) => m.headers['tickwork-fence-token'] === '3'),
    );
    const six = tapA!.messages.find((m) => m.headers['tickwork-fence-token'] === '6')!;
    expect(six.key?.toString()).toBe('job-6');
    expect(JSON.parse(six.value!.toString())).toEqual({ n: 6 });
    expect(six.headers).toMatchObject({
      via: 'many',
      'tickwork-fire-id': 'job-6:6',
      'tickwork-attempt': '1',
    });
  });
});
