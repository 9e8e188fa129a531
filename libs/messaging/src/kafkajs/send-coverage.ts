/**
 * kafkajs 2.2.4 can confirm a send without writing some of it. Its sendMessages sends one request
 * per partition leader and, on a retry, only to brokers that have no response yet: when a dead
 * leader's partitions move to a broker that already answered for its own partitions of the same
 * send, the retry sends nothing for them and the send resolves (seen as confirmed fires missing
 * from the fires topic after a leader kill, test/cluster/kafka-cluster.test.ts). The answer lists
 * one entry per partition written, so what a send put in a partition missing from it was not
 * written: those messages are sent again.
 */
import { murmur2 } from './partitioner';

interface KeyedMessage {
  readonly key?: string | Buffer | null;
  readonly partition?: number | null;
}

/**
 * The messages of `batches` whose partition has no entry in `answered`. A message's partition is
 * its explicit one, else its key's (the Java client's murmur2, as the producer's partitioner);
 * a message with neither went round robin and cannot be checked, so it counts as written.
 */
export function unwrittenMessages<M extends KeyedMessage>(
  batches: readonly { readonly topic: string; readonly messages: readonly M[] }[],
  answered: readonly { readonly topicName: string; readonly partition: number }[],
  partitionCount: (topic: string) => number | undefined,
): { topic: string; messages: M[] }[] {
  const written = new Set(answered.map((a) => `${a.topicName}|${a.partition}`));
  const out: { topic: string; messages: M[] }[] = [];
  for (const { topic, messages } of batches) {
    const count = partitionCount(topic);
    const missing = messages.filter((m) => {
      const partition =
        m.partition !== null && m.partition !== undefined
          ? m.partition
          : m.key !== null && m.key !== undefined && count
            ? (murmur2(m.key) & 0x7fffffff) % count
            : undefined;
      return partition !== undefined && !written.has(`${topic}|${partition}`);
    });
    if (missing.length > 0) out.push({ topic, messages: missing });
  }
  return out;
}
