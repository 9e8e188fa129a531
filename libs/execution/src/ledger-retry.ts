/**
 * A ledger statement tried again on a transient error (the database restarting, a connection
 * cut) with a short capped backoff: an executor holding a target's answer keeps it and records it
 * rather than call the target again.
 */
import type { Clock } from '@tickwork/domain';
import { LEDGER_UNREACHABLE, type ExecutionReport, type ExecutorEvents, type LedgerStep } from './delivery';
import type { InFlight } from './in-flight';
import type { RunLedger } from './run-ledger';

/** Backoff between tries of a ledger statement that failed on a transient error. */
export const LEDGER_RETRY = { initialMs: 100, maxMs: 2_000 } as const;
export const DEFAULT_LEDGER_RETRY_MS = 300_000;

/** A ledger statement tried until it answered, or given up: the executor is stopping, or the budget ran out. */
export type Retried<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly why: 'stopping' | 'budget' };
const GAVE_UP_STOPPING = { ok: false, why: 'stopping' } as const;
const GAVE_UP_BUDGET = { ok: false, why: 'budget' } as const;

/** What a delivery reports when a ledger statement was given up. */
export function givenUp(why: 'stopping' | 'budget'): ExecutionReport {
  return why === 'stopping' ? { kind: 'abandoned' } : LEDGER_UNREACHABLE;
}

/** Runs ledger statements, each tried again on a transient error until it answers or is given up. */
export class LedgerRetry {
  constructor(
    private readonly runs: RunLedger,
    private readonly clock: Clock,
    private readonly inFlight: InFlight,
    private readonly budgetMs: number,
    private readonly events: ExecutorEvents,
  ) {}

  /**
   * Runs `statement` (`retried` tells it it is a retry) until it answers; gives up when the
   * executor stops or after the budget. An error the ledger does not call transient is thrown.
   */
  async run<T>(
    step: LedgerStep,
    statement: (retried: boolean) => Promise<T>,
    stopping: AbortSignal,
  ): Promise<Retried<T>> {
    const deadline = this.clock.now() + this.budgetMs;
    let delay: number = LEDGER_RETRY.initialMs;
    for (let tries = 1; ; tries++) {
      try {
        return { ok: true, value: await statement(tries > 1) };
      } catch (e) {
        if (!this.runs.isUnavailable(e)) throw e;
        this.events.onLedgerRetry?.(step, e as Error, tries);
        if (stopping.aborted) return GAVE_UP_STOPPING;
        if (this.clock.now() + delay > deadline) return GAVE_UP_BUDGET;
        await this.inFlight.pause(delay, stopping);
        delay = Math.min(LEDGER_RETRY.maxMs, delay * 2);
      }
    }
  }
}
