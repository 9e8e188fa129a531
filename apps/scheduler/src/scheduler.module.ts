/**
 * Wiring of the scheduler app: config → database → shard map → store repositories → the
 * scheduler instance (SchedulerService, which starts its parts in order) → health and metrics.
 */
import {
  Controller,
  Get,
  Inject,
  Module,
  ServiceUnavailableException,
  type DynamicModule,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type { TenantRegistry, TickworkConfig } from '@tickwork/config';
import {
  closeShardDatabases,
  MetricsController,
  openDatabase,
  openShardDatabases,
  TELEMETRY,
} from '@tickwork/runtime';
import { storeRepositories, type Pool, type ShardPools, type StoreRepositories } from '@tickwork/store';
import type { Telemetry } from '@tickwork/telemetry';
import { SchedulerService } from './scheduler.service';

const POOL = Symbol('Pool');
const SHARD_POOLS = Symbol('ShardPools');
const STORE = Symbol('StoreRepositories');

@Controller('health')
class SchedulerHealthController {
  constructor(private readonly scheduler: SchedulerService) {}

  @Get('live')
  live(): { status: string } {
    return { status: 'ok' };
  }

  /** Ready once PostgreSQL and Kafka answer and the group gave this instance its shards. */
  @Get('ready')
  async ready(): Promise<{ status: string; checks: Readonly<Record<string, string>>; shards: number[] }> {
    const report = await this.scheduler.ready();
    if (!report.ready)
      throw new ServiceUnavailableException({ status: 'unavailable', checks: report.checks });
    return {
      status: 'ready',
      checks: report.checks,
      shards: this.scheduler.heldShards().map((s) => s.shard),
    };
  }
}

@Module({})
export class SchedulerModule implements OnApplicationShutdown {
  constructor(
    @Inject(POOL) private readonly pool: Pool,
    @Inject(SHARD_POOLS) private readonly shardPools: ShardPools,
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
  ) {}

  static forRoot(config: TickworkConfig, tenants: TenantRegistry, telemetry: Telemetry): DynamicModule {
    return {
      module: SchedulerModule,
      controllers: [SchedulerHealthController, MetricsController],
      providers: [
        { provide: TELEMETRY, useValue: telemetry },
        // Each claim lane holds one connection for its claim and one for confirming the batch it
        // published; the rest serve lease renewals, the relay and the cluster gauges.
        {
          provide: POOL,
          useFactory: () => openDatabase(config, { max: config.scheduler.claimLanes * 2 + 3 }),
        },
        // Every database of the shard map is opened at boot, not when one of its shards is first
        // assigned: it is migrated and checked against store_shards before this instance claims
        // anything, and a takeover never waits for a pool. A pool opens connections only on use.
        {
          provide: SHARD_POOLS,
          useFactory: (pool: Pool) =>
            openShardDatabases(config, pool, { max: config.scheduler.claimLanes * 2 + 3 }),
          inject: [POOL],
        },
        // The repositories the schedule commands and the cluster gauges use, routed by the shard map.
        {
          provide: STORE,
          useFactory: (pools: ShardPools, pool: Pool) => storeRepositories(pools, pool),
          inject: [SHARD_POOLS, POOL],
        },
        {
          provide: SchedulerService,
          useFactory: (pools: ShardPools, store: StoreRepositories) =>
            new SchedulerService(config, tenants, telemetry, pools, store),
          inject: [SHARD_POOLS, STORE],
        },
      ],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await closeShardDatabases(this.shardPools, this.pool);
    await this.pool.end();
    // Last: spans of the shutdown itself are flushed too.
    await this.telemetry.shutdown();
  }
}
