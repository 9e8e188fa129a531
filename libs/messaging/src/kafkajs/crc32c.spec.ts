import { crc32c } from './crc32c';

// kafkajs's byte-at-a-time CRC-32C, to compare with.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const kafkajsCrc32c = require('kafkajs/src/protocol/recordBatch/crc32C') as (b: Buffer) => number;

describe('crc32c', () => {
  it('gives the standard check value of "123456789"', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });

  it('agrees with kafkajs on every length from 0 to 70 and on large buffers', () => {
    let seed = 7;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 16) & 0xff;
    for (const n of [...Array.from({ length: 71 }, (_, i) => i), 4_093, 65_536]) {
      const b = Buffer.from(Array.from({ length: n }, rnd));
      expect(crc32c(b)).toBe(kafkajsCrc32c(b));
    }
  });

  it('checksums only the given range', () => {
    const b = Buffer.from('xx123456789yy');
    expect(crc32c(b, 2, 11)).toBe(0xe3069283);
  });
});
