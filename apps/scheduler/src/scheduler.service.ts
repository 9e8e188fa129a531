/**
 * The scheduler instance: joins the scheduler group on the commands topic (its partitions are
 * the shards it owns), keeps shard leases in PostgreSQL, and runs the fire loop over them.
 */
import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import type { TickworkConfig } from '@tickwork/config';
import { planDueOccurrences, TenantTokenBuckets, type ShardEpoch } from '@tickwork/domain';
import type { MessageConsumer, MessageProducer, InboundBatch } from '@tickwork/messaging';
import { openMessaging, type Messaging } from '@tickwork/runtime';
import { FireLoop, FirePublisher, ShardOwnership } from '@tickwork/scheduling';
import { FireRepository, ShardLeaseRepository, type ClaimPlanner, type Pool } from '@tickwork/store';

@Injectable()
export class SchedulerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('scheduler');
  private messaging: Messaging | undefined;
  private producer: MessageProducer | undefined;
  private consumer: MessageConsumer | undefined;
  private ownership: ShardOwnership | undefined;
  private loop: FireLoop | undefined;
  private rejoining = false;
  private stopped = false;

  constructor(
    private readonly config: TickworkConfig,
    private readonly pool: Pool,
  ) {}

  /** Shards this instance holds right now (for health and metrics). */
  heldShards(): readonly ShardEpoch[] {
    return this.ownership?.claimable() ?? [];
  }

  isReady(): boolean {
    return this.ownership?.isActive() ?? false;
  }

  async onApplicationBootstrap(): Promise<void> {
    const c = this.config;
    this.messaging = await openMessaging(c, (level, message) => this.log[level === 'info' ? 'log' : level](message));
    this.producer = await this.messaging.bus.producer({ idempotent: true });
    this.ownership = new ShardOwnership(new ShardLeaseRepository(this.pool), c.instanceId, c.scheduler.shardLeaseMs, {
      onChange: (held) => this.log.log(`holding shards [${held.map((h) => `${h.shard}@${h.epoch}`).join(', ')}]`),
      onSelfFence: (lost) => {
        this.log.warn(`lease lost for shards [${lost.join(', ')}]: stopped claiming them; rejoining the group`);
        void this.rejoin();
      },
      onError: (e) => this.log.error(`shard ownership: ${e.message}`),
    });
    this.ownership.start();
    const fires = new FireRepository(this.pool);
    const publisher = new FirePublisher(this.producer, this.messaging.codecs, c.topics.fires);
    const planOptions = { maxCatchUp: c.scheduler.maxCatchUp, herdJitterMs: c.scheduler.herdJitterMs };
    const planner: ClaimPlanner = ({ job, previousFireInFlight }, now) =>
      planDueOccurrences(job, job.nextNominalAt ?? now, now, planOptions, previousFireInFlight);
    this.loop = new FireLoop(
      fires,
      this.ownership,
      publisher,
      planner,
      {
        owner: c.instanceId,
        tickMs: c.scheduler.tickMs,
        batchSize: c.scheduler.claimBatchSize,
        lookaheadMs: c.scheduler.lookaheadMs,
        relayAgeMs: c.scheduler.outboxRelayAgeMs,
        ...(c.scheduler.tenantMaxFiresPerSec > 0 ? { buckets: this.tenantBuckets(c.scheduler.tenantMaxFiresPerSec) } : {}),
      },
      {
        onDeferred: (tenants) => this.log.debug(`rate cap deferred due fires of tenants [${tenants.join(', ')}]`),
        onFencedOut: (shards) => this.log.warn(`claim fenced out of shards [${shards.join(', ')}]`),
        onEnqueued: (f, relayed) => relayed && this.log.log(`re-enqueued ${f.length} orphaned fires from the outbox`),
        onError: (e) => this.log.error(`fire loop: ${e.message}`),
      },
    );
    await this.joinGroup();
    this.loop.start();
    this.log.log(`scheduler ${c.instanceId} started (group ${c.scheduler.groupId}, ${c.shardCount} shards)`);
  }

  /** Each instance enforces its share of a tenant's cluster-wide rate: the fraction of shards it holds. */
  private tenantBuckets(clusterRate: number): TenantTokenBuckets {
    return new TenantTokenBuckets(() => {
      const share = (this.ownership?.claimable().length ?? 0) / this.config.shardCount;
      const ratePerSec = Math.max(1, clusterRate * share);
      return { ratePerSec, burst: ratePerSec };
    });
  }

  private async joinGroup(): Promise<void> {
    const c = this.config;
    const ownership = this.ownership!;
    this.consumer = await this.messaging!.bus.consumer({
      groupId: c.scheduler.groupId,
      topics: [c.topics.commands],
      sessionTimeoutMs: Math.max(6_000, c.scheduler.shardLeaseMs),
      heartbeatIntervalMs: 1_000,
    });
    await this.consumer.start({
      onAssignment: (assignment) => ownership.assign(assignment.get(c.topics.commands) ?? []),
      onRebalance: () => ownership.suspend(),
      onCrash: (e) => {
        ownership.suspend();
        this.log.error(`commands consumer crashed: ${e.message}`);
      },
      onBatch: (batch) => this.onCommands(batch),
    });
  }

  /** Leaves and rejoins the group, so shards come back only through a fresh assignment. */
  private async rejoin(): Promise<void> {
    if (this.rejoining || this.stopped) return;
    this.rejoining = true;
    try {
      this.ownership?.suspend();
      await this.consumer?.stop();
      if (!this.stopped) await this.joinGroup();
    } catch (e) {
      this.log.error(`rejoin failed: ${(e as Error).message}`);
    } finally {
      this.rejoining = false;
    }
  }

  /** Schedule commands arrive here; until their contract lands they are forwarded, never dropped. */
  private async onCommands(batch: InboundBatch): Promise<void> {
    if (batch.messages.length === 0) return;
    await this.producer!.send([
      {
        topic: this.config.topics.commandsRejected,
        messages: batch.messages.map((m) => ({
          key: m.key,
          value: m.value,
          headers: { ...m.headers, 'tickwork-reject-reason': 'schedule commands are not supported by this version', 'tickwork-source': `${m.topic}/${m.partition}/${m.offset}` },
        })),
      },
    ]);
    batch.markProcessed(batch.messages[batch.messages.length - 1]!.offset);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.loop?.stop();
    await this.consumer?.stop().catch(() => undefined);
    await this.ownership?.stop().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
  }
}
