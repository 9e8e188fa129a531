/**
 * The scheduler instance: joins the scheduler group on the commands topic (its partitions are
 * the shards it owns), keeps shard leases in PostgreSQL, and runs the fire loop over them. Each
 * part is made by its factory (ownership.ts, fire-loops.ts, shard-sweeps.ts, command-wiring.ts,
 * commands-membership.ts, cluster-sampler.ts); this class starts them in order and stops them
 * in the reverse of what depends on what.
 */
import {
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { TenantRegistry, TickworkConfig } from '@tickwork/config';
import type { ShardEpoch } from '@tickwork/domain';
import type { MessageProducer } from '@tickwork/messaging';
import { LazyKafkaAdmin, openMessaging, type Messaging } from '@tickwork/runtime';
import {
  FirePublisher,
  releaseThrough,
  type BackfillRunner,
  type FireLoop,
  type PauseSweep,
  type ShardOwner,
  type SloSweeper,
} from '@tickwork/scheduling';
import type { ShardPools, StoreRepositories } from '@tickwork/store';
import { Readiness, SchedulerMetrics, type ReadinessReport, type Telemetry } from '@tickwork/telemetry';
import { clusterSamplerOf, type ClusterSampler } from './cluster-sampler';
import { createCommandHandler } from './command-wiring';
import { CommandsMembership } from './commands-membership';
import {
  claimPlannerOf,
  fireLoopEvents,
  fireLoopsOf,
  tenantFireRateCaps,
  type FireLanesShared,
} from './fire-loops';
import { heldShardsByDatabase, ownershipEvents, shardOwnershipOf } from './ownership';
import type { SchedulerReports } from './scheduler-reports';
import { backfillRunnerOf, pauseSweepOf, sloSweeperOf } from './shard-sweeps';

/** `part`, started. */
function started<Part extends { start(): void }>(part: Part): Part {
  part.start();
  return part;
}

@Injectable()
export class SchedulerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('scheduler');
  private readonly reports: SchedulerReports;
  private readonly readiness: Readiness;
  /** Kafka admin for the readiness probe and the lag sampler. */
  private readonly kafkaAdmin = new LazyKafkaAdmin(() => this.messaging?.bus);
  private messaging: Messaging | undefined;
  private producer: MessageProducer | undefined;
  private ownership: ShardOwner | undefined;
  private commands: CommandsMembership | undefined;
  /** One fire loop per claim lane (a disjoint subset of the held shards each). */
  private fireLoops: FireLoop[] = [];
  /** Per database of the shard map (one, unless the store is sharded). */
  private pauseSweeps: PauseSweep[] = [];
  private backfillRunners: BackfillRunner[] = [];
  private sloSweepers: SloSweeper[] = [];
  private sampler: ClusterSampler | undefined;

  constructor(
    private readonly config: TickworkConfig,
    /** Read and validated by main.ts before anything starts: a bad file stops the start. */
    private readonly tenants: TenantRegistry,
    private readonly telemetry: Telemetry,
    /** The store's shard map, open: claims, leases and sweeps run against each shard's database. */
    private readonly shardPools: ShardPools,
    /** The store's repositories, routed by the shard map (schedule commands, cluster gauges). */
    private readonly store: StoreRepositories,
  ) {
    this.reports = {
      metrics: new SchedulerMetrics(telemetry.tenants, () => this.heldShards().length),
      log: this.log,
      fireLog: telemetry.logger.child({ context: 'fires' }),
    };
    this.readiness = new Readiness({
      postgres: () => this.storeHealthy(),
      kafka: () => this.kafkaAdmin.probe(this.config.topics.commands),
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
    const { config, reports } = this;
    this.messaging = await openMessaging(config, (level, message) =>
      this.log[level === 'info' ? 'log' : level](message),
    );
    this.producer = await this.messaging.bus.producer({ idempotent: true });
    // Made at boot (the command schema read and registered): a bad schema file or an unreachable
    // registry stops the start instead of failing the first command.
    const commandHandler = await createCommandHandler({
      config,
      tenants: this.tenants,
      store: this.store,
      storeHealthy: () => this.storeHealthy(),
      producer: this.producer,
      log: this.log,
    });
    const ownership = shardOwnershipOf(
      config,
      this.shardPools,
      ownershipEvents(reports, () => void this.commands?.rejoin()),
    );
    this.ownership = ownership;
    ownership.start();

    const heldDatabases = heldShardsByDatabase(ownership, this.shardPools);
    const buckets = tenantFireRateCaps(config, this.tenants, () => ownership.claimable().length);
    const publisher = new FirePublisher(this.producer, this.messaging.codecs, config.topics.fires);
    const lanes: FireLanesShared = {
      publisher,
      planner: claimPlannerOf(config, reports.metrics),
      buckets,
      release: releaseThrough(publisher),
      events: fireLoopEvents(reports, () => void ownership.verifyNow()),
    };
    this.fireLoops = heldDatabases.flatMap((held) => fireLoopsOf(config, held, lanes, reports));

    this.commands = new CommandsMembership(config, this.messaging.bus, ownership, commandHandler, reports);
    await this.commands.join();
    for (const loop of this.fireLoops) loop.start();
    for (const held of heldDatabases) {
      this.pauseSweeps.push(started(pauseSweepOf(config, held, reports)));
      this.backfillRunners.push(started(backfillRunnerOf(config, held, buckets, this.telemetry, reports)));
      this.sloSweepers.push(started(sloSweeperOf(config, held, this.telemetry, reports)));
    }
    this.sampler = started(
      clusterSamplerOf(config, this.store.clusterStats, this.kafkaAdmin, this.telemetry, reports),
    );
    this.log.log(
      `scheduler ${config.instanceId} started (group ${config.scheduler.groupId}, ${config.shardCount} shards)`,
    );
  }

  /** Every database of the shard map answers (readiness, the commands consumer's store check). */
  private async storeHealthy(): Promise<void> {
    await Promise.all(this.shardPools.databases.map((d) => d.pool.query('SELECT 1')));
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.commands?.stopRejoining();
    await Promise.all(this.pauseSweeps.map((sweep) => sweep.stop()));
    await this.sampler?.stop();
    await Promise.all(this.sloSweepers.map((sweeper) => sweeper.stop()));
    await Promise.all(this.backfillRunners.map((runner) => runner.stop()));
    await Promise.all(this.fireLoops.map((loop) => loop.stop()));
    await this.commands?.leave();
    await this.ownership?.stop().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.kafkaAdmin.close();
  }
}
