import { decodeRecord, type BatchContext, type RecordInput } from './record-decoder';

// kafkajs's own record encoder and decoder, to compare with (jest's registry ignores the stand-in).
/* eslint-disable @typescript-eslint/no-require-imports */
const Decoder = require('kafkajs/src/protocol/decoder') as new (buffer: Buffer) => RecordInput;
const encodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0') as (r: object) => {
  buffer: Buffer;
};
const kafkajsDecodeRecord =
  require('kafkajs/src/protocol/recordBatch/record/v0/decoder') as typeof decodeRecord;
/* eslint-enable @typescript-eslint/no-require-imports */

interface RecordSpec {
  offsetDelta: number;
  timestampDelta: number | bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, string | Buffer | null | (string | Buffer | null)[]>;
}

/** A record's body as the record-batch decoder hands it over: its own decoder, past the length. */
function bodyOf(spec: RecordSpec): () => RecordInput {
  const { buffer } = encodeRecord(
    typeof spec.timestampDelta === 'bigint'
      ? { ...spec, timestampDelta: spec.timestampDelta.toString() }
      : spec,
  );
  return () => {
    const body = new Decoder(buffer).readVarIntBytes()!;
    return new Decoder(body);
  };
}

/** Decodes with kafkajs and with ours; both must return the same record and read the same bytes. */
function both(spec: RecordSpec, context: BatchContext) {
  const body = bodyOf(spec);
  const theirsInput = body();
  const oursInput = body();
  const theirs = kafkajsDecodeRecord(theirsInput, context);
  const ours = decodeRecord(oursInput, context);
  expect(oursInput.offset).toBe(theirsInput.offset);
  expect(oursInput.offset).toBe(oursInput.buffer.length);
  return { theirs, ours };
}

const context = (over: Partial<BatchContext> = {}): BatchContext => ({
  firstOffset: '1234567',
  firstTimestamp: '1764600000000',
  magicByte: 2,
  isControlBatch: false,
  timestampType: 0,
  maxTimestamp: '1764600009999',
  ...over,
});

describe('decoding a fetched record', () => {
  it('returns what kafkajs returns, for keys, values, headers and deltas of every size', () => {
    const ctx = context();
    const specs: RecordSpec[] = [
      { offsetDelta: 0, timestampDelta: 0, key: null, value: null },
      { offsetDelta: 1, timestampDelta: 5, key: Buffer.from('job-1'), value: Buffer.alloc(200, 7) },
      { offsetDelta: 300, timestampDelta: -5, key: Buffer.from('ключ'), value: Buffer.from('{"a":1}') },
      { offsetDelta: 70_000, timestampDelta: 2 ** 40 + 3, key: null, value: Buffer.alloc(70_000, 1) },
      // Beyond 49 bits: read through kafkajs's Long.
      { offsetDelta: 2, timestampDelta: 2n ** 50n + 17n, key: null, value: null },
      { offsetDelta: 3, timestampDelta: -(2n ** 55n), key: null, value: null },
      {
        offsetDelta: 4,
        timestampDelta: 12,
        key: Buffer.from('k'),
        value: Buffer.from('v'),
        headers: {
          'tickwork-job-id': 'job-1',
          'tickwork-fence-token': '42',
          empty: '',
          bytes: Buffer.from([0, 255, 1]),
          repeated: ['a', 'b', 'c'],
          twice: ['x', 'y'],
          ünïcode: 'välue',
        },
      },
    ];
    for (const spec of specs) {
      const { theirs, ours } = both(spec, ctx);
      expect(ours).toEqual(theirs);
      expect(Object.keys(ours.headers)).toEqual(Object.keys(theirs.headers));
    }
  });

  it('matches kafkajs for base offsets and timestamps that are not exact numbers, and for no timestamp', () => {
    const spec: RecordSpec = { offsetDelta: 9, timestampDelta: 250, key: null, value: Buffer.from('x') };
    for (const ctx of [
      context({ firstOffset: '9007199254740993' }), // 2^53 + 1
      context({ firstOffset: '9007199254740990' }), // exact, but the sum is not
      context({ firstTimestamp: '-1' }),
      context({ firstOffset: '0', firstTimestamp: '0' }),
      context({ firstTimestamp: '9223372036854775000' }),
    ]) {
      const { theirs, ours } = both(spec, ctx);
      expect(ours).toEqual(theirs);
    }
  });

  it('takes the batch’s max timestamp for log-append time, as kafkajs does', () => {
    const spec: RecordSpec = { offsetDelta: 1, timestampDelta: 77, key: null, value: null };
    const { theirs, ours } = both(spec, context({ timestampType: 1 }));
    expect(ours.timestamp).toBe('1764600009999');
    expect(ours).toEqual(theirs);
  });

  it('keeps each batch’s own base when batches alternate', () => {
    const a = context({ firstOffset: '100', firstTimestamp: '1000' });
    const b = context({ firstOffset: '5000', firstTimestamp: '2000' });
    const spec: RecordSpec = { offsetDelta: 2, timestampDelta: 3, key: null, value: null };
    expect(
      [a, b, a, b].map((ctx) => decodeRecord(bodyOf(spec)(), ctx)).map((r) => [r.offset, r.timestamp]),
    ).toEqual([
      ['102', '1003'],
      ['5002', '2003'],
      ['102', '1003'],
      ['5002', '2003'],
    ]);
  });

  it('keeps headers named after Object.prototype members as plain headers', () => {
    const spec: RecordSpec = {
      offsetDelta: 0,
      timestampDelta: 0,
      key: null,
      value: null,
      headers: { toString: 'a', constructor: ['b', 'c'], ['__proto__']: 'd' },
    };
    const record = decodeRecord(bodyOf(spec)(), context());
    expect(record.headers['toString']).toEqual(Buffer.from('a'));
    expect(record.headers['constructor']).toEqual([Buffer.from('b'), Buffer.from('c')]);
    expect(Object.getOwnPropertyDescriptor(record.headers, '__proto__')?.value).toEqual(Buffer.from('d'));
    expect(Object.getPrototypeOf(record.headers)).toBe(Object.prototype);
  });
});
