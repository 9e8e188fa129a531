/**
 * Shard assignment. A job's shard is the partition its job_id maps to in the commands topic
 * under Kafka's default partitioner (murmur2 of the key bytes), so the scheduler instance that
 * owns partition N owns shard N, and commands keyed by job_id land on the owner when their
 * producer partitions as Java's client does (others are forwarded there: see shardOfKey).
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Kafka's murmur2 hash (32-bit, as the Java client and kafkajs compute it). */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = SEED ^ length;
  const fullWords = length >>> 2;
  for (let i = 0; i < fullWords; i++) {
    const i4 = i * 4;
    let k =
      (data[i4]! & 0xff) |
      ((data[i4 + 1]! & 0xff) << 8) |
      ((data[i4 + 2]! & 0xff) << 16) |
      ((data[i4 + 3]! & 0xff) << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  const tail = length & ~3;
  const rest = length % 4;
  if (rest === 3) h ^= (data[tail + 2]! & 0xff) << 16;
  if (rest >= 2) h ^= (data[tail + 1]! & 0xff) << 8;
  if (rest >= 1) {
    h ^= data[tail]! & 0xff;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

const utf8 = new TextEncoder();

/** The shard (commands-topic partition) that owns a job. */
export function shardOf(jobId: string, shardCount: number): number {
  return shardOfKey(utf8.encode(jobId), shardCount);
}

/** The shard of a commands-topic message key (the job id's bytes), as Kafka's Java partitioner picks it. */
export function shardOfKey(key: Uint8Array, shardCount: number): number {
  return (murmur2(key) & 0x7fffffff) % shardCount;
}
