/**
 * The API's jobs use cases and the store ports they work on: each port provided by its PostgreSQL
 * repository (routed by the shard map when the store spans several databases), each service built
 * from ports (and the one JobService).
 */
import type { Provider } from '@nestjs/common';
import type { TenantRegistry, TickworkConfig } from '@tickwork/config';
import {
  BackfillService,
  BulkActionService,
  CalendarService,
  createJobService,
  InsightService,
  JobHistoryService,
  JobService,
  type BackfillStore,
  type BulkStore,
  type CalendarStore,
  type ClusterStatsStore,
  type HistoryStore,
  type InsightStore,
  type JobStore,
} from '@tickwork/jobs';
import type { LazyKafkaAdmin } from '@tickwork/runtime';
import type { StoreRepositories } from '@tickwork/store';
import {
  BACKFILL_STORE,
  BULK_STORE,
  CALENDAR_STORE,
  CLUSTER_STATS_STORE,
  HISTORY_STORE,
  INSIGHT_STORE,
  JOB_STORE,
  KAFKA_PROBE,
  STORE,
} from './tokens';

/** A store port provided by its repository (the return type checks the repository fits the port). */
function storePort<Port>(token: symbol, pick: (store: StoreRepositories) => Port): Provider {
  return { provide: token, useFactory: pick, inject: [STORE] };
}

/** Each store port of the jobs use cases, by its token. */
export function storePortProviders(): Provider[] {
  return [
    storePort<JobStore>(JOB_STORE, (store) => store.jobs),
    storePort<HistoryStore>(HISTORY_STORE, (store) => store.history),
    storePort<CalendarStore>(CALENDAR_STORE, (store) => store.calendars),
    storePort<InsightStore>(INSIGHT_STORE, (store) => store.insight),
    storePort<ClusterStatsStore>(CLUSTER_STATS_STORE, (store) => store.clusterStats),
    storePort<BulkStore>(BULK_STORE, (store) => store.bulk),
    storePort<BackfillStore>(BACKFILL_STORE, (store) => store.backfills),
  ];
}

/** The jobs application services the controllers call, built on the store ports. */
export function jobsServiceProviders(config: TickworkConfig, tenants: TenantRegistry): Provider[] {
  return [
    {
      provide: JobService,
      useFactory: (jobs: JobStore, history: HistoryStore, calendars: CalendarStore) =>
        createJobService({ jobs, history, calendars }, config, tenants),
      inject: [JOB_STORE, HISTORY_STORE, CALENDAR_STORE],
    },
    {
      provide: JobHistoryService,
      useFactory: (jobs: JobStore, history: HistoryStore, service: JobService) =>
        new JobHistoryService(jobs, history, service),
      inject: [JOB_STORE, HISTORY_STORE, JobService],
    },
    {
      provide: CalendarService,
      useFactory: (calendars: CalendarStore, service: JobService) =>
        new CalendarService(calendars, service, { herdJitterMs: config.scheduler.herdJitterMs }),
      inject: [CALENDAR_STORE, JobService],
    },
    {
      provide: BulkActionService,
      useFactory: (bulk: BulkStore, service: JobService) => new BulkActionService(bulk, service),
      inject: [BULK_STORE, JobService],
    },
    {
      provide: BackfillService,
      useFactory: (backfills: BackfillStore, service: JobService) => new BackfillService(service, backfills),
      inject: [BACKFILL_STORE, JobService],
    },
    {
      provide: InsightService,
      useFactory: (insight: InsightStore, stats: ClusterStatsStore, jobs: JobStore, kafka: LazyKafkaAdmin) =>
        new InsightService(
          insight,
          stats,
          jobs,
          {
            groups: [
              { group: config.scheduler.groupId, topic: config.topics.commands },
              { group: config.executor.groupId, topic: config.topics.fires },
            ],
            groupLag: async (group, topic) => (await kafka.get()).groupLag(group, topic),
          },
          config.shardCount,
        ),
      inject: [INSIGHT_STORE, CLUSTER_STATS_STORE, JOB_STORE, KAFKA_PROBE],
    },
  ];
}
