/**
 * The scheduler instance: joins the scheduler group on the commands topic (its partitions are
 * the shards it owns), keeps shard leases in PostgreSQL, and runs the fire loop over them.
 */
import {
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import { loadTenants, type TickworkConfig } from '@tickwork/config';
import { JobService, ScheduleCommandHandler } from '@tickwork/jobs';
import { planDueOccurrences, TenantTokenBuckets, type ShardEpoch } from '@tickwork/domain';
import {
  CommandCodec,
  type MessageConsumer,
  type MessageProducer,
  type InboundBatch,
} from '@tickwork/messaging';
import { openMessaging, type Messaging } from '@tickwork/runtime';
import { FireLoop, FirePublisher, ShardOwnership } from '@tickwork/scheduling';
import {
  FireRepository,
  HistoryRepository,
  JobRepository,
  ShardLeaseRepository,
  type ClaimPlanner,
  type Pool,
} from '@tickwork/store';

@Injectable()
export class SchedulerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('scheduler');
  private messaging: Messaging | undefined;
  private producer: MessageProducer | undefined;
  private consumer: MessageConsumer | undefined;
  private ownership: ShardOwnership | undefined;
  /** One fire loop per claim lane (a disjoint subset of the held shards each). */
  private loops: FireLoop[] = [];
  private rejoining = false;
  private stopped = false;
  private commandHandler: Promise<ScheduleCommandHandler> | undefined;

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
    this.messaging = await openMessaging(c, (level, message) =>
      this.log[level === 'info' ? 'log' : level](message),
    );
    this.producer = await this.messaging.bus.producer({ idempotent: true });
    this.ownership = new ShardOwnership(
      new ShardLeaseRepository(this.pool),
      c.instanceId,
      c.scheduler.shardLeaseMs,
      {
        onChange: (held) =>
          this.log.log(`holding shards [${held.map((h) => `${h.shard}@${h.epoch}`).join(', ')}]`),
        onSelfFence: (lost) => {
          this.log.warn(
            `lease lost for shards [${lost.join(', ')}]: stopped claiming them; rejoining the group`,
          );
          void this.rejoin();
        },
        onError: (e) => this.log.error(`shard ownership: ${e.message}`),
      },
    );
    this.ownership.start();
    const fires = new FireRepository(this.pool);
    const publisher = new FirePublisher(this.producer, this.messaging.codecs, c.topics.fires);
    const planOptions = { maxCatchUp: c.scheduler.maxCatchUp, herdJitterMs: c.scheduler.herdJitterMs };
    const planner: ClaimPlanner = ({ job, previousFireInFlight }, now) =>
      planDueOccurrences(job, job.nextNominalAt ?? now, now, planOptions, previousFireInFlight);
    const buckets = this.tenantBuckets();
    const lanes = c.scheduler.claimLanes;
    const ownership = this.ownership;
    this.loops = Array.from(
      { length: lanes },
      (_, index) =>
        new FireLoop(
          fires,
          ownership,
          publisher,
          planner,
          {
            owner: c.instanceId,
            tickMs: c.scheduler.tickMs,
            batchSize: c.scheduler.claimBatchSize,
            lookaheadMs: c.scheduler.lookaheadMs,
            relayAgeMs: c.scheduler.outboxRelayAgeMs,
            ...buckets,
            lane: { index, count: lanes },
          },
          {
            onDeferred: (tenants) =>
              this.log.debug(`rate cap deferred due fires of tenants [${tenants.join(', ')}]`),
            onFencedOut: (shards) => this.log.warn(`claim fenced out of shards [${shards.join(', ')}]`),
            onEnqueued: (f, relayed) =>
              relayed && this.log.log(`re-enqueued ${f.length} orphaned fires from the outbox`),
            onError: (e) => this.log.error(`fire loop: ${e.message}`),
          },
        ),
    );
    await this.joinGroup();
    for (const loop of this.loops) loop.start();
    this.log.log(`scheduler ${c.instanceId} started (group ${c.scheduler.groupId}, ${c.shardCount} shards)`);
  }

  /**
   * Per-tenant fire-rate caps: each tenant's max_fires_per_second from the tenant registry when
   * one is configured, else TICKWORK_TENANT_MAX_FIRES_PER_SEC for all (0 = no cap). Each instance
   * enforces its share of a tenant's cluster-wide rate: the fraction of the shards it holds.
   */
  private tenantBuckets(): { buckets?: TenantTokenBuckets } {
    const registry = loadTenants();
    const fallback = this.config.scheduler.tenantMaxFiresPerSec;
    const clusterRate = (tenantId: string) =>
      registry.source !== 'none' ? registry.quotasFor(tenantId).maxFiresPerSecond : fallback;
    if (registry.source === 'none' && fallback <= 0) return {};
    const buckets = new TenantTokenBuckets((tenantId) => {
      const rate = clusterRate(tenantId);
      if (rate <= 0) return null;
      const share = (this.ownership?.claimable().length ?? 0) / this.config.shardCount;
      const ratePerSec = Math.max(1, rate * share);
      return { ratePerSec, burst: ratePerSec };
    });
    return { buckets };
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

  /**
   * Schedule commands: applied through the jobs service, once per command id, in order per
   * partition; poison of every kind goes to the rejected topic with its reason (ScheduleCommandHandler).
   */
  private async onCommands(batch: InboundBatch): Promise<void> {
    if (batch.messages.length === 0) return;
    this.commandHandler ??= this.createCommandHandler().catch((e: unknown) => {
      this.commandHandler = undefined;
      throw e;
    });
    await (await this.commandHandler).handleBatch(batch);
  }

  private async createCommandHandler(): Promise<ScheduleCommandHandler> {
    const c = this.config;
    const codec = await CommandCodec.connect(c.schemaRegistryUrl, c.topics.commands);
    const tenants = loadTenants();
    const jobs = new JobService(new JobRepository(this.pool), new HistoryRepository(this.pool), {
      shardCount: c.shardCount,
      herdJitterMs: c.scheduler.herdJitterMs,
      limits: {
        minIntervalMs: c.api.minIntervalMs,
        maxPayloadBytes: c.api.maxPayloadBytes,
        maxJitterMs: 3_600_000,
      },
      quotas: (tenantId) => tenants.quotasFor(tenantId),
    });
    const counter = metrics
      .getMeter('tickwork')
      .createCounter('tickwork.commands', { description: 'Schedule commands consumed, by outcome' });
    return new ScheduleCommandHandler(
      (bytes) => codec.decode(bytes),
      jobs,
      (m, code, reason) =>
        this.producer!.send([
          {
            topic: c.topics.commandsRejected,
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
      },
      {
        maxCommandBytes: c.api.maxPayloadBytes + 64 * 1024,
        storeHealthy: async () => (await this.pool.query('SELECT 1')).rowCount === 1,
        log: (message) => this.log.warn(message),
      },
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops.map((l) => l.stop()));
    await this.consumer?.stop().catch(() => undefined);
    await this.ownership?.stop().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
  }
}
