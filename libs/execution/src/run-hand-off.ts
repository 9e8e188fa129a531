/**
 * Records an attempt's outcome under its lease, then hands the run on (a retry message or a dead
 * letter) and publishes the attempt's result. Recording comes before handing on, so an executor
 * fenced out while it worked produces nothing; a crash between the two is repaired by the
 * re-delivery (`repair`), which finds the run recorded but not handed off and hands it off again.
 */
import {
  shouldPublishResult,
  type Clock,
  type FireEvent,
  type FireKey,
  type ResultEventsPolicy,
  type RunStart,
} from '@tickwork/domain';
import type { AttemptOutcome } from './attempt';
import { completionOf, deadLetterDetail, outcomeOf, type AttemptDecision } from './attempt-decision';
import { LEASE_LOST, type DeliveryContext, type ExecutionReport, type ExecutorEvents } from './delivery';
import { atAttempt, inTraceOf, resultOf, resultOfRun } from './fire-results';
import type { LeaseKeeper } from './lease-keeper';
import { givenUp, type LedgerRetry, type Retried } from './ledger-retry';
import type { FireOutcomeSink } from './outcome-sink';
import type { RunLedger } from './run-ledger';

const LEASE_RECHECK_MARGIN_MS = 50;
/** A delivery whose run another executor holds checks the ledger again at least this often. */
const LEASE_HELD_RECHECK_MS = 1_000;

export class RunHandOff {
  constructor(
    private readonly runs: RunLedger,
    private readonly sink: FireOutcomeSink,
    private readonly ledger: LedgerRetry,
    private readonly clock: Clock,
    private readonly events: ExecutorEvents,
  ) {}

  /**
   * Records the outcome under the lease, hands the run on, and publishes the attempt's result
   * when the job's `resultEvents` policy (from the run's start; absent = ALL) wants it. A
   * transient ledger error does not lose the outcome: the write is tried again (the lease renewed
   * by `keeper` meanwhile) until it lands, is fenced out, the executor stops or the budget runs out.
   */
  async finish(
    fire: FireEvent,
    leaseToken: string,
    outcome: AttemptOutcome,
    decision: AttemptDecision,
    resultEvents: ResultEventsPolicy | undefined,
    ctx: DeliveryContext,
    stopping: AbortSignal,
    keeper?: LeaseKeeper,
  ): Promise<ExecutionReport> {
    keeper?.guard(undefined);
    const key: FireKey = { jobId: fire.jobId, fenceToken: fire.fenceToken };
    const status = outcomeOf(decision);
    const completion = completionOf(outcome, decision);
    const written = await this.ledger.run(
      'record',
      (retried) => this.runs.completeRun(key, leaseToken, retried ? { ...completion, retried } : completion),
      stopping,
    );
    keeper?.stop();
    if (!written.ok) {
      // Stopping: give the lease up if the ledger lets us, so the next owner need not wait it out
      // (it calls again: at least once). Out of budget: the delivery comes back and this executor
      // takes its own lease back at once, and calls again.
      if (written.why === 'stopping') await this.runs.releaseRun(key, leaseToken).catch(() => undefined);
      return givenUp(written.why);
    }
    if (!written.value) {
      // Our lease was taken over while we worked: the new holder owns the outcome.
      this.events.onLeaseLost?.(fire);
      return LEASE_LOST;
    }
    if (decision.kind === 'retry') {
      await this.sink.scheduleRetry(
        atAttempt(fire, fire.attempt + 1),
        decision.notBefore,
        outcome.error ?? 'failed',
      );
      const marked = await this.markHandedOff(key, 'RETRYING', fire.attempt, stopping);
      if (!marked.ok) return givenUp(marked.why);
    } else if (decision.kind === 'dead-letter') {
      await this.sink.deadLetter(fire, decision.reason, decision.detail, ctx.source);
      const marked = await this.markHandedOff(key, 'DEAD_LETTERED', fire.attempt, stopping);
      if (!marked.ok) return givenUp(marked.why);
      this.events.onDeadLettered?.(fire, decision.reason, decision.detail);
    }
    // The ledger's times for this attempt, as the completion recorded them: one clock, one source.
    const result = resultOf(fire, written.value, status, outcome.httpStatus, completion.error);
    if (shouldPublishResult(resultEvents, status)) await this.sink.publishResult(result);
    this.events.onExecuted?.(fire, result);
    return { kind: 'executed', outcome: status, result };
  }

  /** A delivery that may not run: finish any hand-off a crash left undone, or come back later. */
  async repair(
    fire: FireEvent,
    start: Extract<RunStart, { action: 'skip' }>,
    ctx: DeliveryContext,
    stopping: AbortSignal,
  ): Promise<ExecutionReport> {
    const run = start.run;
    const key: FireKey = { jobId: fire.jobId, fenceToken: fire.fenceToken };
    if (start.reason === 'LEASE_HELD') {
      // Someone is running it. Do not acknowledge this delivery: if the holder dies, this copy
      // is what takes the run over once the lease expires. Looked at again within a second: a
      // holder that stopped gracefully (partitions moved, its fires draining) finishes or
      // releases the run long before the lease would expire.
      return {
        kind: 'later',
        afterMs: Math.min((run?.leaseRemainingMs ?? 0) + LEASE_RECHECK_MARGIN_MS, LEASE_HELD_RECHECK_MS),
        why: 'run lease held elsewhere',
      };
    }
    if (run && !run.handedOffAt && (run.status === 'RETRYING' || run.status === 'DEAD_LETTERED')) {
      const recorded = atAttempt(fire, run.attempt);
      if (run.status === 'RETRYING') {
        await this.sink.scheduleRetry(
          atAttempt(fire, run.attempt + 1),
          run.nextAttemptAt ?? new Date(this.clock.now()),
          run.error ?? 'failed',
        );
      } else {
        const reason = run.deadLetterReason ?? 'NON_RETRYABLE';
        await this.sink.deadLetter(recorded, reason, deadLetterDetail(reason, run.error), ctx.source);
      }
      const marked = await this.markHandedOff(key, run.status, run.attempt, stopping);
      if (!marked.ok) return givenUp(marked.why);
    }
    // The recorded result may not have been published before a crash: publish it again, if the
    // job's result_events policy wants it (absent, as for a job deleted meanwhile: published).
    if (run && run.status !== 'RETRYING') {
      const result = resultOfRun(run);
      if (shouldPublishResult(start.resultEvents, result.outcome))
        await this.sink.publishResult(inTraceOf(fire, result));
    }
    this.events.onDuplicate?.(fire, start.reason);
    return { kind: 'duplicate', reason: start.reason };
  }

  /**
   * Notes the hand-off, tried again on a transient error. Given up, the delivery is not
   * acknowledged: its re-delivery finds the run not handed off and hands it off again (a second
   * retry message or dead letter, which the ledger and its readers absorb).
   */
  private markHandedOff(
    key: FireKey,
    status: 'RETRYING' | 'DEAD_LETTERED',
    attempt: number,
    stopping: AbortSignal,
  ): Promise<Retried<void>> {
    return this.ledger.run('hand-off', () => this.runs.markHandedOff(key, status, attempt), stopping);
  }
}
