/** Wiring of the executor app. */
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
import { openDatabase } from '@tickwork/runtime';
import type { Pool } from '@tickwork/store';
import { ExecutorService, type ExecutorStatus } from './executor.service';

const POOL = Symbol('Pool');

@Controller('health')
class ExecutorHealthController {
  constructor(private readonly executor: ExecutorService) {}

  @Get('live')
  live(): { status: string } {
    return { status: 'ok' };
  }

  @Get('ready')
  ready(): { status: string } & ExecutorStatus {
    if (!this.executor.isReady())
      throw new ServiceUnavailableException('not yet a member of the executor groups');
    return { status: 'ready', ...this.executor.status() };
  }
}

@Module({})
export class ExecutorModule implements OnApplicationShutdown {
  constructor(@Inject(POOL) private readonly pool: Pool) {}

  static forRoot(config: TickworkConfig): DynamicModule {
    return {
      module: ExecutorModule,
      controllers: [ExecutorHealthController],
      providers: [
        {
          provide: POOL,
          // Ledger statements are short: a few connections serve hundreds of in-flight fires, and
          // every connection is a PostgreSQL backend (memory, and a slot of max_connections).
          useFactory: () => openDatabase(config, { max: Math.min(16, config.executor.concurrency + 4) }),
        },
        {
          provide: ExecutorService,
          useFactory: (pool: Pool) => new ExecutorService(config, pool),
          inject: [POOL],
        },
      ],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}
