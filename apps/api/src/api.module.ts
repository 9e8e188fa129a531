/** Wiring of the API app: config → database → repositories → job service → controllers. */
import { Inject, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import type { TickworkConfig } from '@tickwork/config';
import { JobService } from '@tickwork/jobs';
import { openDatabase } from '@tickwork/runtime';
import { JobRepository, RunRepository, type Pool } from '@tickwork/store';
import { HealthController } from './health.controller';
import { JobsController } from './jobs.controller';
import { CONFIG, POOL } from './tokens';

@Module({})
export class ApiModule implements OnApplicationShutdown {
  constructor(@Inject(POOL) private readonly pool: Pool) {}

  static forRoot(config: TickworkConfig): DynamicModule {
    return {
      module: ApiModule,
      controllers: [JobsController, HealthController],
      providers: [
        { provide: CONFIG, useValue: config },
        { provide: POOL, useFactory: () => openDatabase(config) },
        { provide: JobRepository, useFactory: (pool: Pool) => new JobRepository(pool), inject: [POOL] },
        { provide: RunRepository, useFactory: (pool: Pool) => new RunRepository(pool), inject: [POOL] },
        {
          provide: JobService,
          useFactory: (jobs: JobRepository, runs: RunRepository) =>
            new JobService(jobs, runs, {
              shardCount: config.shardCount,
              herdJitterMs: config.scheduler.herdJitterMs,
              limits: { minIntervalMs: config.api.minIntervalMs, maxPayloadBytes: config.api.maxPayloadBytes, maxJitterMs: 3_600_000 },
            }),
          inject: [JobRepository, RunRepository],
        },
      ],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}
