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
import type { TenantRegistry, TickworkConfig } from '@tickwork/config';
import type { ScheduleCommandHandler } from '@tickwork/jobs';
import {
  planClaimedJob,
  TenantTokenBuckets,
  type ClaimedFire,
  type ClaimPlanner,
  type ShardEpoch,
} from '@tickwork/domain';
import {
  isBrokerError,
  type MessageConsumer,
  type MessageProducer,
  type InboundBatch,
} from '@tickwork/messaging';
import { LazyKafkaAdmin, openMessaging, type Messaging } from '@tickwork/runtime';
import {
  BackfillRunner,
  FireLoop,
  FirePublisher,
  MeteredClaimStore,
  PauseSweep,
  releaseThrough,
  ShardOwnership,
  ShardOwnershipByDatabase,
  SharedDueProbe,
  SloSweeper,
  TracedClaimStore,
  deadManSample,
  type ClaimableShards,
  type FireLoopEvents,
  type OwnershipEvents,
  type ShardOwner,
} from '@tickwork/scheduling';
import {
  BackfillRepository,
  BulkRepository,
  FireStore,
  isSessionLoss,
  ShardLeaseRepository,
  SloRepository,
  storeRepositories,
  type ShardDatabasePool,
  type ShardPools,
  type Pool,
} from '@tickwork/store';
import {
  Attr,
  BackfillMetrics,
  ClusterGauges,
  extractTraceContext,
  fireLogFields,
  inSpan,
  kafkaAttributes,
  linkTo,
  Readiness,
  SchedulerMetrics,
  SloMetrics,
  spanContextOf,
  SpanKind,
  type Logger as PinoLogger,
  type ReadinessReport,
  type Telemetry,
} from '@tickwork/telemetry';
import { ClusterSampler } from './cluster-sampler';
import { createCommandHandler } from './command-wiring';

/** How often the scheduler resumes jobs whose pause-until has come: a pause ends at most this late. */
const PAUSE_SWEEP_EVERY_MS = 1_000;

@Injectable()
export class SchedulerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('scheduler');
  private messaging: Messaging | undefined;
  private producer: MessageProducer | undefined;
  private consumer: MessageConsumer | undefined;
  private ownership: ShardOwner | undefined;
  /** One fire loop per claim lane (a disjoint subset of the held shards each). */
  private loops: FireLoop[] = [];
  private rejoining = false;
  private stopped = false;
  /** Applies schedule commands; made at boot, before the group gives this instance any. */
  private commandHandler: ScheduleCommandHandler | undefined;
  /** Kafka admin for the readiness probe and the lag sampler. */
  private readonly admin = new LazyKafkaAdmin(() => this.messaging?.bus);
  private sampler: ClusterSampler | undefined;
  /** Per database of the shard map (one, unless the store is sharded). */
  private pauseSweeps: PauseSweep[] = [];
  private sloSweepers: SloSweeper[] = [];
  private backfillRunners: BackfillRunner[] = [];
  private readonly metrics: SchedulerMetrics;
  /** Fire lines (debug) go to pino directly, so their fields are built only when enabled. */
  private readonly fireLog: PinoLogger;
  private readonly readiness: Readiness;

  constructor(
    private readonly config: TickworkConfig,
    /** Read and validated by main.ts before anything starts: a bad file stops the start. */
    private readonly tenants: TenantRegistry,
    private readonly pool: Pool,
    private readonly telemetry: Telemetry,
    /** The store's shard map, open: claims, leases and sweeps run against each shard's database. */
    private readonly shardPools: ShardPools,
  ) {
    this.metrics = new SchedulerMetrics(telemetry.tenants, () => this.heldShards().length);
    this.fireLog = telemetry.logger.child({ context: 'fires' });
    this.readiness = new Readiness({
      postgres: () => this.storeHealthy(),
      kafka: () => this.admin.probe(this.config.topics.commands),
      shards: () => {
        if (!this.isReady()) throw new Error('no shard assignment yet');
      },
    });
  }

  /** Shards this instance holds right now (for health and metrics). */
  heldShards(): readonly ShardEpoch[] {
    return this.ownership?.claimable() ?? [];
  }

  /** True once the group gave this instance an assignment and its leases are taken. */
  isReady(): boolean {
    return this.ownership?.isActive() ?? false;
  }

  /** PostgreSQL, Kafka and shard ownership, for /health/ready. */
  ready(): Promise<ReadinessReport> {
    return this.readiness.report();
  }

  async onApplicationBootstrap(): Promise<void> {
    const c = this.config;
    this.messaging = await openMessaging(c, (level, message) =>
      this.log[level === 'info' ? 'log' : level](message),
    );
    this.producer = await this.messaging.bus.producer({ idempotent: true });
    // Made at boot (the command schema read and registered): a bad schema file or an unreachable
    // registry stops the start instead of failing the first command.
    this.commandHandler = await createCommandHandler({
      config: c,
      tenants: this.tenants,
      store: storeRepositories(this.shardPools, this.pool),
      storeHealthy: () => this.storeHealthy(),
      producer: this.producer,
      log: this.log,
    });
    const ownershipEvents: OwnershipEvents = {
      onChange: (held) => {
        this.metrics.ownershipChanged(held);
        this.log.log(`holding shards [${held.map((h) => `${h.shard}@${h.epoch}`).join(', ')}]`);
      },
      onSelfFence: (lost) => {
        this.metrics.selfFenced();
        this.log.warn(
          `lease lost for shards [${lost.join(', ')}]: stopped claiming them; rejoining the group`,
        );
        void this.rejoin();
      },
      onLostWhileAway: (shards) =>
        this.log.warn(
          `lease lost for shards [${shards.join(', ')}] while this instance was away; re-acquiring them under a new epoch`,
        ),
      onError: (e) => {
        this.metrics.error('shard-ownership');
        this.log.error(`shard ownership: ${e.message}`);
      },
    };
    // Each shard's lease lives in its own database, beside the rows its claims lock it with; over
    // several databases each has its own ownership, so one database down fences only its shards.
    this.ownership = this.shardPools.sharded
      ? new ShardOwnershipByDatabase(
          this.shardPools.databases.map((d) => ({
            shards: d.shards,
            leases: new ShardLeaseRepository(d.pool),
          })),
          c.instanceId,
          c.scheduler.shardLeaseMs,
          ownershipEvents,
        )
      : new ShardOwnership(
          new ShardLeaseRepository(this.shardPools.ofShard(0).pool),
          c.instanceId,
          c.scheduler.shardLeaseMs,
          ownershipEvents,
        );
    this.ownership.start();
    const publisher = new FirePublisher(this.producer, this.messaging.codecs, c.topics.fires);
    const planOptions = {
      maxCatchUp: c.scheduler.maxCatchUp,
      herdJitterMs: c.scheduler.herdJitterMs,
      lookaheadMs: c.scheduler.lookaheadMs,
    };
    const planner: ClaimPlanner = ({ job, previousFireInFlight }, now) => {
      // Jobs with business calendars plan through them (CALENDAR_SKIP / CALENDAR_SHIFT).
      const plan = planClaimedJob(job, job.nextNominalAt ?? now, now, planOptions, previousFireInFlight);
      if (job.calendars?.length)
        this.metrics.calendarShifted(job.tenantId, plan.fires.filter((f) => f.calendar).length);
      return plan;
    };
    const buckets = this.tenantBuckets();
    // Fires claimed early (lookahead) wait in one place, so all lanes' due fires share a send.
    const release = releaseThrough(publisher);
    const ownership = this.ownership;
    // One set of claim lanes and sweeps per database, each over the held shards that database
    // holds: a claim, the outbox relay and a sweep never span databases.
    const perDatabase = this.shardPools.databases.map((db, index) => ({
      db,
      held: ownership instanceof ShardOwnershipByDatabase ? ownership.of(index) : ownership,
    }));
    for (const { db, held } of perDatabase)
      this.loops.push(...this.fireLoopsOf(db, held, publisher, planner, buckets, release));
    await this.joinGroup();
    for (const loop of this.loops) loop.start();
    for (const { db, held } of perDatabase) {
      this.pauseSweeps.push(this.startPauseSweep(db, held));
      this.backfillRunners.push(this.startBackfillRunner(db, held, buckets.buckets));
      this.sloSweepers.push(this.startSloSweeper(db, held));
    }
    this.sampler = new ClusterSampler(
      storeRepositories(this.shardPools, this.pool).clusterStats,
      () => this.admin.get(),
      new ClusterGauges(),
      {
        shardCount: c.shardCount,
        everyMs: this.telemetry.config.clusterSampleMs,
        lag: [
          { group: c.scheduler.groupId, topics: [c.topics.commands] },
          { group: c.executor.groupId, topics: [c.topics.fires] },
          { group: `${c.executor.groupId}.retry`, topics: c.topics.retryTiers.map((t) => t.topic) },
        ],
        onError: (what, e) => {
          this.metrics.error('cluster-sampler');
          this.log.warn(`sampling ${what} for the cluster gauges failed: ${e.message}`);
          if (what === 'consumer lag') void this.admin.close();
        },
      },
    );
    this.sampler.start();
    this.log.log(`scheduler ${c.instanceId} started (group ${c.scheduler.groupId}, ${c.shardCount} shards)`);
  }

  /** The claim lanes over one database's held shards, sharing one due probe per tick. */
  private fireLoopsOf(
    db: ShardDatabasePool,
    held: ClaimableShards,
    publisher: FirePublisher,
    planner: ClaimPlanner,
    buckets: { buckets?: TenantTokenBuckets },
    release: ReturnType<typeof releaseThrough>,
  ): FireLoop[] {
    const c = this.config;
    const lanes = c.scheduler.claimLanes;
    // The claim through its decorators: spans per claim and fire, then skip and parking metrics.
    const store = new FireStore(db.pool);
    const claims = new MeteredClaimStore(new TracedClaimStore(store), this.metrics, (jobIds) =>
      this.log.warn(
        `parked (paused) ${jobIds.length} job(s) the claim could not plan or store: [${jobIds.slice(0, 20).join(', ')}]; the reason is in each job's occurrence ledger`,
      ),
    );
    // One probe per tick for all lanes: an idle instance costs one statement per tick.
    const dueProbe = new SharedDueProbe(store, held, {
      owner: c.instanceId,
      lookaheadMs: c.scheduler.lookaheadMs,
      relayAgeMs: c.scheduler.outboxRelayAgeMs,
      maxAgeMs: c.scheduler.tickMs / 2,
    });
    return Array.from(
      { length: lanes },
      (_, index) =>
        new FireLoop(
          claims,
          store,
          held,
          publisher,
          planner,
          {
            owner: c.instanceId,
            tickMs: c.scheduler.tickMs,
            batchSize: c.scheduler.claimBatchSize,
            lookaheadMs: c.scheduler.lookaheadMs,
            maxHeldFires: c.scheduler.lookaheadMaxFires,
            relayAgeMs: c.scheduler.outboxRelayAgeMs,
            ...buckets,
            lane: { index, count: lanes },
            dueProbe,
            release,
          },
          this.fireLoopEvents(),
        ),
    );
  }

  /** Resumes the jobs of one database's held shards whose pause-until has come. */
  private startPauseSweep(db: ShardDatabasePool, held: ClaimableShards): PauseSweep {
    const c = this.config;
    const bulk = new BulkRepository(db.pool);
    const sweep = new PauseSweep({
      everyMs: PAUSE_SWEEP_EVERY_MS,
      batchSize: 500,
      shards: () => held.claimable().map((s) => s.shard),
      resume: async (shards, limit) => (await bulk.resumeExpiredPauses(shards, limit, c.instanceId)).length,
      onResumed: (n) => this.log.log(`resumed ${n} job(s) whose pause-until has come`),
      onError: (e) => {
        this.metrics.error('pause-sweep');
        this.log.warn(`resuming jobs whose pause-until has come failed (retried): ${e.message}`);
      },
    });
    sweep.start();
    return sweep;
  }

  /** Every database of the shard map answers (readiness, the commands consumer's store check). */
  private async storeHealthy(): Promise<void> {
    await Promise.all(this.shardPools.databases.map((d) => d.pool.query('SELECT 1')));
  }

  /**
   * Backfills of the held shards, paced and within the tenants' fire-rate caps (the fire loop's
   * buckets): their fires go into the outbox, which the fire loops' relay publishes at once.
   */
  private startBackfillRunner(
    db: ShardDatabasePool,
    ownership: ClaimableShards,
    buckets: TenantTokenBuckets | undefined,
  ): BackfillRunner {
    const c = this.config;
    const runner: BackfillRunner = new BackfillRunner(
      new BackfillRepository(db.pool),
      {
        owner: c.instanceId,
        everyMs: Math.min(c.scheduler.tickMs, 100),
        maxPerStep: 500,
        maxPerTick: 100,
        shards: () => ownership.claimable(),
        ...(buckets ? { buckets } : {}),
      },
      {
        onFired: (fired, backfillId) => {
          metrics.fired(fired);
          this.log.debug(`backfill ${backfillId}: ${fired.length} fire(s) in the outbox`);
        },
        onFinished: (backfillId, status) => this.log.log(`backfill ${backfillId} ${status}`),
        onError: (e) => {
          this.metrics.error('backfill-runner');
          this.log.warn(`backfill runner (retried): ${e.message}`);
        },
      },
    );
    const metrics = new BackfillMetrics(this.telemetry.tenants, () => runner.activeBackfills());
    runner.start();
    return runner;
  }

  /** The fire SLO sweep over the held shards: LATE / MISSED into the ledger, and their metrics. */
  private startSloSweeper(db: ShardDatabasePool, ownership: ClaimableShards): SloSweeper {
    const c = this.config;
    const slo = new SloMetrics(this.telemetry.tenants);
    const sweeper = new SloSweeper(
      new SloRepository(db.pool),
      ownership,
      {
        owner: c.instanceId,
        defaults: { toleranceMs: c.slo.toleranceMs, missedAfterMs: c.slo.missedAfterMs },
        sweepMs: c.slo.sweepMs,
        // Fires claimed ahead (lookahead) are not due before then; a sweep period lets runs start.
        settleMs: c.scheduler.lookaheadMs + c.slo.sweepMs,
        batchLimit: 500,
        maxFiresPerSweep: 5_000,
        maxMetricJobs: c.slo.maxMetricJobs,
      },
      {
        onSwept: (_shard, r) => {
          if (r.onTime.length === 0 && r.recorded.length === 0) return;
          slo.judged([
            ...r.onTime.map((o) => ({ ...o, result: 'ON_TIME' as const })),
            ...r.recorded.map((v) => ({
              tenantId: v.tenantId,
              jobId: v.jobId,
              sloMetrics: v.sloMetrics,
              result: v.reason,
            })),
          ]);
          for (const v of r.recorded)
            this.log.debug(
              `occurrence ${v.reason} for job ${v.jobId}${v.latenessMs !== null ? ` (${v.latenessMs} ms late)` : ''}`,
            );
        },
        onMetricJobs: (jobs, now) =>
          slo.jobsSampled(
            jobs.map((j) => ({ tenantId: j.tenantId, jobId: j.jobId, ...deadManSample(j, now) })),
          ),
        onError: (e) => {
          this.metrics.error('slo-sweeper');
          this.log.warn(`fire SLO sweep: ${e.message}`);
        },
      },
    );
    sweeper.start();
    return sweeper;
  }

  /** What the fire loops report: metrics for all of it, logs for what a person should see. */
  private fireLoopEvents(): FireLoopEvents {
    return {
      onClaimed: (claimed) => {
        this.metrics.fireClaimed(claimed.map((f) => f.event));
        this.logFires('fire claimed', claimed);
      },
      onDeferred: (tenants) => {
        this.metrics.deferred(tenants);
        this.log.debug(`rate cap deferred due fires of tenants [${tenants.join(', ')}]`);
      },
      onFencedOut: (shards) => {
        this.metrics.fencedOut(shards);
        this.log.warn(`claim fenced out of shards [${shards.join(', ')}]`);
      },
      onEnqueued: (f, relayed, ackedAtMs) => {
        this.metrics.enqueued(
          f.map((x) => x.event),
          relayed,
          Date.now(),
          ackedAtMs,
        );
        if (relayed) this.log.log(`re-enqueued ${f.length} orphaned fires from the outbox`);
        this.logFires(relayed ? 'fire re-enqueued from the outbox' : 'fire enqueued', f);
      },
      onError: (e) => {
        this.metrics.error('fire-loop');
        // A broker's connection error looks like a session's (ECONNREFUSED): it is not one.
        if (!isSessionLoss(e) || isBrokerError(e)) {
          this.log.error(`fire loop: ${e.message}`);
          return;
        }
        // The claim rolled back with its session. The process may have been frozen past its
        // lease: check the leases now, so a lost one self-fences (and rejoins) at once; if they
        // still hold, the next tick claims on a new session.
        this.log.warn(`fire loop: database session lost (${e.message}); checking the shard leases`);
        void this.ownership?.verifyNow();
      },
    };
  }

  /** Debug lines, one per fire, with its identity and trace. */
  private logFires(what: string, fires: readonly ClaimedFire[]): void {
    if (!this.fireLog.isLevelEnabled('debug')) return;
    const now = Date.now();
    for (const f of fires)
      this.fireLog.debug(
        {
          ...fireLogFields(f.event),
          shard: f.shard,
          scheduled_for: f.event.scheduledFor.toISOString(),
          lateness_ms: now - f.event.scheduledFor.getTime(),
        },
        what,
      );
  }

  /**
   * Per-tenant fire-rate caps: each tenant's max_fires_per_second from the tenant registry when
   * one is configured, else TICKWORK_TENANT_MAX_FIRES_PER_SEC for all (0 = no cap). Each instance
   * enforces its share of a tenant's cluster-wide rate: the fraction of the shards it holds.
   */
  private tenantBuckets(): { buckets?: TenantTokenBuckets } {
    const registry = this.tenants;
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
      // The smallest session brokers accept by default: it bounds how long a rebalance waits
      // for a member that died. Leases, not the session, fence claims (a takeover does not wait
      // for the old lease to expire). A member heartbeats after each fetch, so fetches long-poll
      // for at most a second.
      sessionTimeoutMs: 6_000,
      heartbeatIntervalMs: 1_000,
      maxWaitTimeMs: 1_000,
    });
    await this.consumer.start({
      onAssignment: (assignment) => ownership.assign(assignment.get(c.topics.commands) ?? []),
      // Claims go on through a rebalance and a consumer restart: shard leases fence them.
      onRebalance: () => {
        this.metrics.rebalanced();
        ownership.rebalancing();
      },
      onCrash: (e) => {
        ownership.rebalancing();
        this.log.error(`commands consumer crashed: ${e.message}`);
      },
      onBatch: (batch) => this.onCommands(batch),
    });
  }

  /**
   * Leaves and rejoins the group, so shards come back only through a fresh assignment. A failed
   * join (Kafka unreachable) is retried with a capped backoff: a fenced instance that stopped
   * trying would never claim again.
   */
  private async rejoin(): Promise<void> {
    if (this.rejoining || this.stopped) return;
    this.rejoining = true;
    try {
      this.ownership?.suspend();
      await this.consumer?.stop().catch((e: unknown) => {
        this.log.warn(`leaving the group: ${(e as Error).message}`);
      });
      for (let attempt = 1; !this.stopped; attempt++) {
        try {
          await this.joinGroup();
          return;
        } catch (e) {
          this.metrics.error('rejoin');
          this.log.error(`rejoin failed (attempt ${attempt}): ${(e as Error).message}`);
          await this.consumer?.stop().catch(() => undefined);
          await new Promise((r) => setTimeout(r, Math.min(5_000, 250 * 2 ** Math.min(attempt, 5))));
        }
      }
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
    const handler = this.commandHandler;
    // Made at boot, before the group is joined: without it the batch is not consumed (retried).
    if (!handler) throw new Error('schedule commands arrived before the command handler was made');
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
      () => handler.handleBatch(batch),
      single ? extractTraceContext(batch.messages[0]!.headers) : undefined,
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.pauseSweeps.map((p) => p.stop()));
    await this.sampler?.stop();
    await Promise.all(this.sloSweepers.map((p) => p.stop()));
    await Promise.all(this.backfillRunners.map((p) => p.stop()));
    await Promise.all(this.loops.map((l) => l.stop()));
    await this.consumer?.stop().catch(() => undefined);
    await this.ownership?.stop().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin.close();
  }
}
