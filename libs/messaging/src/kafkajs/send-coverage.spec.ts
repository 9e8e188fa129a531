import { murmur2 } from './partitioner';
import { unwrittenMessages } from './send-coverage';

const partitionOfKey = (key: string, count: number) => (murmur2(key) & 0x7fffffff) % count;

describe('unwrittenMessages (a send kafkajs confirmed without writing every partition)', () => {
  const keys = Array.from({ length: 40 }, (_, i) => `job-${i}`);
  const batches = [{ topic: 'fires', messages: keys.map((key) => ({ key, value: null })) }];
  const all = [0, 1, 2, 3, 4, 5].map((partition) => ({ topicName: 'fires', partition }));

  it('finds nothing when every partition sent to is in the answer', () => {
    expect(unwrittenMessages(batches, all, () => 6)).toEqual([]);
  });

  it('returns, in order, exactly the messages of the partitions missing from the answer', () => {
    const answered = all.filter((a) => a.partition !== 2 && a.partition !== 5);
    const missing = unwrittenMessages(batches, answered, () => 6);
    const expected = keys.filter((k) => [2, 5].includes(partitionOfKey(k, 6)));
    expect(expected.length).toBeGreaterThan(0);
    expect(missing).toEqual([{ topic: 'fires', messages: expected.map((key) => ({ key, value: null })) }]);
  });

  it('uses an explicit partition, matches topics separately, and cannot check unkeyed messages', () => {
    type M = { key: string | null; partition?: number };
    const mixed: { topic: string; messages: M[] }[] = [
      { topic: 'a', messages: [{ key: null, partition: 3 }, { key: null }] },
      { topic: 'b', messages: [{ key: 'x' }] },
    ];
    const answered = [{ topicName: 'b', partition: 3 }];
    expect(unwrittenMessages(mixed, answered, () => 4)).toEqual([
      { topic: 'a', messages: [{ key: null, partition: 3 }] },
      ...(partitionOfKey('x', 4) === 3 ? [] : [{ topic: 'b', messages: [{ key: 'x' }] }]),
    ]);
  });

  it('cannot check keyed messages of a topic whose partition count is unknown', () => {
    expect(unwrittenMessages(batches, [], () => undefined)).toEqual([]);
  });
});
