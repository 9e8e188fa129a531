import { encodeRecord, type RecordFields } from './record-encoding';

// kafkajs's own record encoder, to compare bytes with.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const kafkajsRecord = require('kafkajs/src/protocol/recordBatch/record/v0') as (r: RecordFields) => {
  buffer: Buffer;
  buf: Buffer;
};

const records: [string, RecordFields][] = [
  ['no key, value or headers', {}],
  ['null key and value', { key: null, value: null, offsetDelta: 3, timestampDelta: 17 }],
  ['string key, buffer value', { key: 'job-1', value: Buffer.from('{"n":1}'), offsetDelta: 1 }],
  [
    'a fire result with headers',
    {
      key: 'tenant-a/job-42',
      value: Buffer.alloc(180, 7),
      offsetDelta: 499,
      timestampDelta: 123_456,
      headers: {
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        'tickwork-fire-id': 'job-42:17',
        'tickwork-outcome': 'SUCCEEDED',
        'tickwork-attempt': '1',
      },
    },
  ],
  [
    'multi-byte text and repeated headers',
    { key: 'ключ', value: 'zażółć', headers: { h: ['ä', 'b'], raw: Buffer.from([0, 255]) } },
  ],
  [
    'a value larger than the default buffer',
    { key: 'k', value: Buffer.alloc(5_000, 1), headers: { big: 'x'.repeat(700) } },
  ],
];

describe('record encoding with buffers sized to the record', () => {
  it.each(records)('encodes %s byte for byte as kafkajs does', (_name, record) => {
    expect(encodeRecord(record).buffer.equals(kafkajsRecord(record).buffer)).toBe(true);
  });

  it('allocates a buffer near the record size, not 512 bytes per record and per header', () => {
    const [, small] = records[3]!;
    const ours = encodeRecord(small).buffer;
    // The encoded slice shares its allocation: 512 bytes when sized, 512 (+ 4 × 512 for the headers) for kafkajs.
    expect(ours.buffer.byteLength).toBeLessThanOrEqual(2 * ours.length);
    expect(encodeRecord({ key: 'k', value: 'v' }).buffer.buffer.byteLength).toBeLessThan(64);
    expect(kafkajsRecord({ key: 'k', value: 'v' }).buf.length).toBe(512);
  });
});
