/** Wiring of the scheduler app. */
import { Controller, Get, Inject, Module, ServiceUnavailableException, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import type { TickworkConfig } from '@tickwork/config';
import { openDatabase } from '@tickwork/runtime';
import type { Pool } from '@tickwork/store';
import { SchedulerService } from './scheduler.service';

const POOL = Symbol('Pool');

@Controller('health')
class SchedulerHealthController {
  constructor(private readonly scheduler: SchedulerService) {}

  @Get('live')
  live(): { status: string } {
    return { status: 'ok' };
  }

  @Get('ready')
  ready(): { status: string; shards: number[] } {
    if (!this.scheduler.isReady()) throw new ServiceUnavailableException('no shard assignment yet');
    return { status: 'ready', shards: this.scheduler.heldShards().map((s) => s.shard) };
  }
}

@Module({})
export class SchedulerModule implements OnApplicationShutdown {
  constructor(@Inject(POOL) private readonly pool: Pool) {}

  static forRoot(config: TickworkConfig): DynamicModule {
    return {
      module: SchedulerModule,
      controllers: [SchedulerHealthController],
      providers: [
        { provide: POOL, useFactory: () => openDatabase(config, { max: 6 }) },
        { provide: SchedulerService, useFactory: (pool: Pool) => new SchedulerService(config, pool), inject: [POOL] },
      ],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}
