/**
 * The scheduler's membership of the scheduler group on the commands topic: the partitions it is
 * assigned are the shards it owns, and the schedule commands on them are applied as they come.
 */
import type { TickworkConfig } from '@tickwork/config';
import type { ScheduleCommandHandler } from '@tickwork/jobs';
import type { InboundBatch, MessageBus, MessageConsumer } from '@tickwork/messaging';
import type { ShardOwner } from '@tickwork/scheduling';
import {
  Attr,
  extractTraceContext,
  inSpan,
  kafkaAttributes,
  linkTo,
  spanContextOf,
  SpanKind,
} from '@tickwork/telemetry';
import type { SchedulerReports } from './scheduler-reports';

/** Joins, rejoins and leaves the scheduler group; assignments go to the shard ownership. */
export class CommandsMembership {
  private consumer: MessageConsumer | undefined;
  private rejoining = false;
  private stopped = false;

  constructor(
    private readonly config: TickworkConfig,
    private readonly bus: MessageBus,
    private readonly ownership: ShardOwner,
    /** Made at boot, before the group gives this instance any command. */
    private readonly commands: ScheduleCommandHandler,
    private readonly reports: Pick<SchedulerReports, 'metrics' | 'log'>,
  ) {}

  /** Joins the group: from then on its assignments are the shards this instance owns. */
  async join(): Promise<void> {
    const { config, ownership, reports } = this;
    const topic = config.topics.commands;
    this.consumer = await this.bus.consumer({
      groupId: config.scheduler.groupId,
      topics: [topic],
      // The smallest session brokers accept by default: it bounds how long a rebalance waits
      // for a member that died. Leases, not the session, fence claims (a takeover does not wait
      // for the old lease to expire). A member heartbeats after each fetch, so fetches long-poll
      // for at most a second.
      sessionTimeoutMs: 6_000,
      heartbeatIntervalMs: 1_000,
      maxWaitTimeMs: 1_000,
    });
    await this.consumer.start({
      onAssignment: (assignment) => ownership.assign(assignment.get(topic) ?? []),
      // Claims go on through a rebalance and a consumer restart: shard leases fence them.
      onRebalance: () => {
        reports.metrics.rebalanced();
        ownership.rebalancing();
      },
      onCrash: (e) => {
        ownership.rebalancing();
        reports.log.error(`commands consumer crashed: ${e.message}`);
      },
      onBatch: (batch) => this.apply(batch),
    });
  }

  /**
   * Leaves and rejoins the group, so shards come back only through a fresh assignment. A failed
   * join (Kafka unreachable) is retried with a capped backoff: a fenced instance that stopped
   * trying would never claim again.
   */
  async rejoin(): Promise<void> {
    if (this.rejoining || this.stopped) return;
    const { metrics, log } = this.reports;
    this.rejoining = true;
    try {
      this.ownership.suspend();
      await this.consumer?.stop().catch((e: unknown) => {
        log.warn(`leaving the group: ${(e as Error).message}`);
      });
      for (let attempt = 1; !this.stopped; attempt++) {
        try {
          await this.join();
          return;
        } catch (e) {
          metrics.error('rejoin');
          log.error(`rejoin failed (attempt ${attempt}): ${(e as Error).message}`);
          await this.consumer?.stop().catch(() => undefined);
          await new Promise((r) => setTimeout(r, Math.min(5_000, 250 * 2 ** Math.min(attempt, 5))));
        }
      }
    } finally {
      this.rejoining = false;
    }
  }

  /** No rejoin from now on: the instance is shutting down. */
  stopRejoining(): void {
    this.stopped = true;
  }

  /** Leaves the group (committing what was applied). */
  async leave(): Promise<void> {
    await this.consumer?.stop().catch(() => undefined);
  }

  /**
   * Schedule commands: applied through the jobs service, once per command id, in order per
   * partition; poison of every kind goes to the rejected topic with its reason (ScheduleCommandHandler).
   */
  private async apply(batch: InboundBatch): Promise<void> {
    if (batch.messages.length === 0) return;
    // One process span per batch: the child of the command's producer when the batch holds one
    // command, linked to each command's producer otherwise. The job writes are its children.
    const producers = batch.messages.map((m) => spanContextOf(m.headers));
    const single = batch.messages.length === 1 && producers[0] !== undefined;
    await inSpan(
      `process ${batch.topic}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: kafkaAttributes('process', batch.topic, {
          [Attr.MessagingConsumerGroup]: this.config.scheduler.groupId,
          [Attr.MessagingPartition]: String(batch.partition),
          [Attr.MessagingBatchCount]: batch.messages.length,
        }),
        links: single ? [] : producers.flatMap((p) => (p ? [linkTo(p, 'producer')] : [])),
      },
      () => this.commands.handleBatch(batch),
      single ? extractTraceContext(batch.messages[0]!.headers) : undefined,
    );
  }
}
