/**
 * What the jobs use cases write and read about jobs: the audit and command stamps every change
 * carries, a new job, a list query, and the conflicts the store reports (a taken id, a command
 * applied before, a dead letter replayed before). libs/jobs' JobStore port speaks it; libs/store's
 * JobRepository implements that port and throws these errors, which the use cases catch.
 */
import type { FireEvent } from './fire';
import type { Job, JobDefinition, JobStatus, JsonValue } from './job';
import type { PlannedOccurrence } from './claim-planner';
import type { Run } from './run';

/** A job of this id exists already (a create, or a store insert, of a taken id). */
export class JobAlreadyExistsError extends Error {
  constructor(readonly jobId: string) {
    super(`job ${jobId} already exists`);
    this.name = 'JobAlreadyExistsError';
  }
}

/**
 * A Kafka command whose (tenant, command_id) already has an outcome: the change is not made again.
 * `outcome` is that first outcome: APPLIED, or the reject code it was refused with (`reason`).
 */
export class DuplicateCommandError extends Error {
  constructor(
    readonly tenantId: string,
    readonly commandId: string,
    readonly outcome: string = 'APPLIED',
    readonly reason: string | null = null,
  ) {
    super(
      outcome === 'APPLIED'
        ? `command ${commandId} of tenant ${tenantId} was already applied`
        : `command ${commandId} of tenant ${tenantId} was already rejected (${outcome}): ${reason ?? ''}`,
    );
    this.name = 'DuplicateCommandError';
  }
}

/** A dead letter that was already replayed once. */
export class AlreadyReplayedError extends Error {
  constructor(
    readonly fireId: string,
    readonly replayFenceToken: number,
  ) {
    super(`dead letter ${fireId} was already replayed as fence token ${replayFenceToken}`);
    this.name = 'AlreadyReplayedError';
  }
}

/** A job as first stored: its definition, shard and first occurrence. */
export interface NewJob {
  readonly definition: JobDefinition;
  readonly shard: number;
  /** The first occurrence; null when the schedule has none (the job is stored COMPLETED). */
  readonly next: PlannedOccurrence | null;
}

/** Who made a change, through which interface, and what it was: one audit_events row. */
export interface AuditEntry {
  readonly actor: string;
  /** `anonymous`: a call refused for want of a valid token. */
  readonly role: 'tenant' | 'admin' | 'anonymous';
  readonly via: 'grpc' | 'rest' | 'kafka';
  readonly action: string;
}

/** The Kafka command a change came from, recorded so a re-delivery is not applied twice. */
export interface CommandStamp {
  readonly tenantId: string;
  readonly commandId: string;
  readonly type: string;
}

/** Who makes a change and the command it came from: what the change's audit and dedupe record. */
export interface MutationMeta {
  readonly audit: AuditEntry;
  readonly command?: CommandStamp;
}

/** A dead-lettered fire as recorded: the run and the fire event it came from. */
export interface DeadLetterRecord {
  readonly run: Run;
  /** The fire as claimed (from the outbox row), or null when that row is gone. */
  readonly event: FireEvent | null;
  readonly replayFenceToken: number | null;
}

/** The job a CreateJob under an idempotency key created, and what that request was. */
export interface IdempotencyRecord {
  readonly jobId: string;
  readonly requestSha256: string;
}

/** Filters and keyset page of ListJobs. */
export interface JobListQuery {
  readonly tenantId?: string;
  readonly status?: JobStatus;
  readonly labels?: Readonly<Record<string, string>>;
  /** Only jobs whose id starts with this (a range on the primary key or jobs_tenant_idx). */
  readonly jobIdPrefix?: string;
  /** Only jobs that do NOT have any of these label values (`env!=prod`). */
  readonly labelsNot?: Readonly<Record<string, string>>;
  /** Only jobs whose target is of this type (`webhook`, `kafka`). */
  readonly targetType?: string;
  /** Only jobs whose id sorts after this one (the previous page's last). */
  readonly afterJobId?: string;
  readonly limit: number;
  /** About this many bytes of payload, target and labels JSON at most (at least one job). */
  readonly maxBytes?: number;
  /** How many jobs (in key order, after tenant and prefix) the other filters look at, at most. */
  readonly maxScan?: number;
}

/**
 * A page of ListJobs. `cut`: jobs within the limit were left out for the bytes. `scannedTo`: the
 * last job id of a filter window that was used up, where the next page goes on (the page may be
 * short, even empty, while more follow); null when the window was not used up.
 */
export interface JobListPage {
  readonly jobs: Job[];
  readonly cut: boolean;
  readonly scannedTo: string | null;
}

/** The audit event of a call that was refused, failed, or changed nothing: its outcome and facts. */
export interface RefusedChange {
  readonly tenantId: string | null;
  readonly jobId: string | null;
  /** OK, or the error code the call was refused with. */
  readonly outcome: string;
  readonly details?: Record<string, JsonValue>;
}

/** More than one database is configured and this operation cannot span them (yet). */
export class NotShardedError extends Error {
  constructor(what: string) {
    super(
      `${what} is not available while the store is sharded across several databases (TICKWORK_STORE_SHARDS): see docs/scale.md`,
    );
    this.name = 'NotShardedError';
  }
}
