/**
 * The history of a job as the admin API reads it: its runs (the executor's ledger, with the trace
 * and trigger of each fire), the occurrence ledger (fires merged with occurrences that did not
 * fire) and dead letters. libs/jobs' HistoryStore port returns these; libs/store's
 * HistoryRepository implements it.
 */
import type { Run, RunStatus } from './run';

/** A run as the ledger reads it back for operators: with the trace id of its fire, when it has one. */
export interface LedgerRun extends Run {
  /** The W3C trace id (32 hex) of the fire's trace (fires.trace_context), or null when untraced or purged. */
  readonly traceId: string | null;
  /** What made its fire; null when the fire log row was purged. */
  readonly trigger: FireTrigger | null;
}

/** What made a fire. */
export type FireTrigger = 'SCHEDULE' | 'MANUAL' | 'REPLAY' | 'BACKFILL';

/** One entry of the occurrence ledger: a fire, or a range of occurrences that did not fire. */
export type OccurrenceEntry =
  | {
      readonly kind: 'FIRE';
      readonly nominalTime: Date;
      readonly fenceToken: number;
      readonly trigger: FireTrigger;
      readonly scheduledFor: Date;
      /** The herd window's slot offset: scheduledFor = nominalTime + spreadOffsetMs (0: no window). */
      readonly spreadOffsetMs: number;
      readonly claimedAt: Date;
      readonly enqueuedAt: Date | null;
      readonly runStatus: RunStatus | null;
      /** The job version the fire was claimed under (null: recorded before versions were). */
      readonly jobVersion: number | null;
      /** The fire SLO verdict, once the scheduler judged the fire LATE or MISSED; null otherwise. */
      readonly slo: { readonly reason: 'LATE' | 'MISSED'; readonly latenessMs: number | null } | null;
      /** The business calendar (`name@version`) that moved this occurrence, and how far (CALENDAR_SHIFT); null: not moved. */
      readonly calendarShift: { readonly calendar: string; readonly shiftMs: number } | null;
      readonly cursor: OccurrenceLedgerCursor;
    }
  | {
      readonly kind: 'SKIP';
      readonly reason: string;
      readonly firstNominal: Date;
      readonly lastNominal: Date;
      readonly occurrences: number;
      readonly recordedAt: Date;
      /** The job version the skip was planned under (null: recorded before versions were). */
      readonly jobVersion: number | null;
      /** CALENDAR_SKIP: the calendar (`name@version`) that closed the day. */
      readonly calendar: string | null;
      readonly cursor: OccurrenceLedgerCursor;
    };

/** Where a page of occurrences stopped: (time, kind, sequence), compared newest first. */
export interface OccurrenceLedgerCursor {
  readonly at: string;
  readonly kind: 'FIRE' | 'SKIP';
  readonly seq: number;
}

export interface DeadLetterEntry {
  readonly run: LedgerRun;
  readonly deadLetteredAt: Date;
  readonly replayFenceToken: number | null;
  readonly replayedAt: Date | null;
  /** Opaque position for the next page (microseconds of the ledger row's last update). */
  readonly cursor: { readonly atMicros: string; readonly jobId: string; readonly fenceToken: number };
}
