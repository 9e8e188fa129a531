export { createPool, ensureDatabase, inTransaction, isSessionLoss, type PoolOptions } from './database';
export { isTransientDatabaseError } from './transient-error';
export { migrate, listMigrations, type Migration } from './migrate';
export { dumpFreshSchema, dumpSchema, normaliseSchemaDump, SCHEMA_DUMP_PATH } from './schema-dump';
export { JobRepository, JobAlreadyExistsError, type NewJob } from './repositories/job.repository';
export { FireStore } from './repositories/fire-store';
export { ShardLeaseRepository } from './repositories/shard-lease.repository';
export {
  ClusterStatsRepository,
  type ShardBacklog,
  type ShardOutbox,
} from './repositories/cluster-stats.repository';
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
export {
  DuplicateCommandError,
  AlreadyReplayedError,
  type AuditEntry,
  type CommandStamp,
  type MutationMeta,
  type JobTransaction,
  type JobListQuery,
  type DeadLetterRecord,
  type IdempotencyRecord,
} from './repositories/job.repository';
export {
  HistoryRepository,
  type OccurrenceEntry,
  type OccurrenceCursor,
  type DeadLetterEntry,
  type FireTrigger,
} from './repositories/history.repository';
export { traceIdOf, type LedgerRun } from './repositories/rows';
export {
  InsightRepository,
  type ShardLease,
  type ExecutorInFlight,
  type LatenessScope,
  type LatenessBucket,
  type LatenessRow,
  type LatenessReport,
} from './repositories/insight.repository';
export {
  BulkRepository,
  type BulkCandidate,
  type BulkJobOutcome,
  type BulkScope,
  type BulkWindowChange,
  type ResumedPause,
} from './repositories/bulk.repository';
export { SloRepository } from './repositories/slo.repository';
export { CalendarRepository, type CalendarWrite, type ReplanJob } from './repositories/calendar.repository';
export { JOB_CALENDARS_SQL } from './repositories/calendar-rows';
export {
  BackfillRepository,
  type Backfill,
  type BackfillItemState,
  type BackfillStep,
  type DueBackfill,
} from './repositories/backfill.repository';
