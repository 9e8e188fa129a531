import { javaCompatiblePartitioner, murmur2 } from './partitioner';

// kafkajs's Java-compatible murmur2 and partitioner, to compare with.
/* eslint-disable @typescript-eslint/no-require-imports */
const kafkajsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2') as (
  k: string | Buffer,
) => number;
const { DefaultPartitioner } = require('kafkajs').Partitioners as {
  DefaultPartitioner: typeof javaCompatiblePartitioner;
};
/* eslint-enable @typescript-eslint/no-require-imports */

const partitions = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    partitionId: i,
    leader: 1,
    replicas: [1],
    isr: [1],
    partitionErrorCode: 0,
  }));

describe('Java-compatible partitioner', () => {
  it("hashes keys as Kafka's Java client does (known values)", () => {
    // From Kafka's UtilsTest.testMurmur2.
    expect(murmur2(Buffer.from('21'))).toBe(-973932308);
    expect(murmur2(Buffer.from('foobar'))).toBe(-790332482);
    expect(murmur2(Buffer.from('a-little-bit-long-string'))).toBe(-985981536);
    expect(murmur2(Buffer.from('a-little-bit-longer-string'))).toBe(-1486304829);
    expect(murmur2(Buffer.from('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'))).toBe(-58897971);
    expect(murmur2(Buffer.from([0x61, 0x62, 0x63]))).toBe(479470107);
  });

  it('agrees with kafkajs on every key length from 0 to 40, non-ASCII and buffer keys', () => {
    let seed = 11;
    const rnd = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % n;
    const keys: (string | Buffer)[] = ['ключ', 'zażółć-😀', 'x'.repeat(300)];
    for (let len = 0; len <= 40; len++)
      for (let j = 0; j < 5; j++) {
        keys.push(Array.from({ length: len }, () => String.fromCharCode(32 + rnd(95))).join(''));
        keys.push(Buffer.from(Array.from({ length: len }, () => rnd(256))));
      }
    for (const key of keys) expect(murmur2(key)).toBe(kafkajsMurmur2(key));
  });

  it('picks the same partition as kafkajs for keyed messages, and honours an explicit one', () => {
    const ours = javaCompatiblePartitioner();
    const theirs = DefaultPartitioner();
    for (const n of [1, 3, 12, 64])
      for (let i = 0; i < 500; i++) {
        const args = {
          topic: 't',
          partitionMetadata: partitions(n),
          message: { key: `tenant-${i}/job-${i * 7919}`, value: null },
        };
        expect(ours(args)).toBe(theirs(args));
      }
    expect(
      ours({
        topic: 't',
        partitionMetadata: partitions(12),
        message: { key: 'k', partition: 7, value: null },
      }),
    ).toBe(7);
  });

  it('spreads unkeyed messages round robin over partitions with a leader', () => {
    const ours = javaCompatiblePartitioner();
    const meta = partitions(4).map((p) => (p.partitionId === 2 ? { ...p, leader: -1 } : p));
    const seen = Array.from({ length: 9 }, () =>
      ours({ topic: 't', partitionMetadata: meta, message: { value: null } }),
    );
    expect(new Set(seen)).toEqual(new Set([0, 1, 3]));
    for (let i = 3; i < seen.length; i++) expect(seen[i]).toBe(seen[i - 3]);
  });
});
