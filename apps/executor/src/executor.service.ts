/**
 * The executor instance: a member of the executor group on the fires topic and of the retry group
 * on the retry tiers, both feeding one bounded pool of in-flight fires; plus the run-history purge.
 * Each part is made by its factory (fire-execution.ts, delivery-feeds.ts, run-purge.ts); this
 * class starts them in order and, at shutdown, leaves the groups, drains and stops them.
 */
import {
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { TickworkConfig } from '@tickwork/config';
import {
  BatchingProducer,
  KafkaOutcomeSink,
  newLeaseIssuer,
  Slots,
  type FlowStats,
  type LivenessBeat,
  type RunPurger,
  type WebhookRunner,
} from '@tickwork/execution';
import type { MessageProducer } from '@tickwork/messaging';
import { LazyKafkaAdmin, openMessaging, type Messaging } from '@tickwork/runtime';
import type { ShardPools } from '@tickwork/store';
import { ExecutorMetrics, Readiness, type ReadinessReport, type Telemetry } from '@tickwork/telemetry';
import {
  flowEventsOf,
  openFiresFeed,
  openRetryFeed,
  startFiresFeed,
  startRetryFeed,
  type DeliveryFeed,
} from './delivery-feeds';
import type { ExecutorReports } from './executor-reports';
import {
  fireExecutorOf,
  fireProcessorOf,
  livenessBeatOf,
  runLedgerOf,
  webhookRunnerOf,
} from './fire-execution';
import { runPurgerOf } from './run-purge';

/** What /health/ready reports beside readiness. */
export interface ExecutorStatus {
  readonly ready: boolean;
  readonly slotsInUse: number;
  readonly slotsWaiting: number;
  readonly fires: FlowStats | null;
  readonly retries: FlowStats | null;
  readonly pendingProduces: number;
}

/** Deliveries held per webhook slot (see `deliveries`)... */
const DELIVERIES_PER_SLOT = 4;
/**
 * ...and at least this many. A delivery lives for several round trips (lease, call, outcome,
 * result) of tens of ms each under load, so the window, not the CPU, would cap throughput at
 * window / lifetime: 400 deliveries of ~60 ms is ~6,600 fires/s. Each holds one fetched message.
 */
const MIN_DELIVERIES = 2_000;

@Injectable()
export class ExecutorService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('executor');
  private readonly reports: ExecutorReports;
  private readonly readiness: Readiness;
  /** Target calls in flight: the executor's concurrency. */
  private readonly slots: Slots;
  /** Deliveries taken from Kafka and not yet resolved: fetching pauses when they are all taken. */
  private readonly deliveries: Slots;
  /** Kafka admin for the readiness probe and the fires backlog after an assignment. */
  private readonly kafkaAdmin = new LazyKafkaAdmin(() => this.messaging?.bus);
  private messaging: Messaging | undefined;
  private producer: MessageProducer | undefined;
  private batching: BatchingProducer | undefined;
  private webhooks: WebhookRunner | undefined;
  private liveness: LivenessBeat | undefined;
  private fires: DeliveryFeed | undefined;
  private retries: DeliveryFeed | undefined;
  private purger: RunPurger | undefined;
  private joined = { fires: false, retries: false };

  constructor(
    private readonly config: TickworkConfig,
    telemetry: Telemetry,
    /** The databases of the store's shard map: each run's ledger is in its job's shard database. */
    private readonly shardPools: ShardPools,
  ) {
    this.slots = new Slots(config.executor.concurrency);
    // Room for the runs recording their outcome and publishing results after their target call,
    // while as many more take the slots; still a fixed bound, so memory stays flat.
    this.deliveries = new Slots(Math.max(MIN_DELIVERIES, config.executor.concurrency * DELIVERIES_PER_SLOT));
    this.reports = {
      metrics: new ExecutorMetrics(telemetry.tenants, () => this.slots.inUse()),
      log: this.log,
      fireLog: telemetry.logger.child({ context: 'fires' }),
    };
    this.readiness = new Readiness({
      postgres: async () => {
        await Promise.all(this.shardPools.databases.map((d) => d.pool.query('SELECT 1')));
      },
      kafka: () => this.kafkaAdmin.probe(this.config.topics.fires),
      groups: () => {
        if (!this.isReady()) throw new Error('not yet a member of the executor groups');
      },
    });
  }

  /** PostgreSQL, Kafka and group membership, for /health/ready. */
  ready(): Promise<ReadinessReport> {
    return this.readiness.report();
  }

  /** Ready once a member of both groups. */
  isReady(): boolean {
    return this.joined.fires && this.joined.retries;
  }

  /** Readiness and what is in flight. */
  status(): ExecutorStatus {
    return {
      ready: this.isReady(),
      slotsInUse: this.slots.inUse(),
      slotsWaiting: this.slots.waiting(),
      fires: this.fires?.flow.stats() ?? null,
      retries: this.retries?.flow.stats() ?? null,
      pendingProduces: this.batching?.pending() ?? 0,
    };
  }

  async onApplicationBootstrap(): Promise<void> {
    const { config, reports, log } = this;
    const messaging = await openMessaging(config, (level, message) =>
      log[level === 'info' ? 'log' : level](message),
    );
    this.messaging = messaging;
    this.producer = await messaging.bus.producer({ idempotent: true });
    const batching = (this.batching = new BatchingProducer(this.producer));
    const webhooks = (this.webhooks = webhookRunnerOf(config));
    const sink = new KafkaOutcomeSink(batching, messaging.codecs, config.topics);
    const runs = runLedgerOf(config, this.shardPools);
    // It beats before the groups are joined: no lease of this process exists without its row.
    const leaseIssuer = newLeaseIssuer();
    this.liveness = livenessBeatOf(config, this.shardPools, leaseIssuer, log);
    await this.liveness.start();

    const executor = fireExecutorOf(
      config,
      { runs, webhooks, batching, sink, leaseIssuer, webhookSlots: this.slots },
      reports,
    );
    const processor = fireProcessorOf(config, messaging.codecs, executor, sink, reports);
    const feedParts = { bus: messaging.bus, deliveries: this.deliveries, processor, log };
    const flowEvents = flowEventsOf(log);
    this.fires = await openFiresFeed(config, feedParts, flowEvents);
    this.retries = await openRetryFeed(config, feedParts, flowEvents);
    await startFiresFeed(config, this.fires, this.kafkaAdmin, log, () => (this.joined.fires = true));
    await startRetryFeed(this.retries, log, () => (this.joined.retries = true));

    this.purger = runPurgerOf(config, runs, this.shardPools, log);
    this.purger?.start();
    const { executor: settings } = config;
    log.log(
      `executor ${config.instanceId} started (group ${settings.groupId}, concurrency ${settings.concurrency}, allow-list [${settings.webhookAllowList.join(', ')}])`,
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    const drainMs = this.config.executor.drainMs;
    // Leave the groups first (committing what is done), then drain: the partitions move to the
    // other executors at once, and the fires still running here finish under their leases. A
    // copy re-delivered to the new owner checks the lease again within a second, and finds the
    // run finished (or released, if the drain ran out and aborted it).
    this.fires?.flow.quiesce();
    this.retries?.flow.quiesce();
    await Promise.all([
      this.fires?.consumer.stop().catch(() => undefined),
      this.retries?.consumer.stop().catch(() => undefined),
    ]);
    await Promise.all([
      this.fires?.flow.stop(drainMs),
      this.retries?.flow.stop(drainMs),
      this.purger?.stop(),
    ]);
    // Drained: every lease of this process is finished or released, so its beat row can go.
    await this.liveness?.stop(true);
    await this.producer?.disconnect().catch(() => undefined);
    await this.webhooks?.close().catch(() => undefined);
    await this.kafkaAdmin.close();
  }
}
