/**
 * The scheduler's schedule commands: decoded against the registered ScheduleCommand schema,
 * applied through the jobs use cases over their store ports, refused ones sent to the rejected
 * topic with their reason, misplaced ones forwarded to their shard's partition.
 */
import type { Logger } from '@nestjs/common';
import type { TenantRegistry, TickworkConfig } from '@tickwork/config';
import { BackfillService, createJobService, ScheduleCommandHandler } from '@tickwork/jobs';
import { CommandCodec, type MessageProducer } from '@tickwork/messaging';
import type { StoreRepositories } from '@tickwork/store';
import { counterOf, meter, SCHEDULER_METRICS } from '@tickwork/telemetry';

/** What the commands handler is made of. */
export interface CommandWiring {
  readonly config: TickworkConfig;
  readonly tenants: TenantRegistry;
  /** The store's repositories (routed by the shard map when it spans several databases). */
  readonly store: StoreRepositories;
  /** Resolves when every database of the store answers; rejects otherwise. */
  readonly storeHealthy: () => Promise<void>;
  /** The scheduler's idempotent producer (rejected and forwarded commands). */
  readonly producer: MessageProducer;
  readonly log: Logger;
}

/** Registers the command schema and makes the handler of the commands topic's batches. */
export async function createCommandHandler({
  config,
  tenants,
  store,
  storeHealthy,
  producer,
  log,
}: CommandWiring): Promise<ScheduleCommandHandler> {
  const codec = await CommandCodec.connect(config.schemaRegistryUrl, config.topics.commands);
  const jobs = createJobService(
    { jobs: store.jobs, history: store.history, calendars: store.calendars },
    config,
    tenants,
  );
  const counter = counterOf(meter(), SCHEDULER_METRICS.commands);
  return new ScheduleCommandHandler(
    (bytes) => codec.decode(bytes),
    jobs,
    (m, code, reason) =>
      producer.send([
        {
          topic: config.topics.commandsRejected,
          messages: [
            {
              key: m.key,
              value: m.value,
              headers: {
                ...m.headers,
                'tickwork-reject-code': code,
                'tickwork-reject-reason': reason,
                'tickwork-source': `${m.topic}/${m.partition}/${m.offset}`,
              },
            },
          ],
        },
      ]),
    {
      applied: (type) => counter.add(1, { outcome: 'applied', type }),
      duplicate: (type) => counter.add(1, { outcome: 'duplicate', type }),
      rejected: (code) => counter.add(1, { outcome: 'rejected', code }),
      forwarded: (count) => counter.add(count, { outcome: 'forwarded' }),
    },
    {
      shardCount: config.shardCount,
      maxCommandBytes: config.api.maxPayloadBytes + 64 * 1024,
      storeHealthy: () => storeHealthy().then(() => true),
      backfills: new BackfillService(jobs, store.backfills),
      log: (message, level) => (level === 'info' ? log.log(message) : log.warn(message)),
    },
    // Misplaced commands go to their shard's partition in one send, in their order: an
    // idempotent producer keeps that order on the partition, so a job's commands stay in order.
    (misplaced) =>
      producer.send([
        {
          topic: config.topics.commands,
          messages: misplaced.map(({ message: m, shard }) => ({
            key: m.key,
            value: m.value,
            partition: shard,
            headers: { ...m.headers, 'tickwork-forwarded-from': `${m.topic}/${m.partition}/${m.offset}` },
          })),
        },
      ]),
  );
}
