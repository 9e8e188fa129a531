/**
 * One partition's entry of a produce request: an uncompressed record batch (Kafka message format
 * v2), written straight into one buffer. kafkajs 2.2.4 builds the same bytes from an encoder per
 * record, a small buffer per variable-length integer and three copies of the batch; in an executor
 * that allocation was the largest share of its garbage. The bytes are kafkajs's, byte for byte
 * (produce-request.spec.ts compares them), so the broker sees no difference.
 */

import { crc32c } from './crc32c';

type HeaderValue = string | Buffer;

/** A message as kafkajs's producer hands it to the produce request. */
export interface BatchMessage {
  readonly key?: string | Buffer | null;
  readonly value?: string | Buffer | null;
  readonly headers?: Readonly<Record<string, HeaderValue | HeaderValue[] | undefined>>;
  readonly timestamp?: string | number | null;
}

/** A 64-bit integer as its two 32-bit halves (kafkajs's Long has this shape). */
export interface Int64Bits {
  getHighBits(): number;
  getLowBits(): number;
}

/** The batch-level fields of a record batch. */
export interface BatchFields {
  readonly partition: number;
  readonly firstTimestamp: Int64Bits;
  readonly maxTimestamp: Int64Bits;
  /** Each record's timestamp is written as its distance from this one. */
  readonly baseTimestamp: number;
  /** The timestamp of a message that has none. */
  readonly now: number;
  readonly producerId: Int64Bits;
  readonly producerEpoch: number;
  readonly firstSequence: number;
  readonly transactional: boolean;
}

const MAGIC = 2;
const TRANSACTIONAL = 16;
// attributes … record count: the batch body before its records.
const BODY_HEADER = 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4;
// partition, record-set size, first offset, batch length, leader epoch, magic, crc.
const ENTRY_HEADER = 4 + 4 + 8 + 4 + 4 + 1 + 4;

const zigzag32 = (v: number) => (v << 1) ^ (v >> 31);
// Exact for |v| < 2^52, far beyond any timestamp distance.
const zigzag64 = (v: number) => (v >= 0 ? v * 2 : -v * 2 - 1);

function uvarintSize(z: number): number {
  let n = 1;
  while ((z & 0xffffff80) !== 0) {
    n++;
    z >>>= 7;
  }
  return n;
}

function uvarlongSize(z: number): number {
  let n = 1;
  while (z >= 128) {
    n++;
    z = Math.floor(z / 128);
  }
  return n;
}

function writeUVarInt(buf: Buffer, o: number, z: number): number {
  while ((z & 0xffffff80) !== 0) {
    buf[o++] = (z & 0x7f) | 0x80;
    z >>>= 7;
  }
  buf[o++] = z & 0x7f;
  return o;
}

function writeUVarLong(buf: Buffer, o: number, z: number): number {
  while (z >= 128) {
    buf[o++] = z % 128 | 0x80;
    z = Math.floor(z / 128);
  }
  buf[o++] = z;
  return o;
}

/** Bytes of a key, value or header value as kafkajs writes it (anything else as its string). */
const bytesOf = (v: unknown): string | Buffer | null =>
  v == null ? null : typeof v === 'string' || Buffer.isBuffer(v) ? v : String(v);

/**
 * The sizes the writing pass needs, measured once: per record its body size, and the byte length
 * of each string in the order the writer meets them.
 */
class Measure {
  readonly bodies: number[] = [];
  readonly strings: number[] = [];

  /** Size of a length-prefixed byte field (-1 for null), remembering a string's byte length. */
  field(v: string | Buffer | null): number {
    if (v === null) return 1;
    let n: number;
    if (typeof v === 'string') {
      n = Buffer.byteLength(v);
      this.strings.push(n);
    } else n = v.length;
    return uvarintSize(zigzag32(n)) + n;
  }
}

/** Writes a length-prefixed byte field; `len` is the string's measured byte length. */
function writeField(buf: Buffer, o: number, v: string | Buffer | null, len: number): number {
  if (v === null) return writeUVarInt(buf, o, 1); // -1
  if (typeof v === 'string') {
    o = writeUVarInt(buf, o, zigzag32(len));
    return o + buf.write(v, o, len, 'utf8');
  }
  o = writeUVarInt(buf, o, zigzag32(v.length));
  return o + v.copy(buf, o);
}

function headerEntries(headers: BatchMessage['headers']): [string, string | Buffer | null][] {
  const out: [string, string | Buffer | null][] = [];
  if (!headers) return out;
  for (const name of Object.keys(headers)) {
    const v = headers[name];
    if (Array.isArray(v)) for (const one of v) out.push([name, bytesOf(one)]);
    else out.push([name, bytesOf(v)]);
  }
  return out;
}

/** The partition's entry of a produce request (v3): partition, record-set size, record batch. */
export function encodePartitionEntry(messages: readonly BatchMessage[], f: BatchFields): Buffer {
  const measure = new Measure();
  const headers = messages.map((m) => headerEntries(m.headers));
  const deltas = new Array<number>(messages.length);
  let recordsSize = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    deltas[i] = Number(m.timestamp || f.now) - f.baseTimestamp;
    let body = 1 + uvarlongSize(zigzag64(deltas[i]!)) + uvarintSize(zigzag32(i));
    body += measure.field(bytesOf(m.key)) + measure.field(bytesOf(m.value));
    const hs = headers[i]!;
    body += uvarintSize(zigzag32(hs.length));
    for (const [name, value] of hs) body += measure.field(name) + measure.field(value);
    measure.bodies.push(body);
    recordsSize += uvarintSize(zigzag32(body)) + body;
  }

  const bodySize = BODY_HEADER + recordsSize;
  const buf = Buffer.allocUnsafe(ENTRY_HEADER + bodySize);
  const batchLength = 4 + 1 + 4 + bodySize; // leader epoch, magic, crc, body
  buf.writeInt32BE(f.partition, 0);
  buf.writeInt32BE(8 + 4 + batchLength, 4);
  buf.writeInt32BE(0, 8); // first offset: 0
  buf.writeInt32BE(0, 12);
  buf.writeInt32BE(batchLength, 16);
  buf.writeInt32BE(0, 20); // partition leader epoch
  buf.writeInt8(MAGIC, 24);
  const crcAt = 25;
  let o = ENTRY_HEADER;
  const bodyStart = o;
  buf.writeInt16BE(f.transactional ? TRANSACTIONAL : 0, o);
  buf.writeInt32BE(messages.length - 1, o + 2); // last offset delta
  buf.writeInt32BE(f.firstTimestamp.getHighBits(), o + 6);
  buf.writeInt32BE(f.firstTimestamp.getLowBits(), o + 10);
  buf.writeInt32BE(f.maxTimestamp.getHighBits(), o + 14);
  buf.writeInt32BE(f.maxTimestamp.getLowBits(), o + 18);
  buf.writeInt32BE(f.producerId.getHighBits(), o + 22);
  buf.writeInt32BE(f.producerId.getLowBits(), o + 26);
  buf.writeInt16BE(f.producerEpoch, o + 30);
  buf.writeInt32BE(f.firstSequence, o + 32);
  buf.writeInt32BE(messages.length, o + 36);
  o += BODY_HEADER;

  let s = 0; // next measured string length
  const str = (v: string | Buffer | null) => (typeof v === 'string' ? measure.strings[s++]! : 0);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    o = writeUVarInt(buf, o, zigzag32(measure.bodies[i]!));
    buf[o++] = 0; // record attributes
    o = writeUVarLong(buf, o, zigzag64(deltas[i]!));
    o = writeUVarInt(buf, o, zigzag32(i));
    const key = bytesOf(m.key);
    o = writeField(buf, o, key, str(key));
    const value = bytesOf(m.value);
    o = writeField(buf, o, value, str(value));
    const hs = headers[i]!;
    o = writeUVarInt(buf, o, zigzag32(hs.length));
    for (const [name, v] of hs) {
      o = writeField(buf, o, name, str(name));
      o = writeField(buf, o, v, str(v));
    }
  }
  buf.writeUInt32BE(crc32c(buf, bodyStart, o), crcAt);
  return buf;
}
