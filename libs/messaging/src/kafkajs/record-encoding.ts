/**
 * kafkajs 2.2.4 encodes every record, and every header of every record, into a fresh zero-filled
 * 512-byte buffer, whatever its size. An executor sends two records of about ten headers per fire,
 * so that was ~6 KB of zeroed garbage per fire and a large share of its allocation and GC time.
 * This is the same record encoding (v0, byte for byte) with each buffer sized to what it holds.
 * It stands in for kafkajs's module before the produce request that captures it is first loaded.
 * Uncompressed batches no longer use it (record-batch.ts writes them whole); compressed ones do.
 */

import { standInModule } from './module-stand-in';
import { PRODUCE_MODULE } from './produce-request';

type HeaderValue = string | Buffer;

/** The record fields kafkajs's produce request passes to its record encoder. */
export interface RecordFields {
  readonly offsetDelta?: number;
  readonly timestampDelta?: number;
  readonly key?: string | Buffer | null;
  readonly value?: string | Buffer | null;
  readonly headers?: Readonly<Record<string, HeaderValue | HeaderValue[] | undefined>>;
}

/** The part of kafkajs's Encoder this uses. */
interface Encoder {
  readonly buffer: Buffer;
  size(): number;
  writeVarInt(v: number): Encoder;
  writeInt8(v: number): Encoder;
  writeVarLong(v: number): Encoder;
  writeVarIntString(v: string): Encoder;
  writeVarIntBytes(v: HeaderValue | null | undefined): Encoder;
}

interface EncoderClass {
  new (initialSize?: number): Encoder;
  sizeOfVarInt(v: number): number;
  sizeOfVarLong(v: number): number;
  sizeOfVarIntBytes(v: HeaderValue | null | undefined): number;
}

const RECORD_MODULE = 'kafkajs/src/protocol/recordBatch/record/v0';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const KafkaEncoder = require('kafkajs/src/protocol/encoder') as EncoderClass;

/** One record header, measured before anything is written. */
interface SizedHeader {
  readonly key: string;
  readonly value: HeaderValue;
}

/**
 * Encodes one record (Kafka record format v0) into one buffer of about its own size: headers are
 * measured first and written in place, rather than each into a buffer of its own and copied.
 */
export function encodeRecord({
  offsetDelta = 0,
  timestampDelta = 0,
  key,
  value,
  headers = {},
}: RecordFields): Encoder {
  const sized: SizedHeader[] = [];
  let headersSize = 0;
  for (const name of Object.keys(headers)) {
    const v = headers[name];
    const keyBytes = Buffer.byteLength(name);
    const keySize = KafkaEncoder.sizeOfVarInt(keyBytes) + keyBytes;
    if (Array.isArray(v)) {
      for (const one of v) {
        sized.push({ key: name, value: one });
        headersSize += keySize + KafkaEncoder.sizeOfVarIntBytes(one);
      }
    } else {
      sized.push({ key: name, value: v as HeaderValue });
      headersSize += keySize + KafkaEncoder.sizeOfVarIntBytes(v as HeaderValue);
    }
  }
  headersSize += KafkaEncoder.sizeOfVarInt(sized.length);
  const bodySize =
    1 + // attributes
    KafkaEncoder.sizeOfVarLong(timestampDelta) +
    KafkaEncoder.sizeOfVarInt(offsetDelta) +
    KafkaEncoder.sizeOfVarIntBytes(key) +
    KafkaEncoder.sizeOfVarIntBytes(value) +
    headersSize;
  const out = new KafkaEncoder(KafkaEncoder.sizeOfVarInt(bodySize) + bodySize)
    .writeVarInt(bodySize)
    .writeInt8(0)
    .writeVarLong(timestampDelta)
    .writeVarInt(offsetDelta)
    .writeVarIntBytes(key)
    .writeVarIntBytes(value)
    .writeVarInt(sized.length);
  for (const h of sized) out.writeVarIntString(h.key).writeVarIntBytes(h.value);
  return out;
}

/**
 * Makes kafkajs's produce requests use `encodeRecord`, once per process, by placing it in the
 * module cache under the path of kafkajs's record encoder before anything loads that module (a
 * require hook, such as OpenTelemetry's, remembers the first exports it sees). False if kafkajs's
 * own encoder was loaded already; it then stays in use: still correct, slower.
 */
export function sizeRecordBuffers(): boolean {
  return standInModule(RECORD_MODULE, () => encodeRecord, [PRODUCE_MODULE]);
}
