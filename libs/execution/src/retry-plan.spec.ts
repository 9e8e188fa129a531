import type { RetryPolicy } from '@tickwork/domain';
import type { AttemptOutcome } from './attempt';
import { backoffCapMs, fullJitterDelayMs, pickRetryTier, planRetry } from './retry-plan';

const policy: RetryPolicy = {
  maxAttempts: 4,
  initialBackoffMs: 1_000,
  multiplier: 2,
  maxBackoffMs: 5_000,
  maxEventAgeMs: 60_000,
};
const now = new Date('2026-03-01T12:00:00Z');
const failed = (o: Partial<AttemptOutcome> = {}): AttemptOutcome => ({
  ok: false,
  httpStatus: 503,
  error: 'HTTP 503',
  retryable: true,
  ...o,
});

describe('backoff', () => {
  it('grows by the multiplier from the initial backoff and stops at the cap', () => {
    expect([1, 2, 3, 4, 5].map((a) => backoffCapMs(policy, a))).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
  });

  it('draws the delay uniformly between 0 and the cap (full jitter)', () => {
    expect(fullJitterDelayMs(policy, 2, () => 0)).toBe(0);
    expect(fullJitterDelayMs(policy, 2, () => 0.5)).toBe(1_000);
    expect(fullJitterDelayMs(policy, 2, () => 0.999999999)).toBe(2_000);
    expect(fullJitterDelayMs(policy, 9, () => 0.999999999)).toBe(5_000);
  });

  it('does not overflow with a huge multiplier', () => {
    expect(backoffCapMs({ ...policy, multiplier: 100, maxBackoffMs: 7 }, 99)).toBe(7);
  });
});

describe('planRetry', () => {
  const plan = (
    outcome: AttemptOutcome,
    attempt: number,
    extra: Partial<{ scheduledFor: Date; random: () => number }> = {},
  ) =>
    planRetry({
      outcome,
      attempt,
      policy,
      scheduledFor: extra.scheduledFor ?? now,
      now,
      random: extra.random ?? (() => 0.5),
    });

  it('retries a retryable failure after a jittered delay, with the next attempt number', () => {
    expect(plan(failed(), 1)).toEqual({
      kind: 'retry',
      delayMs: 500,
      notBefore: new Date(now.getTime() + 500),
      nextAttempt: 2,
    });
    expect(plan(failed(), 3)).toMatchObject({ kind: 'retry', delayMs: 2_000, nextAttempt: 4 });
  });

  it('waits at least as long as Retry-After asks', () => {
    expect(plan(failed({ httpStatus: 429, retryAfterMs: 30_000 }), 1)).toMatchObject({
      kind: 'retry',
      delayMs: 30_000,
    });
    expect(plan(failed({ httpStatus: 429, retryAfterMs: 10 }), 1)).toMatchObject({
      kind: 'retry',
      delayMs: 500,
    });
  });

  it('dead-letters a non-retryable failure at once, and a refused destination as such', () => {
    expect(plan(failed({ httpStatus: 400, error: 'HTTP 400', retryable: false }), 1)).toEqual({
      kind: 'dead-letter',
      reason: 'NON_RETRYABLE',
      detail: 'HTTP 400',
    });
    expect(
      plan(failed({ retryable: false, refused: true, error: 'DESTINATION_REFUSED: x' }), 1),
    ).toMatchObject({ kind: 'dead-letter', reason: 'DESTINATION_REFUSED' });
  });

  it('dead-letters once max attempts are used up', () => {
    expect(plan(failed(), 4)).toEqual({
      kind: 'dead-letter',
      reason: 'RETRIES_EXHAUSTED',
      detail: 'gave up after 4 attempts; last error: HTTP 503',
    });
  });

  it('dead-letters when the next attempt would be past the max event age', () => {
    const old = new Date(now.getTime() - 59_800);
    expect(plan(failed(), 1, { scheduledFor: old })).toMatchObject({
      kind: 'dead-letter',
      reason: 'MAX_EVENT_AGE',
    });
    expect(plan(failed(), 1, { scheduledFor: old, random: () => 0 })).toMatchObject({
      kind: 'retry',
      delayMs: 0,
    });
  });
});

describe('pickRetryTier', () => {
  const tiers = [
    { topic: 't.1m', delayMs: 60_000 },
    { topic: 't.5s', delayMs: 5_000 },
    { topic: 't.10m', delayMs: 600_000 },
  ];

  it('picks the shortest tier that covers the delay', () => {
    expect(pickRetryTier(tiers, 0).topic).toBe('t.5s');
    expect(pickRetryTier(tiers, 5_000).topic).toBe('t.5s');
    expect(pickRetryTier(tiers, 5_001).topic).toBe('t.1m');
    expect(pickRetryTier(tiers, 600_000).topic).toBe('t.10m');
  });

  it('falls back to the longest tier for longer delays', () => {
    expect(pickRetryTier(tiers, 3_600_000).topic).toBe('t.10m');
  });
});
