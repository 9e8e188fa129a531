/**
 * What to do after a failed attempt: retry later (when, and through which retry tier) or give up
 * and dead-letter (why). Pure: the clock and the random source are passed in.
 */
import type { DeadLetterReason, RetryPolicy } from '@tickwork/domain';
import type { AttemptOutcome } from './attempt';

/** Why a fire was dead-lettered (the domain's word; re-exported here where the retry plan decides it). */
export type { DeadLetterReason };

export interface RetryTier {
  readonly topic: string;
  readonly delayMs: number;
}

export type RetryDecision =
  | {
      readonly kind: 'retry';
      readonly delayMs: number;
      readonly notBefore: Date;
      readonly nextAttempt: number;
    }
  | { readonly kind: 'dead-letter'; readonly reason: DeadLetterReason; readonly detail: string };

/** The upper bound of the backoff before `attempt + 1`: initial × multiplier^(attempt−1), capped. */
export function backoffCapMs(policy: RetryPolicy, attempt: number): number {
  const raw = policy.initialBackoffMs * Math.pow(policy.multiplier, Math.max(0, attempt - 1));
  return Math.max(0, Math.min(policy.maxBackoffMs, Number.isFinite(raw) ? raw : policy.maxBackoffMs));
}

/** Full jitter: a delay drawn uniformly from [0, cap] so retries of many fires spread out. */
export function fullJitterDelayMs(policy: RetryPolicy, attempt: number, random: () => number): number {
  const cap = backoffCapMs(policy, attempt);
  return Math.min(cap, Math.floor(random() * (cap + 1)));
}

/** Decides the fate of a failed attempt number `attempt` (1-based) of a fire scheduled for `scheduledFor`. */
export function planRetry(input: {
  readonly outcome: AttemptOutcome;
  readonly attempt: number;
  readonly policy: RetryPolicy;
  readonly scheduledFor: Date;
  readonly now: Date;
  readonly random: () => number;
}): RetryDecision {
  const { outcome, attempt, policy } = input;
  const error = outcome.error ?? 'failed';
  if (outcome.refused) return { kind: 'dead-letter', reason: 'DESTINATION_REFUSED', detail: error };
  if (!outcome.retryable) return { kind: 'dead-letter', reason: 'NON_RETRYABLE', detail: error };
  if (attempt >= policy.maxAttempts) {
    return {
      kind: 'dead-letter',
      reason: 'RETRIES_EXHAUSTED',
      detail: `gave up after ${attempt} attempt${attempt === 1 ? '' : 's'}; last error: ${error}`,
    };
  }
  // A target that said when to come back (Retry-After) is not called sooner than that.
  const delayMs = Math.max(fullJitterDelayMs(policy, attempt, input.random), outcome.retryAfterMs ?? 0);
  const notBefore = new Date(input.now.getTime() + delayMs);
  if (notBefore.getTime() - input.scheduledFor.getTime() > policy.maxEventAgeMs) {
    return {
      kind: 'dead-letter',
      reason: 'MAX_EVENT_AGE',
      detail: `the next attempt (in ${delayMs} ms) would be later than max_event_age_ms=${policy.maxEventAgeMs} after the scheduled time; last error: ${error}`,
    };
  }
  return { kind: 'retry', delayMs, notBefore, nextAttempt: attempt + 1 };
}

/**
 * The retry tier for a delay: the shortest tier at least as long as the delay, so a message never
 * waits behind another for longer than its tier's delay; the longest tier when none is long enough
 * (the retry consumer then re-enqueues it until its time comes).
 */
export function pickRetryTier(tiers: readonly RetryTier[], delayMs: number): RetryTier {
  if (tiers.length === 0) throw new Error('no retry tiers configured');
  const sorted = [...tiers].sort((a, b) => a.delayMs - b.delayMs);
  return sorted.find((t) => t.delayMs >= delayMs) ?? sorted[sorted.length - 1]!;
}
