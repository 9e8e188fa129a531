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
import { loadTenants, type TenantRegistry, type TickworkConfig } from '@tickwork/config';
import { BackfillService, JobService, jobServiceOptionsOf, ScheduleCommandHandler } from '@tickwork/jobs';
import {
  planClaimedJob,
  TenantTokenBuckets,
  type ClaimedFire,
  type ClaimPlanner,
  type ShardEpoch,
} from '@tickwork/domain';
import {
  CommandCodec,
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
  SharedDueProbe,
  SloSweeper,
  TracedClaimStore,
  deadManSample,
  type FireLoopEvents,
} from '@tickwork/scheduling';
import {
  BackfillRepository,
  BulkRepository,
  ClusterStatsRepository,
  FireStore,
  CalendarRepository,
  HistoryRepository,
  isSessionLoss,
  JobRepository,
  ShardLeaseRepository,
  SloRepository,
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
  meter,
  SCHEDULER_METRICS,
  counterOf,
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

/** How often the scheduler resumes jobs whose pause-until has come: a pause ends at most this late. */
const PAUSE_SWEEP_EVERY_MS = 1_000;

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
  /** Kafka admin for the readiness probe and the lag sampler. */
  private readonly admin = new LazyKafkaAdmin(() => this.messaging?.bus);
  private sampler: ClusterSampler | undefined;
  private pauseSweep: PauseSweep | undefined;
  private sloSweeper: SloSweeper | undefined;
  private backfills: BackfillRunner | undefined;
  private readonly metrics: SchedulerMetrics;
  /** Fire lines (debug) go to pino directly, so their fields are built only when enabled. */
  private readonly fireLog: PinoLogger;
  private readonly readiness: Readiness;
  /** The tenant registry, read and validated at boot: a bad file stops the start, not the first command. */
  private readonly tenants: TenantRegistry;

  constructor(
    private readonly config: TickworkConfig,
    private readonly pool: Pool,
    private readonly telemetry: Telemetry,
  ) {
    this.tenants = loadTenants();
    this.metrics = new SchedulerMetrics(telemetry.tenants, () => this.heldShards().length);
    this.fireLog = telemetry.logger.child({ context: 'fires' });
    this.readiness = new Readiness({
      postgres: async () => {
        await this.pool.query('SELECT 1');
      },
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
    this.ownership = new ShardOwnership(
      new ShardLeaseRepository(this.pool),
      c.instanceId,
      c.scheduler.shardLeaseMs,
      {
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
      },
    );
    this.ownership.start();
    // The claim through its decorators: spans per claim and fire, then skip and parking metrics.
    const store = new FireStore(this.pool);
    const claims = new MeteredClaimStore(new TracedClaimStore(store), this.metrics, (jobIds) =>
      this.log.warn(
        `parked (paused) ${jobIds.length} job(s) the claim could not plan or store: [${jobIds.slice(0, 20).join(', ')}]; the reason is in each job's occurrence ledger`,
      ),
    );
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
    const lanes = c.scheduler.claimLanes;
    const ownership = this.ownership;
    // One probe per tick for all lanes: an idle instance costs one statement per tick.
    const dueProbe = new SharedDueProbe(store, ownership, {
      owner: c.instanceId,
      lookaheadMs: c.scheduler.lookaheadMs,
      relayAgeMs: c.scheduler.outboxRelayAgeMs,
      maxAgeMs: c.scheduler.tickMs / 2,
    });
    // Fires claimed early (lookahead) wait in one place, so all lanes' due fires share a send.
    const release = releaseThrough(publisher);
    this.loops = Array.from(
      { length: lanes },
      (_, index) =>
        new FireLoop(
          claims,
          store,
          ownership,
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
    await this.joinGroup();
    for (const loop of this.loops) loop.start();
    const bulk = new BulkRepository(this.pool);
    this.pauseSweep = new PauseSweep({
      everyMs: PAUSE_SWEEP_EVERY_MS,
      batchSize: 500,
      shards: () => ownership.claimable().map((s) => s.shard),
      resume: async (shards, limit) => (await bulk.resumeExpiredPauses(shards, limit, c.instanceId)).length,
      onResumed: (n) => this.log.log(`resumed ${n} job(s) whose pause-until has come`),
      onError: (e) => {
        this.metrics.error('pause-sweep');
        this.log.warn(`resuming jobs whose pause-until has come failed (retried): ${e.message}`);
      },
    });
    this.pauseSweep.start();
    this.backfills = this.startBackfillRunner(ownership, buckets.buckets);
    this.sampler = new ClusterSampler(
      new ClusterStatsRepository(this.pool),
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
    this.sloSweeper = this.startSloSweeper(ownership);
    this.log.log(`scheduler ${c.instanceId} started (group ${c.scheduler.groupId}, ${c.shardCount} shards)`);
  }

  /**
   * Backfills of the held shards, paced and within the tenants' fire-rate caps (the fire loop's
   * buckets): their fires go into the outbox, which the fire loops' relay publishes at once.
   */
  private startBackfillRunner(
    ownership: ShardOwnership,
    buckets: TenantTokenBuckets | undefined,
  ): BackfillRunner {
    const c = this.config;
    const runner: BackfillRunner = new BackfillRunner(
      new BackfillRepository(this.pool),
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
  private startSloSweeper(ownership: ShardOwnership): SloSweeper {
    const c = this.config;
    const slo = new SloMetrics(this.telemetry.tenants);
    const sweeper = new SloSweeper(
      new SloRepository(this.pool),
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
    this.commandHandler ??= this.createCommandHandler().catch((e: unknown) => {
      this.commandHandler = undefined;
      throw e;
    });
    const handler = await this.commandHandler;
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

  private async createCommandHandler(): Promise<ScheduleCommandHandler> {
    const c = this.config;
    const codec = await CommandCodec.connect(c.schemaRegistryUrl, c.topics.commands);
    const jobs = new JobService(new JobRepository(this.pool), new HistoryRepository(this.pool), {
      ...jobServiceOptionsOf(c, this.tenants),
      calendars: new CalendarRepository(this.pool),
    });
    const counter = counterOf(meter(), SCHEDULER_METRICS.commands);
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
        forwarded: (count) => counter.add(count, { outcome: 'forwarded' }),
      },
      {
        shardCount: c.shardCount,
        maxCommandBytes: c.api.maxPayloadBytes + 64 * 1024,
        storeHealthy: async () => (await this.pool.query('SELECT 1')).rowCount === 1,
        backfills: new BackfillService(jobs, new BackfillRepository(this.pool)),
        log: (message, level) => (level === 'info' ? this.log.log(message) : this.log.warn(message)),
      },
      // Misplaced commands go to their shard's partition in one send, in their order: an
      // idempotent producer keeps that order on the partition, so a job's commands stay in order.
      (misplaced) =>
        this.producer!.send([
          {
            topic: c.topics.commands,
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

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.pauseSweep?.stop();
    await this.sampler?.stop();
    await this.sloSweeper?.stop();
    await this.backfills?.stop();
    await Promise.all(this.loops.map((l) => l.stop()));
    await this.consumer?.stop().catch(() => undefined);
    await this.ownership?.stop().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin.close();
  }
}
