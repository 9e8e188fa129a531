/**
 * kafkajs 2.2.4 sorts a send's messages into partitions by copying each partition's array once per
 * message (`[...current, message]`): quadratic in the messages per partition, a few percent of a
 * scheduler's CPU at its batch sizes. This is the same grouping in one pass. kafkajs's producer
 * captures the module when kafkajs is first required, so the stand-in goes in before that: this
 * file is imported ahead of kafkajs by kafkajs-bus.ts.
 */

import { standInModule } from './module-stand-in';

/** kafkajs's module that groups a send's messages per partition. */
export const GROUPING_MODULE = 'kafkajs/src/producer/groupMessagesPerPartition';

/** What kafkajs's producer passes to the grouping. */
export interface GroupingArgs<M> {
  readonly topic: string;
  readonly partitionMetadata: readonly unknown[];
  readonly messages: readonly M[];
  readonly partitioner: (args: {
    topic: string;
    partitionMetadata: readonly unknown[];
    message: M;
  }) => number;
}

/** Partitions per topic as the producer last saw them (send-coverage.ts checks a send's answer with it). */
export const producerPartitionCounts = new Map<string, number>();

/** The messages of one topic by partition, in their order, as kafkajs's own grouping returns them. */
export function groupMessagesPerPartition<M>({
  topic,
  partitionMetadata,
  messages,
  partitioner,
}: GroupingArgs<M>): Record<number, M[]> {
  const result: Record<number, M[]> = {};
  if (partitionMetadata.length === 0) return result;
  producerPartitionCounts.set(topic, partitionMetadata.length);
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message });
    (result[partition] ??= []).push(message);
  }
  return result;
}

/**
 * Makes kafkajs's producers use `groupMessagesPerPartition`, once per process. False if kafkajs's
 * producer was loaded already: its own grouping then stays in use (correct, slower).
 */
export function linearPartitionGrouping(): boolean {
  return standInModule(GROUPING_MODULE, () => groupMessagesPerPartition);
}
