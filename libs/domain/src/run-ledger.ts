/**
 * The run ledger's vocabulary: what a delivery of a fire learns from, and records in, the ledger
 * (libs/execution's RunLedger port; libs/store's RunRepository implements it).
 */
import type { FireEvent } from './fire';
import type { ResultEventsPolicy, RetryPolicy } from './policies';
import type { Run, RunStatus } from './run';

/**
 * Lease tokens are UUIDs `<issuer>-<lease>`: their first this many characters (64 bits,
 * `xxxxxxxx-xxxx-xxxx`) name the executor instance that issued them, the rest is random per lease.
 * The ledger lets an issuer take back at once a RUNNING run under a lease it issued itself.
 */
export const LEASE_ISSUER_CHARS = 18;

/** Why a fire was dead-lettered; the code leads the DLQ reason and the run's error. */
export type DeadLetterReason =
  | 'NON_RETRYABLE'
  | 'DESTINATION_REFUSED'
  | 'RETRIES_EXHAUSTED'
  | 'MAX_EVENT_AGE'
  | 'UNKNOWN_JOB'
  | 'UNDECODABLE'
  | 'OLDER_THAN_RUN_RETENTION';

/** A run as the executor needs it: the ledger row plus its retry hand-off state. */
export interface RunState extends Run {
  /** When the next attempt of a RETRYING run may start. */
  readonly nextAttemptAt: Date | null;
  /** When the retry message or dead letter that carries this run on was acknowledged by Kafka. */
  readonly handedOffAt: Date | null;
  /** How long the current lease still runs, by the database clock (0 when expired or none). */
  readonly leaseRemainingMs: number;
  /** Why a DEAD_LETTERED run was dead-lettered (null otherwise, and for rows that never said). */
  readonly deadLetterReason: DeadLetterReason | null;
}

/** What the ledger says of a delivery that asked to begin its fire's run. */
export type RunStart =
  | {
      readonly action: 'execute';
      readonly leaseToken: string;
      readonly takenOver: boolean;
      /** The attempt this execution is: the fire's, or higher when it took over a later attempt. */
      readonly attempt: number;
      /** The job's retry policy now, or null when the job no longer exists. */
      readonly retryPolicy: RetryPolicy | null;
      /** The job's result_events policy now (read with retryPolicy); absent = ALL, as for a deleted job. */
      readonly resultEvents?: ResultEventsPolicy;
    }
  | {
      readonly action: 'skip';
      /** ALREADY_FINAL: done; LEASE_HELD: running under a live lease; RETRY_SCHEDULED: this or a later attempt already failed and a retry is due. */
      readonly reason: 'ALREADY_FINAL' | 'LEASE_HELD' | 'RETRY_SCHEDULED';
      readonly status: RunStatus;
      readonly run: RunState | null;
      /** The job's result_events policy now, for a re-published result; absent = ALL. */
      readonly resultEvents?: ResultEventsPolicy;
    };

/** The outcome of an attempt, as recorded under its lease. */
export interface RunCompletion {
  readonly status: Exclude<RunStatus, 'RUNNING'>;
  readonly httpStatus: number | null;
  readonly error: string | null;
  /** For RETRYING: when the next attempt may start. */
  readonly nextAttemptAt?: Date | null;
  /** For DEAD_LETTERED: why (stored in a column of its own, read back by a re-delivery's hand-off). */
  readonly deadLetterReason?: DeadLetterReason | null;
  /**
   * This write is tried again after an error, so an earlier try may have committed with its
   * answer lost: a run already in this status under this lease token counts as recorded.
   */
  readonly retried?: boolean;
}

/**
 * When an attempt started and finished as the run ledger recorded them (the database clock), as
 * returned by the write that recorded the outcome: what the attempt's FireResult carries.
 */
export interface RecordedRun {
  readonly startedAt: Date;
  readonly finishedAt: Date;
  /**
   * The job's result_events policy, when the write read it (an unleased first attempt's record,
   * which has no RunStart to carry it); absent = ALL.
   */
  readonly resultEvents?: ResultEventsPolicy;
}

/** A first attempt that ran without a lease and succeeded (recorded in one insert). */
export interface UnleasedRun {
  readonly fire: FireEvent;
  /** The executor that ran it; one per batch. */
  readonly owner: string;
  readonly durationMs: number;
  readonly httpStatus: number | null;
  /** Stored as the run's lease token, so a retried insert recognises its own row (see `retried`). */
  readonly leaseToken?: string;
  /** Tried again after an error: a run of the fire already stored with this `leaseToken` counts as recorded. */
  readonly retried?: boolean;
}
