/**
 * kafkajs 2.2.4's produce request (v3, which v4–v7 reuse) copies every message into a new object
 * (`{ ...message, offsetDelta, timestampDelta }`) before encoding it as a record: in an executor
 * that is a few percent of its CPU, two records per fire. This is the same request, byte for byte,
 * passing each record's fields to the record encoder without the copy. It stands in for kafkajs's
 * module, as record-encoding.ts does for the record encoder, and must be installed after it.
 */

import { standInModule } from './module-stand-in';
import { encodePartitionEntry, type Int64Bits } from './record-batch';

/** kafkajs's produce request module (v3; v4–v7 reuse it). */
export const PRODUCE_MODULE = 'kafkajs/src/protocol/requests/produce/v3/request';

type HeaderValue = string | Buffer;

/** A message as kafkajs's producer hands it to the produce request. */
interface ProduceMessage {
  readonly key?: string | Buffer | null;
  readonly value?: string | Buffer | null;
  readonly headers?: Readonly<Record<string, HeaderValue | HeaderValue[] | undefined>>;
  readonly timestamp?: string | number | null;
}

interface PartitionData {
  readonly partition: number;
  readonly firstSequence?: number;
  readonly messages: readonly ProduceMessage[];
}

interface TopicData {
  readonly topic: string;
  readonly partitions: readonly PartitionData[];
}

/** The arguments kafkajs's producer passes to a produce request. */
export interface ProduceRequestArgs {
  readonly acks: number;
  readonly timeout: number;
  readonly transactionalId?: string | null;
  readonly producerId?: unknown;
  readonly producerEpoch?: number;
  readonly compression?: number;
  readonly topicData: readonly TopicData[];
}

/** The part of kafkajs's Encoder used here. */
interface Encoder {
  readonly buffer: Buffer;
  writeInt16(v: number): Encoder;
  writeInt32(v: number): Encoder;
  writeString(v: string | null): Encoder;
  writeArray(v: readonly Encoder[]): Encoder;
  writeEncoder(v: Encoder): Encoder;
  size(): number;
}

interface KafkajsParts {
  readonly Encoder: new () => Encoder;
  readonly Long: { fromInt(v: number): unknown; fromValue(v: unknown): Int64Bits };
  readonly apiKey: number;
  readonly noCompression: number;
  readonly Record: (fields: {
    offsetDelta: number;
    timestampDelta: number;
    key: ProduceMessage['key'];
    value: ProduceMessage['value'];
    headers: ProduceMessage['headers'];
  }) => Encoder;
  readonly RecordBatch: (args: Record<string, unknown>) => Promise<Encoder>;
}

/* eslint-disable @typescript-eslint/no-require-imports -- kafkajs's internal modules, loaded on demand */
function kafkajsParts(): KafkajsParts {
  const base = 'kafkajs/src/protocol';
  return {
    Encoder: require(`${base}/encoder`) as KafkajsParts['Encoder'],
    Long: require('kafkajs/src/utils/long') as KafkajsParts['Long'],
    apiKey: (require(`${base}/requests/apiKeys`) as { Produce: number }).Produce,
    noCompression: (require(`${base}/message/compression`) as { Types: { None: number } }).Types.None,
    Record: require(`${base}/recordBatch/record/v0`) as KafkajsParts['Record'],
    RecordBatch: (require(`${base}/recordBatch/v0`) as { RecordBatch: KafkajsParts['RecordBatch'] })
      .RecordBatch,
  };
}
/* eslint-enable @typescript-eslint/no-require-imports */

/** kafkajs's produce request v3 factory, without the per-message copy. */
export function produceRequestV3(parts: KafkajsParts = kafkajsParts()) {
  const { Encoder: KafkaEncoder, Long, apiKey, noCompression, Record, RecordBatch } = parts;

  const encodePartition = async (
    { partition, firstSequence, messages }: PartitionData,
    compression: number,
    transactionalId: string | null,
    producerId: unknown,
    producerEpoch: number,
  ): Promise<Encoder> => {
    const dateNow = Date.now();
    // As kafkajs does: the given timestamps, sorted as it sorts them (as strings).
    const given = messages.map((m) => m.timestamp).filter((t) => t != null) as (string | number)[];
    given.sort();
    const timestamps = given.length === 0 ? [dateNow] : given;
    const firstTimestamp = timestamps[0]!;
    const maxTimestamp = timestamps[timestamps.length - 1]!;
    if (compression === noCompression) {
      const entry = encodePartitionEntry(messages, {
        partition,
        firstTimestamp: Long.fromValue(firstTimestamp),
        maxTimestamp: Long.fromValue(maxTimestamp),
        baseTimestamp: Number(firstTimestamp),
        now: dateNow,
        producerId: Long.fromValue(producerId),
        producerEpoch,
        firstSequence: firstSequence ?? 0,
        transactional: !!transactionalId,
      });
      // What kafkajs's Encoder#writeArray reads of an encoder: `buf`, and `buffer` to copy.
      return { buf: entry, buffer: entry } as unknown as Encoder;
    }
    // Compressed: kafkajs's record batch, which compresses the records.
    const records = new Array<Encoder>(messages.length);
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      records[i] = Record({
        offsetDelta: i,
        timestampDelta: Number(m.timestamp || dateNow) - Number(firstTimestamp),
        key: m.key,
        value: m.value,
        headers: m.headers,
      });
    }
    const recordBatch = await RecordBatch({
      compression,
      records,
      firstTimestamp,
      maxTimestamp,
      producerId,
      producerEpoch,
      firstSequence,
      transactional: !!transactionalId,
      lastOffsetDelta: records.length - 1,
    });
    return new KafkaEncoder().writeInt32(partition).writeInt32(recordBatch.size()).writeEncoder(recordBatch);
  };

  return ({
    acks,
    timeout,
    transactionalId = null,
    producerId = Long.fromInt(-1),
    producerEpoch = 0,
    compression = noCompression,
    topicData,
  }: ProduceRequestArgs) => ({
    apiKey,
    apiVersion: 3,
    apiName: 'Produce',
    expectResponse: () => acks !== 0,
    encode: async () => {
      // The body written once into a buffer of its exact size: kafkajs's encoders start at 512
      // bytes and double, copying, and each level of the request copies the one below it.
      const txn = transactionalId == null ? null : Buffer.from(transactionalId, 'utf8');
      let size = 2 + (txn?.length ?? 0) + 2 + 4 + 4;
      const topics: { name: Buffer; entries: Buffer[] }[] = [];
      for (const { topic, partitions } of topicData) {
        const name = Buffer.from(topic, 'utf8');
        const entries: Buffer[] = [];
        size += 2 + name.length + 4;
        for (const p of partitions) {
          const entry = (await encodePartition(p, compression, transactionalId, producerId, producerEpoch))
            .buffer;
          entries.push(entry);
          size += entry.length;
        }
        topics.push({ name, entries });
      }
      const body = Buffer.allocUnsafe(size);
      let at = writeString(body, 0, txn);
      at = body.writeInt16BE(acks, at);
      at = body.writeInt32BE(timeout, at);
      at = body.writeInt32BE(topics.length, at);
      for (const { name, entries } of topics) {
        at = writeString(body, at, name);
        at = body.writeInt32BE(entries.length, at);
        for (const entry of entries) at += entry.copy(body, at);
      }
      // What kafkajs's Encoder#writeEncoder reads of an encoder: `buf`, and `buffer` to copy.
      return { buf: body, buffer: body } as unknown as Encoder;
    },
  });
}

/** A protocol string (int16 length, -1 for null, then UTF-8) at `at`; returns the offset after it. */
function writeString(buf: Buffer, at: number, s: Buffer | null): number {
  if (s === null) return buf.writeInt16BE(-1, at);
  at = buf.writeInt16BE(s.length, at);
  return at + s.copy(buf, at);
}

/**
 * Makes kafkajs's producers use `produceRequestV3`, once per process, by placing it in the module
 * cache under kafkajs's path before anything loads that module. Install after the record encoder
 * (it loads the record module). False if kafkajs's own request was loaded already: still correct.
 */
export function leanProduceRequests(): boolean {
  return standInModule(PRODUCE_MODULE, () => produceRequestV3());
}
