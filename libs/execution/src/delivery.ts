/** What every delivery module shares: the executor's options, its reports, events and context. */
import type { Clock, DeadLetterReason, FireEvent, FireOutcome, FireResult } from '@tickwork/domain';
import type { Slots } from './slots';

export interface ExecutorOptions {
  readonly owner: string;
  /** The issuer part of this process's lease tokens (newLeaseIssuer; one per process, so its liveness beat names it). */
  readonly leaseIssuer?: string;
  readonly runLeaseMs: number;
  readonly heartbeatMs: number;
  /** Fires older than this are refused: their ledger rows may have been purged, so a re-run could not be detected. */
  readonly runRetentionMs: number;
  /** The executor's time and timers (default: the system clock). */
  readonly clock?: Clock;
  readonly random?: () => number;
  /**
   * Bounds the webhook calls in flight (the executor's concurrency). Taking the lease before and
   * recording the outcome, handing on and publishing the result after happen outside the slot:
   * they are batched bookkeeping, and holding a slot through them would cut what a given
   * concurrency gets through by half or more. A Kafka target takes no slot: its message joins
   * the executor's batched produce requests, whose own bound (requests in flight) is what limits
   * the load on the brokers; a slot per message would only tie throughput to the ack latency.
   * Absent = unbounded.
   */
  readonly webhookSlots?: Slots;
  /**
   * How long a ledger statement is tried again on a transient database error (backoff 100 ms
   * doubling to 2 s) before the delivery is given back to be re-delivered. Default 5 minutes.
   */
  readonly ledgerRetryMs?: number;
}

export type ExecutionReport =
  | { readonly kind: 'executed'; readonly outcome: FireOutcome; readonly result: FireResult }
  | { readonly kind: 'duplicate'; readonly reason: string }
  | { readonly kind: 'lease-lost' }
  /** Not yet: try this delivery again after `afterMs` (a live lease elsewhere, or a fire published ahead of its time). */
  | { readonly kind: 'later'; readonly afterMs: number; readonly why: string }
  /** The executor is stopping: the lease was released and the delivery must not be acknowledged. */
  | { readonly kind: 'abandoned' };

/** The ledger statements of a delivery, as named in `onLedgerRetry`. */
export type LedgerStep = 'begin' | 'check' | 'record' | 'hand-off';

export interface ExecutorEvents {
  onExecuted?(fire: FireEvent, result: FireResult): void;
  /** A ledger statement failed on a transient error and will be tried again (`tries` so far). */
  onLedgerRetry?(step: LedgerStep, error: Error, tries: number): void;
  onDuplicate?(fire: FireEvent, reason: string): void;
  onLeaseLost?(fire: FireEvent): void;
  onDeadLettered?(fire: FireEvent, reason: DeadLetterReason, detail: string): void;
}

/** Where this delivery came from, for dead-letter headers. */
export interface DeliveryContext {
  readonly source?: string;
}

/** The report of a delivery given back because the ledger could not be reached: re-delivered in a second. */
export const LEDGER_UNREACHABLE = {
  kind: 'later',
  afterMs: 1_000,
  why: 'run ledger unreachable',
} as const satisfies ExecutionReport;

export const ABANDONED = { kind: 'abandoned' } as const satisfies ExecutionReport;

export const LEASE_LOST = { kind: 'lease-lost' } as const satisfies ExecutionReport;

/** The identity of a fire among the deliveries in this process: `job_id\u0000fence_token`. */
export function runKeyOf(fire: FireEvent): string {
  return `${fire.jobId}\u0000${fire.fenceToken}`;
}
