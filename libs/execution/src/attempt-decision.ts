/** After an attempt: succeeded, retry (when) or dead-letter (why), and the completion the ledger records for it. */
import type { DeadLetterReason, FireEvent, FireOutcome, RetryPolicy, RunCompletion } from '@tickwork/domain';
import type { AttemptOutcome } from './attempt';
import { planRetry } from './retry-plan';

export type AttemptDecision =
  | { readonly kind: 'succeeded' }
  | { readonly kind: 'retry'; readonly notBefore: Date }
  | { readonly kind: 'dead-letter'; readonly reason: DeadLetterReason; readonly detail: string };

/** What follows `outcome`, the attempt `attempt` of `fire` under `policy`, decided at `now`. */
export function decideAttempt(
  fire: FireEvent,
  attempt: number,
  policy: RetryPolicy,
  outcome: AttemptOutcome,
  now: Date,
  random: () => number,
): AttemptDecision {
  if (outcome.ok) return { kind: 'succeeded' };
  const plan = planRetry({ outcome, attempt, policy, scheduledFor: fire.scheduledFor, now, random });
  return plan.kind === 'retry' ? { kind: 'retry', notBefore: plan.notBefore } : plan;
}

/** The attempt's outcome as published (its FireResult's outcome). */
export function outcomeOf(decision: AttemptDecision): FireOutcome {
  return decision.kind === 'succeeded'
    ? 'SUCCEEDED'
    : decision.kind === 'retry'
      ? 'RETRYING'
      : 'DEAD_LETTERED';
}

/**
 * The completion the ledger records: a dead letter's reason in its own field, and its error
 * `REASON: detail` (the runs' views show it so).
 */
export function completionOf(outcome: AttemptOutcome, decision: AttemptDecision): RunCompletion {
  const status = outcomeOf(decision);
  return {
    status: status === 'SUCCEEDED' ? 'SUCCEEDED' : status === 'RETRYING' ? 'RETRYING' : 'DEAD_LETTERED',
    httpStatus: outcome.httpStatus,
    error: decision.kind === 'dead-letter' ? `${decision.reason}: ${decision.detail}` : outcome.error,
    nextAttemptAt: decision.kind === 'retry' ? decision.notBefore : null,
    deadLetterReason: decision.kind === 'dead-letter' ? decision.reason : null,
  };
}

/**
 * The detail of a recorded dead letter: its error without the leading `REASON: ` (completionOf
 * wrote it so); the whole error when it does not lead with the reason.
 */
export function deadLetterDetail(reason: DeadLetterReason, error: string | null): string {
  const prefix = `${reason}: `;
  if (error === null) return 'failed';
  return error.startsWith(prefix) ? error.slice(prefix.length) : error;
}
