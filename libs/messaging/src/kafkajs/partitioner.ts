/**
 * The partitioner of Kafka's Java client (and kafkajs's default): a keyed message goes to
 * murmur2(key) mod partitions. kafkajs computes that murmur2 with its 64-bit Long emulation and a
 * buffer per key, a few percent of an executor's CPU; the hash is 32-bit arithmetic, so
 * `Math.imul` gives the same partition for every key (partitioner.spec.ts checks it against kafkajs).
 */

import type { ICustomPartitioner, PartitionerArgs } from 'kafkajs';

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Kafka's murmur2 of a key's bytes, as the Java client computes it (a signed 32-bit integer). */
export function murmur2(key: string | Buffer): number {
  const data = typeof key === 'string' ? (asciiCodes(key) ?? Buffer.from(key)) : key;
  const length = data.length;
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const rest = length & 3;
  if (rest === 3) h ^= data[whole + 2]! << 16;
  if (rest >= 2) h ^= data[whole + 1]! << 8;
  if (rest >= 1) h = Math.imul(h ^ data[whole]!, M);
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h;
}

// A key's UTF-8 bytes without a buffer, when it is ASCII (job ids nearly always are).
const codes = new Uint8Array(256);
function asciiCodes(s: string): Uint8Array | undefined {
  if (s.length > codes.length) return undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f) return undefined;
    codes[i] = c;
  }
  return codes.subarray(0, s.length);
}

/** kafkajs's default partitioner with this murmur2: explicit partition, else by key, else round robin. */
export const javaCompatiblePartitioner: ICustomPartitioner = () => {
  const counters = new Map<string, number>();
  return ({ topic, partitionMetadata, message }: PartitionerArgs) => {
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    if (message.key !== null && message.key !== undefined)
      return (murmur2(message.key) & 0x7fffffff) % partitionMetadata.length;
    const next = ((counters.get(topic) ?? Math.floor(Math.random() * 0x7fffffff)) + 1) & 0x7fffffff;
    counters.set(topic, next);
    const available = partitionMetadata.filter((p) => p.leader >= 0);
    if (available.length > 0) return available[next % available.length]!.partitionId;
    return next % partitionMetadata.length;
  };
};
