/**
 * The store ports of the jobs use cases: what JobService, JobHistoryService, InsightService,
 * BulkActionService, CalendarService and BackfillService need from storage, in the domain's
 * vocabulary. libs/store's repositories implement them (JobRepository, HistoryRepository,
 * InsightRepository, ClusterStatsRepository, BulkRepository, CalendarRepository,
 * BackfillRepository); the apps wire them in. No port exposes a connection or a transaction: a
 * change that must be atomic is one call, and the store keeps its transaction inside it.
 */
import type {
  AuditEntry,
  Backfill,
  BackfillItemState,
  BackfillLedger,
  BackfillPlan,
  BackfillRequest,
  BulkCandidate,
  BulkScope,
  BulkWindowChange,
  BusinessCalendar,
  CalendarWrite,
  ClaimedAheadFire,
  CommandStamp,
  DeadLetterEntry,
  DeadLetterRecord,
  ExecutorInFlight,
  FireEvent,
  IdempotencyRecord,
  Job,
  JobDefinition,
  JobListPage,
  JobListQuery,
  JobStatus,
  JsonValue,
  LatenessReport,
  LatenessScope,
  LedgerRun,
  MutationMeta,
  NewJob,
  OccurrenceEntry,
  OccurrenceLedgerCursor,
  PlannedOccurrence,
  RefusedChange,
  ReplanJob,
  ShardBacklog,
  ShardLease,
  ShardOutbox,
  StoredCalendar,
} from '@tickwork/domain';

/**
 * Jobs: read, listed, and changed one at a time under the job's lock. Conflicts are thrown as the
 * domain's errors: JobAlreadyExistsError (an insert of a taken id), DuplicateCommandError (a
 * command with an outcome already), AlreadyReplayedError (a dead letter replayed before).
 */
export interface JobStore {
  /** One job by id, or null. */
  findJob(jobId: string): Promise<Job | null>;
  /** A keyset page of jobs matching the query (see JobListPage for `cut` and `scannedTo`). */
  listJobs(query: JobListQuery): Promise<JobListPage>;
  /**
   * Runs `work` on the job locked against concurrent changes and scheduler claims (null when there
   * is no such job), all or nothing with the command's dedupe record and the audit event. Throws
   * DuplicateCommandError, without calling `work`, when `meta.command` has an outcome already.
   */
  mutate<T>(
    jobId: string,
    meta: MutationMeta,
    work: (job: Job | null, locked: LockedJob) => Promise<T>,
  ): Promise<T>;
  /** Records a Kafka command's rejection as its one outcome; false when it had one already. */
  recordCommandRejection(
    command: CommandStamp,
    jobId: string,
    code: string,
    reason: string,
  ): Promise<boolean>;
  /** The live (younger than `retentionMs`) record of a CreateJob idempotency key, or null. */
  findIdempotencyKey(tenantId: string, key: string, retentionMs: number): Promise<IdempotencyRecord | null>;
  /** Records the audit event of a call that was refused, failed, or changed nothing. */
  recordRefusal(audit: AuditEntry, what: RefusedChange): Promise<void>;
}

/** What a change may do to the one job it holds locked (inside JobStore.mutate). */
export interface LockedJob {
  /** Live (SCHEDULED or PAUSED) jobs of a tenant, counted so that concurrent creates cannot both pass a quota. */
  liveJobCount(tenantId: string): Promise<number>;
  /** Stores a new job (continuing the fence tokens of a deleted job of the same id). */
  insert(job: NewJob): Promise<Job>;
  /** Replaces the definition; `next` 'keep' leaves the next occurrence as it is. Bumps the version. */
  replaceDefinition(
    definition: JobDefinition,
    status: JobStatus,
    next: PlannedOccurrence | null | 'keep',
  ): Promise<Job>;
  /** Sets the status (PAUSED or SCHEDULED), keeping the next occurrence unless given. Bumps the version. */
  setStatus(status: 'PAUSED' | 'SCHEDULED', next?: PlannedOccurrence): Promise<Job>;
  /** Deletes the job, keeping its last fence token in a tombstone and dropping its fire history (runs stay). */
  delete(): Promise<void>;
  /**
   * Takes a new fence token (not counted against max_fires) and puts a fire for it in the outbox
   * with the given trigger; `build` makes the event at the store's now. The fire records
   * `jobVersion` (a replay: the version of the fire it repeats), else the job's current version.
   */
  recordFire(
    trigger: 'MANUAL' | 'REPLAY',
    claimedBy: string,
    build: (fenceToken: number, now: Date) => FireEvent,
    jobVersion?: number | null,
  ): Promise<FireEvent>;
  /** A dead-lettered run of this job, or null. */
  deadLetter(fenceToken: number): Promise<DeadLetterRecord | null>;
  /** Records that a dead letter was replayed; throws AlreadyReplayedError the second time. */
  markReplayed(fenceToken: number, replayFenceToken: number, by: string): Promise<void>;
  /** Extra facts for the change's audit event. */
  note(details: Record<string, JsonValue>): void;
  /**
   * Records that this job is the one created under (tenant, key), unless a live record holds that
   * key already (false). Waits for a concurrent change holding the same key; a record older than
   * `retentionMs` is taken over.
   */
  claimIdempotencyKey(
    tenantId: string,
    key: string,
    requestSha256: string,
    retentionMs: number,
  ): Promise<boolean>;
}

/** What happened to jobs: runs, the occurrence ledger and dead letters, newest first. */
export interface HistoryStore {
  /** A job's runs, newest first, before `beforeFenceToken` when given. */
  listRuns(jobId: string, limit: number, beforeFenceToken?: number): Promise<LedgerRun[]>;
  /** The latest run of each job that has one. */
  lastRuns(jobIds: readonly string[]): Promise<Map<string, LedgerRun>>;
  /** One run of a job, or null. */
  findRun(jobId: string, fenceToken: number): Promise<LedgerRun | null>;
  /** A job's fires claimed ahead of their time (the outbox), oldest first. */
  listClaimedAhead(jobId: string, limit: number): Promise<ClaimedAheadFire[]>;
  /** A page of a job's occurrence ledger, newest first, after `cursor` when given. */
  listOccurrences(jobId: string, limit: number, cursor?: OccurrenceLedgerCursor): Promise<OccurrenceEntry[]>;
  /** A page of dead letters (of a tenant, of a job, or every one), newest first. */
  listDeadLetters(query: {
    tenantId?: string;
    jobId?: string;
    limit: number;
    before?: DeadLetterEntry['cursor'];
  }): Promise<DeadLetterEntry[]>;
}

/** The console's cluster and lateness views (read-only, bounded queries). */
export interface InsightStore {
  shardLeases(): Promise<ShardLease[]>;
  /** Runs in flight and retrying, per executor. */
  inFlight(): Promise<ExecutorInFlight[]>;
  /** Lateness of the finished runs in `scope` over the last `windowMs`, in `bucketCount` buckets. */
  lateness(scope: LatenessScope, windowMs: number, bucketCount: number): Promise<LatenessReport>;
}

/** The cluster gauges' per-shard counts (read-only, bounded per shard). */
export interface ClusterStatsStore {
  /** Every shard's due, unclaimed jobs. */
  dueBacklog(shardCount: number): Promise<ShardBacklog[]>;
  /** Every shard's fires claimed and not yet confirmed on Kafka. */
  outbox(shardCount: number): Promise<ShardOutbox[]>;
}

/** Label-wide actions, one bounded window of jobs at a time. */
export interface BulkStore {
  /** How many jobs match, and the first `sample` of their ids. */
  count(scope: BulkScope, sample: number): Promise<{ matched: number; sample: string[] }>;
  /**
   * The window of at most `scan` jobs after `after`: its matching jobs locked, `decide` chooses the
   * change, which is applied and audited (one event per matched job) all or nothing. Returns the
   * window's last job id (null: the end was reached) and what `decide` returned.
   */
  window<T extends BulkWindowChange>(
    scope: BulkScope,
    after: string | null,
    scan: number,
    audit: AuditEntry,
    auditDetails: Record<string, JsonValue>,
    decide: (candidates: readonly BulkCandidate[]) => T,
  ): Promise<{ end: string | null; change: T }>;
}

/** Business calendars by name for a tenant: its own before shared ones; names that resolve to none are absent. */
export interface CalendarResolver {
  resolve(tenantId: string, names: readonly string[]): Promise<Map<string, BusinessCalendar>>;
}

/** Business calendars (a tenant's, or shared: tenant null), versioned, and the re-plan of their jobs. */
export interface CalendarStore extends CalendarResolver {
  /** The calendar `name` of `tenantId` (null: the shared one), or null. */
  find(tenantId: string | null, name: string): Promise<StoredCalendar | null>;
  /** Calendars by name: a tenant's own and the shared ones, or (no tenant) every one. */
  list(query: { tenantId?: string; afterName?: string; limit: number }): Promise<StoredCalendar[]>;
  /**
   * Creates or updates a calendar with its version and audit event, all or nothing: `work` gets the
   * current calendar (null: none) and returns the new state, or throws to refuse.
   */
  write(
    audit: AuditEntry,
    tenantId: string | null,
    name: string,
    work: (current: StoredCalendar | null) => Promise<CalendarWrite> | CalendarWrite,
  ): Promise<StoredCalendar>;
  /**
   * Deletes a calendar with its audit event; `check` gets how many jobs (and a few of them) still
   * use it, and throws to refuse. False when there was none.
   */
  delete(
    audit: AuditEntry,
    tenantId: string | null,
    name: string,
    check: (current: StoredCalendar, users: { count: number; sample: string[] }) => void,
  ): Promise<boolean>;
  /** A batch of the live jobs that use calendar `name`, after job id `after`, with their calendars resolved. */
  jobsUsing(tenantId: string | null, name: string, after: string, limit: number): Promise<ReplanJob[]>;
  /** Sets a job's next occurrence after a calendar change unless a claim advanced it meanwhile; true when written. */
  replan(job: ReplanJob, next: PlannedOccurrence | null): Promise<boolean>;
}

/** Backfills as the API and the commands consumer create, read and cancel them. */
export interface BackfillStore {
  /** A job, for planning a backfill (null: no such job). */
  findJob(jobId: string): Promise<Job | null>;
  /** What the job's ledger holds for the window: the occurrences fired or skipped already. */
  ledger(jobId: string, from: Date, to: Date): Promise<BackfillLedger>;
  /**
   * Stores a backfill with its planned occurrences and audit event, all or nothing; a Kafka
   * command's stamp is recorded too (a second copy: DuplicateCommandError).
   */
  create(req: {
    job: Job;
    request: BackfillRequest;
    plan: BackfillPlan;
    createdBy: string;
    audit: AuditEntry;
    command?: CommandStamp;
  }): Promise<Backfill>;
  /** One backfill of the job (null: none of it has this id). The job id also routes a sharded store. */
  get(jobId: string, backfillId: number): Promise<Backfill | null>;
  /** A job's backfills, newest first, before `beforeId` when given. */
  list(jobId: string, limit: number, beforeId?: number): Promise<Backfill[]>;
  /** A page of one of the job's backfills' planned occurrences, after `afterSeq`. */
  items(jobId: string, backfillId: number, limit: number, afterSeq?: number): Promise<BackfillItemState[]>;
  /** Cancels an active backfill of the job, audited; null when it has no such backfill. */
  cancel(jobId: string, backfillId: number, by: string, audit: AuditEntry): Promise<Backfill | null>;
}
