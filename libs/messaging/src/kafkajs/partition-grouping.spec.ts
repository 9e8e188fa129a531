import { groupMessagesPerPartition } from './partition-grouping';

// kafkajs's own grouping, to compare with.
const kafkajsGrouping =
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('kafkajs/src/producer/groupMessagesPerPartition') as typeof groupMessagesPerPartition;

describe('grouping a send per partition', () => {
  const partitionMetadata = Array.from({ length: 12 }, (_, i) => ({ partitionId: i }));
  const byKey = ({ message }: { message: { key: string } }) => Number(message.key.split('-')[1]) % 12;

  it('returns what kafkajs returns: each partition its messages, in order', () => {
    const messages = Array.from({ length: 1_000 }, (_, i) => ({ key: `job-${(i * 7919) % 1_013}` }));
    const args = { topic: 't', partitionMetadata, messages, partitioner: byKey };
    expect(kafkajsGrouping).not.toBe(groupMessagesPerPartition); // jest's registry ignores the stand-in
    const ours = groupMessagesPerPartition(args);
    expect(ours).toEqual(kafkajsGrouping(args));
    expect(Object.keys(ours)).toHaveLength(12);
    expect(ours[5]!.every((m) => byKey({ message: m }) === 5)).toBe(true);
  });

  it('returns nothing when the topic has no partitions, and nothing for no messages', () => {
    expect(
      groupMessagesPerPartition({
        topic: 't',
        partitionMetadata: [],
        messages: [{ key: 'job-1' }],
        partitioner: byKey,
      }),
    ).toEqual({});
    expect(
      groupMessagesPerPartition({ topic: 't', partitionMetadata, messages: [], partitioner: byKey }),
    ).toEqual({});
  });
});
