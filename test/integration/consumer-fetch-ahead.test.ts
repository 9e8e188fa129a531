/**
 * A fetch-ahead consumer (ConsumerOptions.fetchAhead) on a real broker: it keeps fetching a
 * partition past messages that are not marked processed, commits only what was marked (the next
 * offset after the mark), commits its marks before leaving the group, and never commits a mark of
 * a partition that a rebalance took away from it.
 */
import { randomUUID } from 'node:crypto';
import type { InboundBatch, MessageBus, MessageConsumer, TopicAdmin } from '@tickwork/messaging';
import { eventually } from '../support/env';
import { testKafkaBus } from '../support/kafka';

describe('fetch-ahead consumer', () => {
  let bus: MessageBus;
  let admin: TopicAdmin;
  let topic: string;
  let groupId: string;
  const consumers: MessageConsumer[] = [];

  beforeEach(async () => {
    bus = testKafkaBus('fetch-ahead-test');
    admin = await bus.admin();
    topic = `test.fetch-ahead.${randomUUID()}`;
    groupId = `fetch-ahead-${randomUUID()}`;
    await admin.createTopics([{ name: topic, partitions: 2, replicationFactor: 1, configs: {} }]);
  });

  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.stop().catch(() => undefined)));
    await admin.disconnect();
  });

  /** A member that records every batch and its assignment, and marks nothing by itself. */
  async function member(): Promise<{
    consumer: MessageConsumer;
    batches: InboundBatch[];
    assignment: () => number[] | undefined;
  }> {
    const consumer = await bus.consumer({
      groupId,
      topics: [topic],
      fromBeginning: true,
      fetchAhead: true,
      sessionTimeoutMs: 6_000,
      heartbeatIntervalMs: 300,
      maxWaitTimeMs: 300,
    });
    consumers.push(consumer);
    const batches: InboundBatch[] = [];
    let assigned: number[] | undefined;
    await consumer.start({
      onAssignment: (a) => void (assigned = [...(a.get(topic) ?? [])]),
      onBatch: async (batch) => void batches.push(batch),
    });
    return { consumer, batches, assignment: () => assigned };
  }

  async function produce(partition: number, ...values: string[]): Promise<void> {
    const producer = await bus.producer();
    try {
      await producer.send([
        { topic, messages: values.map((v) => ({ key: null, value: Buffer.from(v), partition })) },
      ]);
    } finally {
      await producer.disconnect();
    }
  }

  const committed = async (partition: number): Promise<string> =>
    (await admin.groupLag(groupId, topic)).find((p) => p.partition === partition)?.committed ?? '-1';
  const offsetsOf = (batches: InboundBatch[], partition: number) =>
    batches.filter((b) => b.partition === partition).flatMap((b) => b.messages.map((m) => m.offset));
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('fetches on past unmarked messages and commits only what was marked', async () => {
    const a = await member();
    await eventually('the assignment', () => (a.assignment()?.length === 2 ? true : undefined), 30_000);
    await produce(0, 'm0', 'm1', 'm2');
    await eventually('the first batch', () => (offsetsOf(a.batches, 0).length === 3 ? true : undefined));
    // Nothing is marked, yet the next messages of the partition are fetched.
    await produce(0, 'm3', 'm4');
    await eventually('the later messages', () => (offsetsOf(a.batches, 0).length === 5 ? true : undefined));
    expect(offsetsOf(a.batches, 0)).toEqual(['0', '1', '2', '3', '4']);
    await sleep(2_500); // more than the commit interval
    expect(await committed(0)).toBe('-1');

    a.batches[0]!.markProcessed('1');
    await eventually(
      'the commit of the mark',
      async () => ((await committed(0)) === '2' ? true : undefined),
      10_000,
    );
    // A mark made just before stopping is committed before the member leaves.
    a.batches.at(-1)!.markProcessed('3');
    await a.consumer.stop();
    consumers.splice(consumers.indexOf(a.consumer), 1);
    expect(await committed(0)).toBe('4');
  });

  it('never commits a mark of a partition a rebalance took away', async () => {
    const a = await member();
    await eventually('the assignment', () => (a.assignment()?.length === 2 ? true : undefined), 30_000);
    await produce(0, 'p0-0', 'p0-1');
    await produce(1, 'p1-0', 'p1-1');
    await eventually('both partitions', () =>
      offsetsOf(a.batches, 0).length === 2 && offsetsOf(a.batches, 1).length === 2 ? true : undefined,
    );
    const held = [...a.batches];

    // A second member joins: each keeps one partition.
    const b = await member();
    await eventually(
      'the partitions to be shared',
      () => (a.assignment()?.length === 1 && b.assignment()?.length === 1 ? true : undefined),
      30_000,
    );
    const kept = a.assignment()![0]!;
    const lost = 1 - kept;
    // The old member marks everything it fetched, through the batches it took before the rebalance.
    for (const batch of held) batch.markProcessed(batch.messages.at(-1)!.offset);
    await eventually(
      'the commit of the partition it kept',
      async () => ((await committed(kept)) === '2' ? true : undefined),
      10_000,
    );
    await sleep(2_500);
    expect(await committed(lost)).toBe('-1');
    // The new owner read the lost partition from the start.
    await eventually('the new owner to fetch it', () =>
      offsetsOf(b.batches, lost).length >= 2 ? true : undefined,
    );
    expect(offsetsOf(b.batches, lost).slice(0, 2)).toEqual(['0', '1']);
  });
});
