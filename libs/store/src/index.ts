export { createPool, ensureDatabase, inTransaction, isSessionLoss, type PoolOptions } from './database';
export { isTransientDatabaseError } from './transient-error';
export { migrate, listMigrations, type Migration } from './migrate';
export { dumpFreshSchema, dumpSchema, normaliseSchemaDump, SCHEMA_DUMP_PATH } from './schema-dump';
export { JobRepository } from './repositories/job.repository';
export { FireStore } from './repositories/fire-store';
export { ShardLeaseRepository } from './repositories/shard-lease.repository';
export { ClusterStatsRepository } from './repositories/cluster-stats.repository';
export { ExecutorLivenessRepository } from './repositories/executor-liveness.repository';
export {
  RunRepository,
  DEFAULT_HOLDER_LIVENESS,
  type HolderLiveness,
  type RunStart,
  type RecordedRun,
  type RunCompletion,
  type UnleasedRun,
  type RunState,
} from './repositories/run.repository';
export type { Pool } from 'pg';
export { HistoryRepository } from './repositories/history.repository';
export { traceIdOf } from './repositories/rows';
export { InsightRepository } from './repositories/insight.repository';
export { BulkRepository } from './repositories/bulk.repository';
export { SloRepository } from './repositories/slo.repository';
export { CalendarRepository } from './repositories/calendar.repository';
export { JOB_CALENDARS_SQL } from './repositories/calendar-rows';
export { BackfillRepository, type BackfillStep, type DueBackfill } from './repositories/backfill.repository';
export { ShardPools, type ShardDatabasePool } from './sharding/shard-pools';
export { mergeJobPages, mergeSortedPages, type JobListPart } from './sharding/merged-pages';
export {
  reconcileShardMap,
  shardMapDifferences,
  shardsWithJobs,
  ShardMapMismatchError,
  type ConfiguredShardMap,
} from './sharding/shard-map-registry';
export {
  RoutedJobRepository,
  RoutedHistoryRepository,
  RoutedRunRepository,
  EveryDatabaseLivenessRepository,
  RoutedClusterStatsRepository,
  newestDeadLetterFirst,
} from './sharding/routed-repositories';
export { storeRepositories, type StoreRepositories } from './sharding/store-repositories';
