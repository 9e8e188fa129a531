/**
 * A delivery under a lease in job_runs: take the run's lease, call the target while a LeaseKeeper
 * heartbeats it, then record and hand on (RunHandOff). Every webhook fire, every retry, and a
 * Kafka first attempt whose produce failed or whose fire the ledger already knows, goes this way.
 * Its own lease is never a reason to wait: this executor never begins a fire it is already
 * working on (a second copy waits here), so a run leased by this executor and not in its hands
 * is taken back at once.
 */
import type { Clock, FireEvent, FireKey, KafkaTarget, WebhookTarget } from '@tickwork/domain';
import type { AttemptOutcome, TargetRunner } from './attempt';
import { decideAttempt } from './attempt-decision';
import {
  ABANDONED,
  LEASE_LOST,
  LEDGER_UNREACHABLE,
  runKeyOf,
  type DeliveryContext,
  type ExecutionReport,
  type ExecutorEvents,
  type ExecutorOptions,
} from './delivery';
import { atAttempt, requestOf } from './fire-results';
import type { InFlight } from './in-flight';
import { issueLeaseToken } from './lease-token';
import { LeaseKeeper } from './lease-keeper';
import { givenUp, type LedgerRetry } from './ledger-retry';
import type { RunHandOff } from './run-hand-off';
import type { RunLedger } from './run-ledger';

/** A first attempt whose produce failed without a lease: recorded and decided under one. */
export interface FailedUnleased {
  readonly kind: 'failed';
  readonly outcome: AttemptOutcome;
}

export class LeasedDelivery {
  /**
   * Runs a delivery here is working on under a lease (from before `beginRun` until its report),
   * each with a promise settled when it is done. Another copy of the fire waits for it, so this
   * executor never begins a run it is working on: a run under a lease it issued and not in here is
   * in nobody's hands, and `beginRun` takes it back at once.
   */
  private readonly leased = new Map<string, Promise<void>>();

  constructor(
    private readonly runs: RunLedger,
    private readonly webhooks: TargetRunner<WebhookTarget>,
    private readonly kafka: TargetRunner<KafkaTarget>,
    private readonly handOff: RunHandOff,
    private readonly ledger: LedgerRetry,
    private readonly inFlight: InFlight,
    private readonly clock: Clock,
    private readonly random: () => number,
    private readonly issuer: string,
    private readonly opts: ExecutorOptions,
    private readonly events: ExecutorEvents,
  ) {}

  /** Delivers `fire` under a lease; `failedUnleased`, a first attempt whose produce failed without one. */
  async run(
    fire: FireEvent,
    stopping: AbortSignal,
    ctx: DeliveryContext,
    failedUnleased?: FailedUnleased,
  ): Promise<ExecutionReport> {
    const id = runKeyOf(fire);
    // Another copy of this fire is being worked on here (a relay re-published it): wait for it to
    // be done, then go on (it will most likely find the run final).
    for (let other = this.leased.get(id); other; other = this.leased.get(id)) await other;
    if (stopping.aborted) return ABANDONED;
    let done!: () => void;
    this.leased.set(id, new Promise<void>((resolve) => (done = resolve)));
    try {
      return await this.leasedRun(fire, stopping, ctx, failedUnleased);
    } finally {
      this.leased.delete(id);
      done();
    }
  }

  private async leasedRun(
    fire: FireEvent,
    stopping: AbortSignal,
    ctx: DeliveryContext,
    failedUnleased: FailedUnleased | undefined,
  ): Promise<ExecutionReport> {
    // One token for every try: a try whose insert committed but whose answer was lost is
    // recognised by the next (same issuer) and proceeds instead of waiting for its own lease.
    const leaseToken = issueLeaseToken(this.issuer);
    let leasedAt = this.clock.now();
    const begun = await this.ledger.run(
      'begin',
      () => {
        leasedAt = this.clock.now();
        return this.runs.beginRun(fire, this.opts.owner, this.opts.runLeaseMs, leaseToken);
      },
      stopping,
    );
    if (!begun.ok) return givenUp(begun.why);
    const start = begun.value;
    if (start.action === 'skip') return this.handOff.repair(fire, start, ctx, stopping);

    const key: FireKey = { jobId: fire.jobId, fenceToken: fire.fenceToken };
    const attempt = start.attempt;
    const current = atAttempt(fire, attempt);
    // For the age check and the retry plan only: the attempt's recorded times come from the ledger.
    const startedAt = this.clock.now();

    // Absent when the job is gone (or never chose): every result is published, as before the policy.
    const resultEvents = start.resultEvents;
    if (!start.retryPolicy) {
      // The job was deleted after this fire was claimed: its owner no longer wants it run.
      const detail = `job ${fire.jobId} no longer exists`;
      return this.handOff.finish(
        current,
        start.leaseToken,
        { ok: false, httpStatus: null, error: detail, retryable: false },
        { kind: 'dead-letter', reason: 'UNKNOWN_JOB', detail },
        resultEvents,
        ctx,
        stopping,
      );
    }
    const policy = start.retryPolicy;
    const age = startedAt - fire.scheduledFor.getTime();
    if (attempt > 1 && age > policy.maxEventAgeMs) {
      const detail = `attempt ${attempt} would start ${age} ms after the scheduled time, beyond max_event_age_ms=${policy.maxEventAgeMs}`;
      return this.handOff.finish(
        current,
        start.leaseToken,
        { ok: false, httpStatus: null, error: detail, retryable: false },
        { kind: 'dead-letter', reason: 'MAX_EVENT_AGE', detail },
        resultEvents,
        ctx,
        stopping,
      );
    }
    const decide = (outcome: AttemptOutcome) =>
      decideAttempt(current, attempt, policy, outcome, new Date(this.clock.now()), this.random);

    if (failedUnleased && !start.takenOver && attempt === fire.attempt) {
      // The produce already failed without a lease: record that attempt under this lease.
      const { outcome } = failedUnleased;
      return this.handOff.finish(
        current,
        start.leaseToken,
        outcome,
        decide(outcome),
        resultEvents,
        ctx,
        stopping,
      );
    }

    const slots = fire.target.type === 'webhook' ? this.opts.webhookSlots : undefined;
    if (slots) await slots.acquire();
    let keeper: LeaseKeeper | undefined;
    try {
      let outcome: AttemptOutcome;
      try {
        // The lease is not heartbeaten while the run waits for a slot: after a long wait, renew it
        // before calling, so the call never runs on a lease another executor may have taken.
        if (this.clock.now() - leasedAt >= this.opts.heartbeatMs) {
          const sent = this.clock.now();
          const held = await this.runs
            .heartbeat(key, start.leaseToken, this.opts.runLeaseMs)
            .catch(() => undefined);
          // Unreachable: give the delivery back (without a call, nothing is lost); its
          // re-delivery here takes this lease back at once.
          if (held === undefined) return LEDGER_UNREACHABLE;
          if (!held) {
            this.events.onLeaseLost?.(fire);
            return LEASE_LOST;
          }
          leasedAt = sent;
        }
        keeper = new LeaseKeeper(
          this.runs,
          this.clock,
          key,
          start.leaseToken,
          this.opts.runLeaseMs,
          this.opts.heartbeatMs,
          leasedAt,
        );
        outcome = await this.callWithLease(current, keeper, stopping);
      } finally {
        slots?.release();
      }
      if (outcome.aborted) {
        keeper.stop();
        if (stopping.aborted) {
          // Give the run up now rather than making the next executor wait out the lease.
          await this.runs.releaseRun(key, start.leaseToken).catch(() => undefined);
          return ABANDONED;
        }
        // The ledger could not be reached for a whole lease: nobody else may hold this run, so
        // keep the delivery and try again (taking the lease back) rather than acknowledge it.
        if (keeper.unconfirmed) return LEDGER_UNREACHABLE;
        this.events.onLeaseLost?.(fire);
        return LEASE_LOST;
      }
      return await this.handOff.finish(
        current,
        start.leaseToken,
        outcome,
        decide(outcome),
        resultEvents,
        ctx,
        stopping,
        keeper,
      );
    } finally {
      keeper?.stop();
    }
  }

  /** Calls the target while `keeper` extends the lease; a lost lease or `stopping` aborts the call. */
  private async callWithLease(
    fire: FireEvent,
    keeper: LeaseKeeper,
    stopping: AbortSignal,
  ): Promise<AttemptOutcome> {
    const call = new AbortController();
    const untrack = this.inFlight.track(stopping, call);
    keeper.guard(call);
    const signal = call.signal;
    try {
      const req = requestOf(fire);
      return fire.target.type === 'webhook'
        ? await this.webhooks.run(fire.target, req, signal)
        : await this.kafka.run(fire.target, req, signal);
    } finally {
      // Answered: from here on nothing aborts it; its outcome is recorded under the lease.
      keeper.guard(undefined);
      untrack();
    }
  }
}
