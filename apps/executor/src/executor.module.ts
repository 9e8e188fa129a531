/**
 * Wiring of the executor app: config → database → shard map → the executor instance
 * (ExecutorService, which starts its parts in order) → health and metrics.
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
import type { TickworkConfig } from '@tickwork/config';
import {
  closeShardDatabases,
  MetricsController,
  openDatabase,
  openShardDatabases,
  TELEMETRY,
} from '@tickwork/runtime';
import type { Pool, ShardPools } from '@tickwork/store';
import type { Telemetry } from '@tickwork/telemetry';
import { ExecutorService, type ExecutorStatus } from './executor.service';

const POOL = Symbol('Pool');
const SHARD_POOLS = Symbol('ShardPools');

@Controller('health')
class ExecutorHealthController {
  constructor(private readonly executor: ExecutorService) {}

  @Get('live')
  live(): { status: string } {
    return { status: 'ok' };
  }

  /** Ready once PostgreSQL and Kafka answer and this instance is a member of both groups. */
  @Get('ready')
  async ready(): Promise<{ status: string; checks: Readonly<Record<string, string>> } & ExecutorStatus> {
    const report = await this.executor.ready();
    if (!report.ready)
      throw new ServiceUnavailableException({ status: 'unavailable', checks: report.checks });
    return { status: 'ready', checks: report.checks, ...this.executor.status() };
  }
}

@Module({})
export class ExecutorModule implements OnApplicationShutdown {
  constructor(
    @Inject(POOL) private readonly pool: Pool,
    @Inject(SHARD_POOLS) private readonly shardPools: ShardPools,
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
  ) {}

  static forRoot(config: TickworkConfig, telemetry: Telemetry): DynamicModule {
    return {
      module: ExecutorModule,
      controllers: [ExecutorHealthController, MetricsController],
      providers: [
        { provide: TELEMETRY, useValue: telemetry },
        {
          provide: POOL,
          // Ledger statements are short: a few connections serve hundreds of in-flight fires, and
          // every connection is a PostgreSQL backend (memory, and a slot of max_connections).
          useFactory: () => openDatabase(config, { max: Math.min(16, config.executor.concurrency + 4) }),
        },
        {
          provide: SHARD_POOLS,
          // The same bound per shard database: each serves the ledger of its shards' runs.
          useFactory: (pool: Pool) =>
            openShardDatabases(config, pool, { max: Math.min(16, config.executor.concurrency + 4) }),
          inject: [POOL],
        },
        {
          provide: ExecutorService,
          useFactory: (pools: ShardPools) => new ExecutorService(config, telemetry, pools),
          inject: [SHARD_POOLS],
        },
      ],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await closeShardDatabases(this.shardPools, this.pool);
    await this.pool.end();
    // Last: spans of the drain are flushed too.
    await this.telemetry.shutdown();
  }
}
