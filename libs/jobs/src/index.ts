export {
  JobService,
  etagOf,
  versionOfEtag,
  IDEMPOTENCY_KEY_RETENTION_MS,
  UPDATABLE_FIELDS,
  type JobServiceOptions,
  type JobListRequest,
  type UpdatableField,
  type UpdatePreview,
} from './job-service';
export { createJobService, type JobServiceStores } from './job-service-factory';
export { JobHistoryService, parseFireId, type Page } from './history-service';
export {
  previewSchedule,
  localTime,
  PREVIEW_HORIZON_MS,
  PREVIEW_SLICE_MS,
  PREVIEW_WORK_BUDGET_MS,
  type PreviewCut,
  type PreviewedFire,
  type SchedulePreview,
} from './schedule-preview';
export {
  ScheduleCommandHandler,
  COMMAND_TYPES,
  type CommandBatch,
  type CommandDecoder,
  type CommandHandlerOptions,
  type CommandMessage,
  type CommandMetrics,
  type RejectCode,
  type RejectedCommandSink,
  type ScheduleCommand,
} from './command-handler';
export { callerOf, tenantScope, visibleJob, type Caller, type Via } from './caller';
export {
  errorCodeOf,
  AlreadyExistsError,
  IdempotencyKeyReusedError,
  JobNotFoundError,
  NotFoundError,
  PermissionDeniedError,
  PreconditionFailedError,
  QuotaExceededError,
  UnauthenticatedError,
  type ErrorCode,
} from './errors';
export {
  encodePageToken,
  decodePageToken,
  filtersDigest,
  pageSize,
  checkPosition,
  TOKEN_FIELD,
  type PageFilters,
} from './page-token';
export {
  InsightService,
  LATENESS_WINDOWS,
  type ClusterView,
  type ConsumerLag,
  type LagSource,
  type ShardView,
} from './insight-service';
export {
  BulkActionService,
  BULK_SAMPLE_SIZE,
  DEFAULT_BULK_WINDOW,
  decide as decideBulkWindow,
  type BulkActionResult,
} from './bulk-service';
export {
  CalendarService,
  calendarEtag,
  calendarVersionOfEtag,
  generateHolidays,
  HOLIDAY_LIBRARY,
  REPLAN_BATCH,
} from './calendar-service';
export type {
  BackfillStore,
  BulkStore,
  CalendarResolver,
  CalendarStore,
  ClusterStatsStore,
  HistoryStore,
  InsightStore,
  JobStore,
  LockedJob,
} from './ports';
export {
  BackfillService,
  isBackfillPreview,
  type BackfillDetail,
  type BackfillPreview,
} from './backfill-service';
