/** Per-job policies: what to do about retries, missed fires, overlapping runs and herds. */
import type { FireOutcome } from './fire';
import type { CalendarRule } from './schedule/business-calendar';

export type MisfirePolicy = 'FIRE_ONCE' | 'FIRE_ALL' | 'SKIP';
export const MISFIRE_POLICIES: readonly MisfirePolicy[] = ['FIRE_ONCE', 'FIRE_ALL', 'SKIP'];

export type OverlapPolicy = 'ALLOW' | 'FORBID';
export const OVERLAP_POLICIES: readonly OverlapPolicy[] = ['ALLOW', 'FORBID'];

/**
 * Which attempts' outcomes go to the fire-results topic: ALL; FAILURES, every outcome but
 * SUCCEEDED (a failed attempt that will be retried is RETRYING, its last one DEAD_LETTERED); NONE.
 */
export type ResultEventsPolicy = 'ALL' | 'FAILURES' | 'NONE';
export const RESULT_EVENTS_POLICIES: readonly ResultEventsPolicy[] = ['ALL', 'FAILURES', 'NONE'];

/** Whether an attempt with this outcome is published under the job's result_events policy (absent: ALL). */
export function shouldPublishResult(policy: ResultEventsPolicy | undefined, outcome: FireOutcome): boolean {
  if (policy === 'NONE') return false;
  if (policy === 'FAILURES') return outcome !== 'SUCCEEDED';
  return true;
}

/** Exponential backoff with full jitter; gives up after maxAttempts or when the fire is older than maxEventAgeMs. */
export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly multiplier: number;
  readonly maxBackoffMs: number;
  readonly maxEventAgeMs: number;
}

export interface JobPolicies {
  readonly retry: RetryPolicy;
  readonly misfire: MisfirePolicy;
  /** Missed occurrences older than this are skipped whatever the misfire policy; null = no window. */
  readonly catchUpWindowMs: number | null;
  readonly overlap: OverlapPolicy;
  /**
   * Each fire is moved deterministically within [nominal, nominal + jitterMs), and the moved time is
   * the fire's scheduled time: lateness counts from it.
   */
  readonly jitterMs: number;
  /**
   * Fire SLO: an occurrence whose run starts more than this after its nominal time is LATE in the
   * ledger. Null or absent: the deployment's default (TICKWORK_SLO_TOLERANCE_MS) at judging time.
   */
  readonly toleranceMs?: number | null;
  /** Opt-in to per-job SLO metrics (series labelled with the job id); absent = false (per tenant only). */
  readonly sloMetrics?: boolean;
  /**
   * Herd window: each occurrence fires at a slot that is a stable hash of (job, occurrence) within
   * [nominal, nominal + spreadMs), at most the schedule's spacing. Unlike jitter, lateness still
   * counts from the nominal time, and the slot's offset is recorded beside it. 0 (or absent) = off.
   */
  readonly spreadMs?: number;
  /**
   * Business calendars (names of the tenant's own or shared calendars) the job's occurrences go
   * through; a day is a business day when every one has it open. Empty or absent: none.
   */
  readonly calendars?: readonly string[];
  /** What an occurrence on a closed day does (with calendars): SKIP, NEXT/PREVIOUS_BUSINESS_DAY, ONLY_CLOSED_DAYS. */
  readonly calendarRule?: CalendarRule;
  /** Which outcomes the executor publishes to fire-results (shouldPublishResult); absent = ALL. */
  readonly resultEvents?: ResultEventsPolicy;
}

/** Longest accepted retry backoff (initial or max): 7 days. */
export const MAX_RETRY_BACKOFF_MS = 7 * 86_400_000;
/** Longest accepted max_event_age_ms: 366 days. */
export const MAX_EVENT_AGE_MS = 366 * 86_400_000;

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 5,
  initialBackoffMs: 1_000,
  multiplier: 2,
  maxBackoffMs: 10 * 60_000,
  maxEventAgeMs: 24 * 3_600_000,
};

export const DEFAULT_POLICIES: JobPolicies = {
  retry: DEFAULT_RETRY_POLICY,
  misfire: 'FIRE_ONCE',
  catchUpWindowMs: null,
  overlap: 'ALLOW',
  jitterMs: 0,
  spreadMs: 0,
};
