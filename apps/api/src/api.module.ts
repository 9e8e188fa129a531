/** Wiring of the API app: config → database → store ports → jobs services → REST and gRPC controllers. */
import {
  Inject,
  Module,
  RequestMethod,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type { ApiListenConfig, TenantRegistry, TickworkConfig } from '@tickwork/config';
import { createKafkaBus } from '@tickwork/messaging';
import {
  LazyKafkaAdmin,
  MetricsController,
  observeKafkajsPatches,
  closeShardDatabases,
  openDatabase,
  openShardDatabases,
  TELEMETRY,
} from '@tickwork/runtime';
import { storeRepositories, type Pool, type ShardPools } from '@tickwork/store';
import { ApiMetrics, Readiness, type Telemetry } from '@tickwork/telemetry';
import { Authenticator } from './auth';
import { AdminGrpcController } from './grpc/admin.controller';
import { GrpcTelemetryInterceptor } from './grpc/grpc-telemetry.interceptor';
import { GrpcHealthController } from './grpc/health.controller';
import { HealthController } from './health.controller';
import { InsightController } from './rest/insight.controller';
import { BulkActionsController } from './rest/bulk-actions.controller';
import { CalendarsController } from './rest/calendars.controller';
import { BackfillsController } from './rest/backfills.controller';
import { JobsController } from './rest/jobs.controller';
import { JsonBodyOnly } from './rest/json-body.middleware';
import { jobsServiceProviders, storePortProviders } from './jobs-providers';
import { OpenApiController } from './rest/openapi.controller';
import {
  API_METRICS,
  CONFIG,
  KAFKA_PROBE,
  LISTEN,
  POOL,
  READINESS,
  SHARD_POOLS,
  STORE,
  TENANTS,
} from './tokens';

@Module({})
export class ApiModule implements NestModule, OnApplicationShutdown {
  constructor(
    @Inject(POOL) private readonly pool: Pool,
    @Inject(SHARD_POOLS) private readonly shardPools: ShardPools,
    @Inject(KAFKA_PROBE) private readonly kafka: LazyKafkaAdmin,
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
  ) {}

  static forRoot(
    config: TickworkConfig,
    tenants: TenantRegistry,
    listen: ApiListenConfig,
    telemetry: Telemetry,
    apiMetrics: ApiMetrics,
  ): DynamicModule {
    return {
      module: ApiModule,
      controllers: [
        JobsController,
        CalendarsController,
        BulkActionsController,
        BackfillsController,
        InsightController,
        OpenApiController,
        HealthController,
        AdminGrpcController,
        GrpcHealthController,
        MetricsController,
      ],
      providers: [
        { provide: TELEMETRY, useValue: telemetry },
        { provide: API_METRICS, useValue: apiMetrics },
        GrpcTelemetryInterceptor,
        {
          provide: KAFKA_PROBE,
          useFactory: () => {
            // The API does not use Kafka to serve requests; this connection only answers readiness.
            const bus = createKafkaBus(config.kafka, (level, message) =>
              telemetry.logger[level]({ context: 'kafka' }, message),
            );
            observeKafkajsPatches();
            return new LazyKafkaAdmin(() => bus);
          },
        },
        {
          provide: READINESS,
          useFactory: (pool: Pool, pools: ShardPools, kafka: LazyKafkaAdmin) =>
            new Readiness({
              // Every database of the shard map: a job of any shard may be asked for.
              postgres: async () => {
                await Promise.all(
                  [pool, ...pools.databases.map((d) => d.pool)].map((p) => p.query('SELECT 1')),
                );
              },
              kafka: () => kafka.probe(config.topics.commands),
            }),
          inject: [POOL, SHARD_POOLS, KAFKA_PROBE],
        },
        { provide: CONFIG, useValue: config },
        { provide: TENANTS, useValue: tenants },
        { provide: LISTEN, useValue: listen },
        { provide: POOL, useFactory: () => openDatabase(config) },
        // Every database of the shard map, checked against store_shards; with one database, the main pool.
        {
          provide: SHARD_POOLS,
          useFactory: (pool: Pool) => openShardDatabases(config, pool),
          inject: [POOL],
        },
        {
          provide: STORE,
          useFactory: (pools: ShardPools, pool: Pool) => storeRepositories(pools, pool),
          inject: [SHARD_POOLS, POOL],
        },
        { provide: Authenticator, useFactory: () => new Authenticator(tenants) },
        ...storePortProviders(),
        ...jobsServiceProviders(config, tenants),
      ],
    };
  }

  /** The operations whose request body is JSON refuse any other media type (415). */
  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(JsonBodyOnly)
      .forRoutes(
        { path: 'v1/jobs', method: RequestMethod.POST },
        { path: 'v1/jobs/:jobId', method: RequestMethod.PATCH },
        { path: 'v1/bulk-actions', method: RequestMethod.POST },
        { path: 'v1/calendars', method: RequestMethod.POST },
        { path: 'v1/calendars/:name', method: RequestMethod.PUT },
        { path: 'v1/jobs/:jobId/backfills', method: RequestMethod.POST },
        { path: 'v1/schedules/preview', method: RequestMethod.POST },
      );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.kafka.close();
    await closeShardDatabases(this.shardPools, this.pool);
    await this.pool.end();
    // Last: spans of the shutdown itself are flushed too.
    await this.telemetry.shutdown();
  }
}
