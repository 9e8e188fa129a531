/**
 * The executor instance: a member of the executor group on the fires topic and of the retry group
 * on the retry tiers, both feeding one bounded pool of in-flight fires; plus the run-history purge.
 */
import {
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { ownTopics, type TickworkConfig } from '@tickwork/config';
import {
  BatchingProducer,
  CoalescingLedger,
  DestinationGuard,
  FireExecutor,
  FireMessageProcessor,
  KafkaOutcomeSink,
  KafkaRunner,
  LivenessBeat,
  newLeaseIssuer,
  parseAllowList,
  PartitionFlow,
  RunPurger,
  Slots,
  TracedKafkaRunner,
  TracedLedger,
  TracedProcessor,
  TracedWebhookRunner,
  WebhookRunner,
  WebhookSigner,
  type FlowStats,
} from '@tickwork/execution';
import type { MessageConsumer, MessageProducer } from '@tickwork/messaging';
import { LazyKafkaAdmin, openMessaging, type Messaging } from '@tickwork/runtime';
import {
  EveryDatabaseLivenessRepository,
  ExecutorLivenessRepository,
  FireStore,
  RoutedRunRepository,
  RunRepository,
  type Pool,
  type ShardPools,
} from '@tickwork/store';
import {
  ExecutorMetrics,
  fireLogFields,
  LogThrottle,
  Readiness,
  type Logger as PinoLogger,
  type ReadinessReport,
  type Telemetry,
} from '@tickwork/telemetry';

/** What /health/ready reports beside readiness. */
export interface ExecutorStatus {
  readonly ready: boolean;
  readonly slotsInUse: number;
  readonly slotsWaiting: number;
  readonly fires: FlowStats | null;
  readonly retries: FlowStats | null;
  readonly pendingProduces: number;
}

// A fetch returns at once when there is data, so an idle executor long-polls (one round trip a
// second, not ten). While a partition is paused for flow control the short wait applies: it
// bounds how soon a resumed partition is fetched again.
const FETCH_MAX_WAIT_MS = 1_000;
const PAUSED_FETCH_MAX_WAIT_MS = 100;
const RETRY_FETCH_MAX_WAIT_MS = 1_000;
/** Deliveries held per webhook slot (see `deliveries`)... */
const DELIVERIES_PER_SLOT = 4;
/**
 * ...and at least this many. A delivery lives for several round trips (lease, call, outcome,
 * result) of tens of ms each under load, so the window, not the CPU, would cap throughput at
 * window / lifetime: 400 deliveries of ~60 ms is ~6,600 fires/s. Each holds one fetched message.
 */
const MIN_DELIVERIES = 2_000;
/** The liveness beat (LivenessBeat): once a second; a witness of a death has beaten in the last 2.5 s. */
const LIVENESS_BEAT_MS = 1_000;
const LIVENESS_WITNESS_FRESH_MS = 2_500;
/** A database blip makes every fire in flight retry its ledger write: one line per this long, not one per fire. */
const LEDGER_RETRY_LOG_EVERY_MS = 5_000;

@Injectable()
export class ExecutorService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('executor');
  /** Target calls in flight: the executor's concurrency. */
  private readonly slots: Slots;
  /** Deliveries taken from Kafka and not yet resolved: fetching pauses when they are all taken. */
  private readonly deliveries: Slots;
  private producer: MessageProducer | undefined;
  private batching: BatchingProducer | undefined;
  private firesConsumer: MessageConsumer | undefined;
  private retryConsumer: MessageConsumer | undefined;
  private firesFlow: PartitionFlow | undefined;
  private retryFlow: PartitionFlow | undefined;
  private webhooks: WebhookRunner | undefined;
  private purger: RunPurger | undefined;
  private liveness: LivenessBeat | undefined;
  private joined = { fires: false, retries: false };
  private messaging: Messaging | undefined;
  /** Kafka admin for the readiness probe. */
  private readonly admin = new LazyKafkaAdmin(() => this.messaging?.bus);
  private readonly metrics: ExecutorMetrics;
  /** Fire lines go to pino directly, so their fields are built only when the level is on. */
  private readonly fireLog: PinoLogger;
  private readonly readiness: Readiness;
  /** Ledger retries since the last line about them (see onLedgerRetry). */
  private ledgerRetries = { count: 0, loggedAt: 0 };

  constructor(
    private readonly config: TickworkConfig,
    private readonly pool: Pool,
    telemetry: Telemetry,
    /** The databases of the store's shard map: each run's ledger is in its job's shard database. */
    private readonly shardPools: ShardPools,
  ) {
    this.slots = new Slots(config.executor.concurrency);
    // Room for the runs recording their outcome and publishing results after their target call,
    // while as many more take the slots; still a fixed bound, so memory stays flat.
    this.deliveries = new Slots(Math.max(MIN_DELIVERIES, config.executor.concurrency * DELIVERIES_PER_SLOT));
    this.metrics = new ExecutorMetrics(telemetry.tenants, () => this.slots.inUse());
    this.fireLog = telemetry.logger.child({ context: 'fires' });
    this.readiness = new Readiness({
      postgres: async () => {
        await Promise.all(this.shardPools.databases.map((d) => d.pool.query('SELECT 1')));
      },
      kafka: () => this.admin.probe(this.config.topics.fires),
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
      fires: this.firesFlow?.stats() ?? null,
      retries: this.retryFlow?.stats() ?? null,
      pendingProduces: this.batching?.pending() ?? 0,
    };
  }

  async onApplicationBootstrap(): Promise<void> {
    const c = this.config;
    const x = c.executor;
    const messaging = await openMessaging(c, (level, message) =>
      this.log[level === 'info' ? 'log' : level](message),
    );
    this.messaging = messaging;
    this.producer = await messaging.bus.producer({ idempotent: true });
    const batching = (this.batching = new BatchingProducer(this.producer));
    const guard = new DestinationGuard(parseAllowList(x.webhookAllowList));
    this.webhooks = new WebhookRunner({
      guard,
      signer: new WebhookSigner(x.webhookSecrets),
      connectionsPerOrigin: x.concurrency,
    });
    const internalTopics = ownTopics(c.topics);
    const sink = new KafkaOutcomeSink(batching, messaging.codecs, c.topics);
    const holderLiveness = { deadAfterMs: x.deadAfterMs, witnessFreshMs: LIVENESS_WITNESS_FRESH_MS };
    const sharded = this.shardPools.sharded;
    const runs = sharded
      ? new RoutedRunRepository(this.shardPools, holderLiveness)
      : new RunRepository(this.shardPools.ofShard(0).pool, holderLiveness);
    // The liveness beat names this process's leases, so that once it dies they are taken over
    // within TICKWORK_EXECUTOR_DEAD_AFTER_MS, not when they expire. It beats before the groups
    // are joined: no lease of this process exists without its row.
    const leaseIssuer = newLeaseIssuer();
    const beatErrors = new LogThrottle(10_000);
    this.liveness = new LivenessBeat(
      sharded
        ? new EveryDatabaseLivenessRepository(this.shardPools)
        : new ExecutorLivenessRepository(this.shardPools.ofShard(0).pool),
      {
        issuer: leaseIssuer,
        instanceId: c.instanceId,
        intervalMs: LIVENESS_BEAT_MS,
        onError: (e) => {
          const { write, suppressed } = beatErrors.admit(LogThrottle.kindOf(e.message));
          if (write) this.log.warn(`liveness beat failed: ${e.message}${beatErrors.note(suppressed)}`);
        },
      },
    );
    await this.liveness.start();
    const targetCall = (type: 'webhook' | 'kafka', outcome: string, ms: number) =>
      this.metrics.targetCall(type, outcome, ms);
    const executor = new FireExecutor(
      new TracedLedger(new CoalescingLedger(runs), {
        onHeartbeat: (renewed) => this.metrics.leaseHeartbeat(renewed),
      }),
      new TracedWebhookRunner(this.webhooks, targetCall),
      new TracedKafkaRunner(new KafkaRunner(batching, internalTopics), targetCall),
      sink,
      {
        owner: c.instanceId,
        leaseIssuer,
        runLeaseMs: x.runLeaseMs,
        heartbeatMs: x.heartbeatMs,
        runRetentionMs: x.runRetentionMs,
        webhookSlots: this.slots,
      },
      {
        onExecuted: (f, result) => {
          this.metrics.attempted(result);
          if (this.fireLog.isLevelEnabled('debug'))
            this.fireLog.debug(
              {
                ...fireLogFields(f),
                outcome: result.outcome,
                http_status: result.httpStatus,
                duration_ms: result.durationMs,
                start_lateness_ms: result.startedAt.getTime() - result.scheduledFor.getTime(),
              },
              'fire executed',
            );
        },
        onLedgerRetry: (step, e) => this.ledgerRetried(step, e),
        onDuplicate: (f, reason) => {
          this.metrics.duplicate(reason);
          if (this.fireLog.isLevelEnabled('debug'))
            this.fireLog.debug({ ...fireLogFields(f), reason }, 'duplicate delivery skipped');
        },
        onLeaseLost: (f) =>
          this.fireLog.warn(
            fireLogFields(f),
            `lease lost for fire ${f.fireId}; its late outcome was not recorded (the new holder records it)`,
          ),
        onDeadLettered: (f, reason, detail) => {
          this.metrics.deadLettered(f.tenantId, reason);
          this.fireLog.warn(
            { ...fireLogFields(f), reason },
            `dead-lettered fire ${f.fireId} attempt ${f.attempt}: ${reason}: ${detail}`,
          );
        },
      },
    );
    const processor = new FireMessageProcessor(messaging.codecs, executor, sink, c.topics.retryTiers, {
      onPoison: (m, reason) => {
        this.metrics.deadLettered('unknown', 'UNDECODABLE');
        this.log.warn(`dead-lettered undecodable message ${m.topic}/${m.partition}/${m.offset}: ${reason}`);
      },
    });
    const retryTopics = new Set(c.topics.retryTiers.map((t) => t.topic));
    const traced = new TracedProcessor(processor, (topic) =>
      retryTopics.has(topic) ? `${x.groupId}.retry` : x.groupId,
    );
    // With the database down every fire in flight fails at once: one line per kind of failure
    // every 10 s, with the count of the others, instead of a line per fire.
    const failures = new LogThrottle(10_000);
    const onError = (e: Error, m: { topic: string; partition: number; offset: string }, n: number) => {
      const { write, suppressed } = failures.admit(LogThrottle.kindOf(e.message));
      if (write)
        this.log.error(
          `fire at ${m.topic}/${m.partition}/${m.offset} failed (${n}x), will be retried: ${e.message}${failures.note(suppressed)}`,
        );
    };

    const consumerOptions = {
      sessionTimeoutMs: x.sessionTimeoutMs,
      // A member learns of a rebalance only from a heartbeat's answer: every second, so the
      // survivors of a member that died or left rejoin within about a second of the rebalance.
      heartbeatIntervalMs: Math.min(1_000, Math.floor(x.sessionTimeoutMs / 3)),
      maxBytesPerPartition: x.fetchBytesPerPartition,
      maxWaitTimeMs: FETCH_MAX_WAIT_MS,
      pausedMaxWaitTimeMs: PAUSED_FETCH_MAX_WAIT_MS,
      // The handler only hands batches over, so one at a time is enough.
      partitionsConsumedConcurrently: 1,
      // Fetch on past slow fires; only what the flow marks done is committed (PartitionFlow).
      fetchAhead: true,
      // Static membership when named (docs/executor.md): a restart takes its partitions back
      // without a rebalance that would stop every other executor for the dead one's session.
      ...(x.memberName !== undefined ? { staticMemberName: x.memberName } : {}),
    };
    const flowOptions = { maxHeldBytes: x.heldBytesPerPartition };
    this.firesConsumer = await this.startupRetry('joining the fires topic', () =>
      messaging.bus.consumer({ ...consumerOptions, groupId: x.groupId, topics: [c.topics.fires] }),
    );
    this.firesFlow = new PartitionFlow(
      this.firesConsumer,
      this.deliveries,
      traced,
      { onError },
      {
        ...flowOptions,
        backlogSettleMs: x.backlogSettleMs,
      },
    );
    this.retryConsumer = await this.startupRetry('joining the retry topics', () =>
      messaging.bus.consumer({
        ...consumerOptions,
        // Retries wait seconds for their not-before anyway: polling an idle retry topic ten times
        // a second would be most of an idle executor's work. Paused or not: a retry parked until
        // its not-before keeps its partition paused for seconds.
        maxWaitTimeMs: RETRY_FETCH_MAX_WAIT_MS,
        pausedMaxWaitTimeMs: RETRY_FETCH_MAX_WAIT_MS,
        groupId: `${x.groupId}.retry`,
        topics: c.topics.retryTiers.map((t) => t.topic),
      }),
    );
    this.retryFlow = new PartitionFlow(this.retryConsumer, this.deliveries, traced, { onError }, flowOptions);

    const firesFlow = this.firesFlow;
    const retryFlow = this.retryFlow;
    await this.firesConsumer.start({
      onBatch: (batch) => firesFlow.onBatch(batch),
      onRebalance: () => firesFlow.onRebalance(),
      onAssignment: (a) => {
        firesFlow.onAssignment(a);
        this.joined.fires = true;
        this.log.log(`assigned fires partitions [${(a.get(c.topics.fires) ?? []).join(', ')}]`);
        if (firesFlow.settling) void this.expectFiresBacklog(firesFlow, x.groupId, c.topics.fires);
      },
      onCrash: (e) => {
        this.log.error(`fires consumer crashed: ${e.message}`);
        // It left the group: its partitions are gone until it joins again.
        firesFlow.onAssignment(new Map());
      },
    });
    await this.retryConsumer.start({
      onBatch: (batch) => retryFlow.onBatch(batch),
      onRebalance: () => retryFlow.onRebalance(),
      onAssignment: (a) => {
        retryFlow.onAssignment(a);
        this.joined.retries = true;
        this.log.log(
          `assigned retry partitions ${[...a].map(([t, ps]) => `${t}[${ps.join(', ')}]`).join(' ')}`,
        );
      },
      onCrash: (e) => {
        this.log.error(`retry consumer crashed: ${e.message}`);
        retryFlow.onAssignment(new Map());
      },
    });

    if (x.runPurgeIntervalMs > 0) {
      // Run history is the runs and the fire log (fires, their outbox batches, skipped
      // occurrences): one retention for both, so an occurrence's fire and run go together.
      const fireLogs = this.shardPools.databases.map((d) => new FireStore(d.pool));
      const history = {
        purgeFinishedRuns: async (retentionMs: number, batchSize: number) => {
          let purged = await runs.purgeFinishedRuns(retentionMs, batchSize);
          for (const fireLog of fireLogs) purged += await fireLog.purgeFireLog(retentionMs, batchSize);
          return purged;
        },
      };
      this.purger = new RunPurger(history, {
        retentionMs: x.runRetentionMs,
        intervalMs: x.runPurgeIntervalMs,
        batchSize: x.runPurgeBatchSize,
        onPurged: (n) => this.log.log(`purged ${n} runs and fires older than ${x.runRetentionMs} ms`),
        onError: (e) =>
          this.log.warn(`run purge failed, next pass in ${x.runPurgeIntervalMs} ms: ${e.message}`),
      });
      this.purger.start();
    }
    this.log.log(
      `executor ${c.instanceId} started (group ${x.groupId}, concurrency ${x.concurrency}, allow-list [${x.webhookAllowList.join(', ')}])`,
    );
  }

  /** Logs ledger statements being retried on a transient error: at most one line per LEDGER_RETRY_LOG_EVERY_MS. */
  private ledgerRetried(step: string, e: Error): void {
    const r = this.ledgerRetries;
    r.count++;
    const now = Date.now();
    if (now - r.loggedAt < LEDGER_RETRY_LOG_EVERY_MS) return;
    this.log.warn(
      `run ledger unreachable (${step}: ${e.message}); ${r.count} ledger statement(s) retried since the last report, outcomes held in memory`,
    );
    r.count = 0;
    r.loggedAt = now;
  }

  /**
   * Tells the fires flow which of its new partitions have fires waiting (committed offset below
   * the end), so their backlogs start together in due order. Unknown (the lag could not be read):
   * nothing waits longer than the settle time.
   */
  private async expectFiresBacklog(flow: PartitionFlow, groupId: string, topic: string): Promise<void> {
    try {
      const lag = await this.admin.groupLag(groupId, topic);
      const waiting = lag
        .filter((p) => BigInt(p.committed) >= 0n && BigInt(p.end) > BigInt(p.committed))
        .map((p) => p.partition);
      flow.expectBacklog(new Map([[topic, waiting]]));
    } catch (e) {
      this.log.warn(`reading the fires backlog after an assignment failed: ${(e as Error).message}`);
    }
  }

  /** Topics created a moment ago may not have leaders yet: metadata errors at start-up are retried a few times. */
  private async startupRetry<T>(what: string, attempt: () => Promise<T>): Promise<T> {
    for (let i = 1; ; i++) {
      try {
        return await attempt();
      } catch (e) {
        if (i >= 8) throw e;
        this.log.warn(`${what} failed (${(e as Error).message}); retrying`);
        await new Promise((r) => setTimeout(r, 500 * i));
      }
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    const drainMs = this.config.executor.drainMs;
    // Leave the groups first (committing what is done), then drain: the partitions move to the
    // other executors at once, and the fires still running here finish under their leases. A
    // copy re-delivered to the new owner checks the lease again within a second, and finds the
    // run finished (or released, if the drain ran out and aborted it).
    this.firesFlow?.quiesce();
    this.retryFlow?.quiesce();
    await Promise.all([
      this.firesConsumer?.stop().catch(() => undefined),
      this.retryConsumer?.stop().catch(() => undefined),
    ]);
    await Promise.all([this.firesFlow?.stop(drainMs), this.retryFlow?.stop(drainMs), this.purger?.stop()]);
    // Drained: every lease of this process is finished or released, so its beat row can go.
    await this.liveness?.stop(true);
    await this.producer?.disconnect().catch(() => undefined);
    await this.webhooks?.close().catch(() => undefined);
    await this.admin.close();
  }
}
