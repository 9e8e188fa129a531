import type { OutboundMessage } from '../ports';
import { chunkSend, recordBytesBound, type TopicMessages } from './send-chunks';

// kafkajs's record encoder, to measure what a record really takes.
/* eslint-disable @typescript-eslint/no-require-imports */
const Record = require('kafkajs/src/protocol/recordBatch/record/v0') as (fields: object) => {
  buffer: Buffer;
};
const Encoder = require('kafkajs/src/protocol/encoder') as { sizeOfVarInt(n: number): number };
/* eslint-enable @typescript-eslint/no-require-imports */

function encodedSize(m: OutboundMessage): number {
  const body = Record({
    offsetDelta: 1_999_999,
    timestampDelta: 86_400_000,
    key: m.key,
    value: m.value,
    headers: m.headers,
  }).buffer;
  // The record's body, preceded by its length as a varint.
  return body.length + Encoder.sizeOfVarInt(body.length);
}

const message = (i: number, valueBytes = 400): OutboundMessage => ({
  key: `job-${i}`,
  value: Buffer.alloc(valueBytes, 7),
  headers: { 'tickwork-fire-id': `fire-${i}`, 'tickwork-attempt': '1' },
});

describe('cutting a send into requests', () => {
  it('bounds what a record takes once encoded, for ASCII and non-ASCII keys and headers', () => {
    const cases: OutboundMessage[] = [
      message(1),
      { key: null, value: null },
      { key: 'zürich-ジョブ', value: Buffer.alloc(70_000), headers: { 'trace-état': 'ü'.repeat(300) } },
      { key: Buffer.alloc(200), value: Buffer.alloc(3), headers: {} },
    ];
    for (const m of cases) expect(recordBytesBound(m)).toBeGreaterThanOrEqual(encodedSize(m));
    // Close to the truth for a fire-like message, so requests are not cut much smaller than needed.
    expect(recordBytesBound(message(1))).toBeLessThan(encodedSize(message(1)) + 48);
  });

  it('keeps a send that fits whole, as one request with its topics', () => {
    const batches: TopicMessages[] = [
      { topic: 'a', messages: [message(1), message(2)] },
      { topic: 'b', messages: [message(3)] },
    ];
    expect(chunkSend(batches, 1_000_000)).toEqual([batches]);
  });

  it('cuts a large send into requests under the bound, keeping every message in order', () => {
    const a = Array.from({ length: 5_000 }, (_, i) => message(i));
    const b = Array.from({ length: 700 }, (_, i) => message(10_000 + i, 900));
    const chunks = chunkSend(
      [
        { topic: 'a', messages: a },
        { topic: 'b', messages: b },
      ],
      100_000,
    );
    expect(chunks.length).toBeGreaterThan(25);
    for (const chunk of chunks) {
      const bytes = chunk.flatMap((t) => t.messages).reduce((n, m) => n + recordBytesBound(m), 0);
      expect(bytes).toBeLessThanOrEqual(100_000);
      expect(chunk.every((t) => t.messages.length > 0)).toBe(true);
    }
    const flat = chunks.flat();
    expect(flat.filter((t) => t.topic === 'a').flatMap((t) => t.messages)).toEqual(a);
    expect(flat.filter((t) => t.topic === 'b').flatMap((t) => t.messages)).toEqual(b);
    // Topic a's messages all come before b's, as they were given.
    expect(flat.findIndex((t) => t.topic === 'b')).toBe(flat.filter((t) => t.topic === 'a').length);
  });

  it('sends a message larger than the bound alone, between its neighbours', () => {
    const big = message(2, 5_000);
    const chunks = chunkSend([{ topic: 'a', messages: [message(1), big, message(3)] }], 1_000);
    expect(chunks.map((c) => c.flatMap((t) => t.messages))).toEqual([[message(1)], [big], [message(3)]]);
  });

  it('makes no request of an empty send', () => {
    expect(chunkSend([], 1_000)).toEqual([]);
    expect(chunkSend([{ topic: 'a', messages: [] }], 1_000)).toEqual([]);
  });
});
