/**
 * Turns one delivery of a fire into at most one effect as far as the ledger can tell:
 * take the run's lease in job_runs, call the target while heartbeating the lease, record the
 * outcome under the lease token, then hand the run on (a retry message or a dead letter) and
 * publish the attempt's result. Recording comes before handing on, so an executor fenced out
 * while it worked produces nothing; a crash between the two is repaired by the re-delivery,
 * which finds the run recorded but not handed off and hands it off again.
 *
 * A ledger statement that fails on a transient error (the database restarting, a connection cut)
 * is tried again here, with a short capped backoff: an executor holding a target's answer keeps
 * it and records it under its own lease (renewing the lease meanwhile) rather than call the
 * target again. Its own lease is never a reason to wait: this executor never begins a fire it is
 * already working on, so a run leased by this executor and not in its hands is taken back at once.
 */
import type {
  FireEvent,
  FireKey,
  FireOutcome,
  FireResult,
  KafkaTarget,
  RetryPolicy,
  WebhookTarget,
} from '@tickwork/domain';
import {
  isTransientDatabaseError,
  issueLeaseToken,
  newLeaseIssuer,
  type RecordedRun,
  type RunCompletion,
  type RunStart,
  type RunState,
  type UnleasedRun,
} from '@tickwork/store';
import { bindTraceContext, boundTraceContext } from '@tickwork/telemetry';
import type { AttemptOutcome, TargetRequest, TargetRunner } from './attempt';
import type { FireOutcomeSink } from './outcome-sink';
import { planRetry, type DeadLetterReason } from './retry-plan';
import type { Slots } from './slots';

/** The ledger operations the executor needs (RunRepository implements them). */
export interface RunLedger {
  /** `leaseToken`: the token to lease the run under (issueLeaseToken); see RunRepository.beginRun. */
  beginRun(fire: FireEvent, owner: string, leaseMs: number, leaseToken?: string): Promise<RunStart>;
  heartbeat(key: FireKey, leaseToken: string, leaseMs: number): Promise<boolean>;
  /** The run's recorded start and finish (the database clock: the FireResult's times); null when fenced out. */
  completeRun(key: FireKey, leaseToken: string, outcome: RunCompletion): Promise<RecordedRun | null>;
  markHandedOff(key: FireKey, status: 'RETRYING' | 'DEAD_LETTERED', attempt: number): Promise<void>;
  releaseRun(key: FireKey, leaseToken: string): Promise<void>;
  /** Whether this fire's first attempt may run without a lease: no run of it recorded, its job still there. */
  mayRunUnleased(key: FireKey): Promise<boolean>;
  /** Records a successful first attempt that ran without a lease, with its recorded times; null when another run was recorded first. */
  recordUnleasedRun(run: UnleasedRun): Promise<RecordedRun | null>;
  /** mayRunUnleased of several fires at once (absent: one call each). */
  mayRunUnleasedMany?(keys: readonly FireKey[]): Promise<boolean[]>;
  /** recordUnleasedRun of several runs at once (absent: one call each). */
  recordUnleasedRuns?(runs: readonly UnleasedRun[]): Promise<(RecordedRun | null)[]>;
}

export interface ExecutorOptions {
  readonly owner: string;
  /** The issuer part of this process's lease tokens (newLeaseIssuer; one per process, so its liveness beat names it). */
  readonly leaseIssuer?: string;
  readonly runLeaseMs: number;
  readonly heartbeatMs: number;
  /** Fires older than this are refused: their ledger rows may have been purged, so a re-run could not be detected. */
  readonly runRetentionMs: number;
  readonly now?: () => Date;
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

const LEASE_RECHECK_MARGIN_MS = 50;
/** A delivery whose run another executor holds checks the ledger again at least this often. */
const LEASE_HELD_RECHECK_MS = 1_000;
const SAME_FIRE_HERE = {
  kind: 'report',
  report: { kind: 'later', afterMs: 50, why: 'the same fire is running here' },
} as const;
const LEDGER_UNREACHABLE_RETRY_MS = 1_000;
const LEDGER_UNREACHABLE = {
  kind: 'later',
  afterMs: LEDGER_UNREACHABLE_RETRY_MS,
  why: 'run ledger unreachable',
} as const;
const LEASED = { kind: 'leased' } as const;
const ABANDONED = { kind: 'report', report: { kind: 'abandoned' } } as const;
/** Backoff between tries of a ledger statement that failed on a transient error. */
const LEDGER_RETRY = { initialMs: 100, maxMs: 2_000 } as const;
const DEFAULT_LEDGER_RETRY_MS = 300_000;

/** A ledger statement tried until it answered, or given up: the executor is stopping, or the budget ran out. */
type Retried<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly why: 'stopping' | 'budget' };
const GAVE_UP_STOPPING = { ok: false, why: 'stopping' } as const;
const GAVE_UP_BUDGET = { ok: false, why: 'budget' } as const;

/** What a delivery reports when a ledger statement was given up. */
function givenUp(why: 'stopping' | 'budget'): ExecutionReport {
  return why === 'stopping' ? { kind: 'abandoned' } : LEDGER_UNREACHABLE;
}

/** How a first attempt without a lease went: done, its produce failed, or it must take a lease. */
type Unleased =
  | { readonly kind: 'report'; readonly report: ExecutionReport }
  | FailedUnleased
  | { readonly kind: 'leased' };

/** A first attempt whose produce failed without a lease: recorded and decided under one. */
interface FailedUnleased {
  readonly kind: 'failed';
  readonly outcome: AttemptOutcome;
}

function unleasedId(fire: FireEvent): string {
  return `${fire.jobId}\u0000${fire.fenceToken}`;
}

/**
 * Renews a run's lease every heartbeat from the start of its target call until its outcome is
 * recorded. While the call runs, a renewal that finds the lease gone aborts it, and so does a
 * ledger unreachable for a whole lease (someone else may hold the run by then). Once the call has
 * answered, nothing aborts anything: the answer is kept and its write retried under the lease.
 */
class LeaseKeeper {
  /** When the lease was last known to be held: the send time of the last renewal that found it. */
  private heldAt: number;
  private readonly timer: NodeJS.Timeout;
  private call: AbortController | undefined;
  /** The call was aborted because the ledger could not confirm the lease for a whole lease. */
  unconfirmed = false;

  constructor(
    private readonly runs: RunLedger,
    private readonly key: FireKey,
    private readonly leaseToken: string,
    private readonly leaseMs: number,
    heartbeatMs: number,
    heldAt: number,
  ) {
    this.heldAt = heldAt;
    this.timer = setInterval(() => this.renew(), heartbeatMs);
  }

  /** The call in flight (aborted by a lost lease), or undefined once it answered. */
  guard(call: AbortController | undefined): void {
    this.call = call;
  }

  stop(): void {
    clearInterval(this.timer);
    this.call = undefined;
  }

  private renew(): void {
    const sent = Date.now();
    this.runs.heartbeat(this.key, this.leaseToken, this.leaseMs).then(
      (held) => {
        if (held) this.heldAt = Math.max(this.heldAt, sent);
        else this.call?.abort();
      },
      () => {
        const call = this.call;
        if (call && Date.now() - this.heldAt >= this.leaseMs) {
          this.unconfirmed = !call.signal.aborted;
          call.abort();
        }
      },
    );
  }
}

export class FireExecutor {
  private readonly now: () => Date;
  private readonly random: () => number;
  private readonly inFlight = new Map<AbortSignal, Set<{ abort(): void }>>();
  /** Fires whose first attempt runs here without a lease, by `job_id\u0000fence_token`. */
  private readonly unleased = new Set<string>();
  /**
   * Runs a delivery here is working on under a lease (from before `beginRun` until its report),
   * each with a promise settled when it is done. Another copy of the fire waits for it, so this
   * executor never begins a run it is working on: a run under a lease it issued and not in here is
   * in nobody's hands, and `beginRun` takes it back at once.
   */
  private readonly leased = new Map<string, Promise<void>>();
  /** The issuer part of every lease token this executor issues (see RunRepository.beginRun). */
  private readonly issuer: string;
  private readonly ledgerRetryMs: number;

  constructor(
    private readonly runs: RunLedger,
    private readonly webhooks: TargetRunner<WebhookTarget>,
    private readonly kafka: TargetRunner<KafkaTarget>,
    private readonly sink: FireOutcomeSink,
    private readonly opts: ExecutorOptions,
    private readonly events: ExecutorEvents = {},
  ) {
    this.issuer = opts.leaseIssuer ?? newLeaseIssuer();
    this.now = opts.now ?? (() => new Date());
    this.random = opts.random ?? Math.random;
    this.ledgerRetryMs = opts.ledgerRetryMs ?? DEFAULT_LEDGER_RETRY_MS;
  }

  /** Executes one delivery of a fire; target failures become outcomes, infrastructure failures throw. */
  async execute(fire: FireEvent, stopping: AbortSignal, ctx: DeliveryContext = {}): Promise<ExecutionReport> {
    const now = this.now();
    const early = fire.scheduledFor.getTime() - now.getTime();
    // A scheduler with a lookahead publishes fires before their time; they still run on time.
    if (early > 0) return { kind: 'later', afterMs: early, why: 'scheduled in the future' };
    if (now.getTime() - fire.scheduledFor.getTime() > this.opts.runRetentionMs) {
      const detail = `scheduled for ${fire.scheduledFor.toISOString()}, older than the run retention (${this.opts.runRetentionMs} ms): its run record may be gone, so running it could run it twice`;
      await this.sink.deadLetter(fire, 'OLDER_THAN_RUN_RETENTION', detail, ctx.source);
      this.events.onDeadLettered?.(fire, 'OLDER_THAN_RUN_RETENTION', detail);
      return { kind: 'duplicate', reason: 'OLDER_THAN_RUN_RETENTION' };
    }

    return this.run(fire, stopping, ctx);
  }

  /**
   * Executes several deliveries (taken from one partition together); one report each, in order.
   * The first attempts of Kafka targets among them that are due go through together: one ledger
   * check, one batch of produces, one insert, one batch of results, in the order `execute` takes
   * for one. Every other delivery, and any of those the batch hands on, runs as `execute` runs it.
   */
  executeMany(
    fires: readonly FireEvent[],
    stopping: AbortSignal,
    ctxs: readonly DeliveryContext[],
  ): Promise<ExecutionReport>[] {
    const reports = new Array<Promise<ExecutionReport>>(fires.length);
    const together: number[] = [];
    const nowMs = this.now().getTime();
    fires.forEach((fire, i) => {
      const age = nowMs - fire.scheduledFor.getTime();
      if (fire.target.type === 'kafka' && fire.attempt === 1 && age >= 0 && age <= this.opts.runRetentionMs)
        together.push(i);
      else reports[i] = this.execute(fire, stopping, ctxs[i]);
    });
    if (together.length === 1) {
      const i = together[0]!;
      reports[i] = this.execute(fires[i]!, stopping, ctxs[i]);
    } else if (together.length > 1) {
      const batch = this.runUnleasedMany(
        together.map((i) => fires[i]!),
        stopping,
      );
      together.forEach((i, k) => {
        reports[i] = batch.then((outcomes) => {
          const u = outcomes[k]!;
          if (u.kind === 'report') return u.report;
          return this.runLeased(fires[i]!, stopping, ctxs[i] ?? {}, u.kind === 'failed' ? u : undefined);
        });
      });
    }
    return reports;
  }

  /** From the lease to the recorded outcome, holding a slot for a webhook call. */
  private async run(fire: FireEvent, stopping: AbortSignal, ctx: DeliveryContext): Promise<ExecutionReport> {
    let failedUnleased: FailedUnleased | undefined;
    if (fire.target.type === 'kafka' && fire.attempt === 1) {
      const unleased = await this.runUnleased(fire, fire.target, stopping);
      if (unleased.kind === 'report') return unleased.report;
      if (unleased.kind === 'failed') failedUnleased = unleased;
    }
    return this.runLeased(fire, stopping, ctx, failedUnleased);
  }

  /** The leased way: `failedUnleased`, a first attempt whose produce failed without a lease. */
  private async runLeased(
    fire: FireEvent,
    stopping: AbortSignal,
    ctx: DeliveryContext,
    failedUnleased: FailedUnleased | undefined,
  ): Promise<ExecutionReport> {
    const id = unleasedId(fire);
    // Another copy of this fire is being worked on here (a relay re-published it): wait for it to
    // be done, then go on (it will most likely find the run final).
    for (let other = this.leased.get(id); other; other = this.leased.get(id)) await other;
    if (stopping.aborted) return { kind: 'abandoned' };
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
    let leasedAt = Date.now();
    const begun = await this.withLedger(
      'begin',
      () => {
        leasedAt = Date.now();
        return this.runs.beginRun(fire, this.opts.owner, this.opts.runLeaseMs, leaseToken);
      },
      stopping,
    );
    if (!begun.ok) return givenUp(begun.why);
    const start = begun.value;
    if (start.action === 'skip') return this.onSkip(fire, start, ctx, stopping);

    const key: FireKey = { jobId: fire.jobId, fenceToken: fire.fenceToken };
    const attempt = start.attempt;
    const current = atAttempt(fire, attempt);
    // For the age check only: the attempt's recorded times come from the ledger (see finish).
    const startedAt = this.now();

    if (!start.retryPolicy) {
      // The job was deleted after this fire was claimed: its owner no longer wants it run.
      const detail = `job ${fire.jobId} no longer exists`;
      return this.finish(
        current,
        key,
        start.leaseToken,
        { ok: false, httpStatus: null, error: detail, retryable: false },
        { kind: 'dead-letter', reason: 'UNKNOWN_JOB', detail },
        ctx,
        stopping,
      );
    }
    const policy = start.retryPolicy;
    if (attempt > 1 && startedAt.getTime() - fire.scheduledFor.getTime() > policy.maxEventAgeMs) {
      const detail = `attempt ${attempt} would start ${startedAt.getTime() - fire.scheduledFor.getTime()} ms after the scheduled time, beyond max_event_age_ms=${policy.maxEventAgeMs}`;
      return this.finish(
        current,
        key,
        start.leaseToken,
        { ok: false, httpStatus: null, error: detail, retryable: false },
        { kind: 'dead-letter', reason: 'MAX_EVENT_AGE', detail },
        ctx,
        stopping,
      );
    }

    if (failedUnleased && !start.takenOver && attempt === fire.attempt) {
      // The produce already failed without a lease: record that attempt under this lease.
      const { outcome } = failedUnleased;
      return this.finish(
        current,
        key,
        start.leaseToken,
        outcome,
        this.decide(current, attempt, policy, outcome),
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
        if (Date.now() - leasedAt >= this.opts.heartbeatMs) {
          const sent = Date.now();
          const held = await this.runs
            .heartbeat(key, start.leaseToken, this.opts.runLeaseMs)
            .catch(() => undefined);
          // Unreachable: give the delivery back (without a call, nothing is lost); its
          // re-delivery here takes this lease back at once.
          if (held === undefined) return LEDGER_UNREACHABLE;
          if (!held) {
            this.events.onLeaseLost?.(fire);
            return { kind: 'lease-lost' };
          }
          leasedAt = sent;
        }
        keeper = new LeaseKeeper(
          this.runs,
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
          return { kind: 'abandoned' };
        }
        // The ledger could not be reached for a whole lease: nobody else may hold this run, so
        // keep the delivery and try again (taking the lease back) rather than acknowledge it.
        if (keeper.unconfirmed) return LEDGER_UNREACHABLE;
        this.events.onLeaseLost?.(fire);
        return { kind: 'lease-lost' };
      }
      return await this.finish(
        current,
        key,
        start.leaseToken,
        outcome,
        this.decide(current, attempt, policy, outcome),
        ctx,
        stopping,
        keeper,
      );
    } finally {
      keeper?.stop();
    }
  }

  /**
   * A Kafka target's first attempt, when no run of the fire was ever recorded: produce, then
   * record the success in one insert. The leased path writes a run twice (RUNNING, then final)
   * because a webhook call is long and needs a lease; a produce is short, and a crash between it
   * and the insert only produces again on re-delivery, as a crash after a leased call calls again.
   * Anything else goes the leased way: a recorded run (a re-delivery), a deleted job, and a failed
   * produce, whose retry is decided and recorded under a lease ('failed').
   */
  private async runUnleased(fire: FireEvent, target: KafkaTarget, stopping: AbortSignal): Promise<Unleased> {
    const id = unleasedId(fire);
    // Two copies of one fire here at once (a relay re-published it): the second waits for the
    // first, then finds its run. Checked again after the read, which the first may have raced.
    if (this.unleased.has(id)) return SAME_FIRE_HERE;
    const key: FireKey = { jobId: fire.jobId, fenceToken: fire.fenceToken };
    const allowed = await this.withLedger('check', () => this.runs.mayRunUnleased(key), stopping);
    if (!allowed.ok) return { kind: 'report', report: givenUp(allowed.why) };
    if (!allowed.value) return { kind: 'leased' };
    if (this.unleased.has(id)) return SAME_FIRE_HERE;
    this.unleased.add(id);
    try {
      const began = Date.now();
      const outcome = await this.untilStopped(this.kafka.run(target, requestOf(fire)), stopping);
      if (outcome === undefined) return ABANDONED;
      if (!outcome.ok) return { kind: 'failed', outcome };
      // The produce is done: its record is retried until it lands, not produced again. Its token
      // lets a retried insert recognise the row an earlier try stored.
      const run: UnleasedRun = {
        fire,
        owner: this.opts.owner,
        durationMs: Date.now() - began,
        httpStatus: outcome.httpStatus,
        leaseToken: issueLeaseToken(this.issuer),
      };
      const recorded = await this.withLedger(
        'record',
        (retried) => this.runs.recordUnleasedRun(retried ? { ...run, retried } : run),
        stopping,
      );
      if (!recorded.ok) return { kind: 'report', report: givenUp(recorded.why) };
      if (!recorded.value) {
        // A concurrent delivery recorded a run of this fire first; that run owns the outcome.
        this.events.onDuplicate?.(fire, 'RECORDED_ELSEWHERE');
        return { kind: 'report', report: { kind: 'duplicate', reason: 'RECORDED_ELSEWHERE' } };
      }
      const result = resultOf(fire, recorded.value, 'SUCCEEDED', outcome.httpStatus, null);
      await this.sink.publishResult(result);
      this.events.onExecuted?.(fire, result);
      return { kind: 'report', report: { kind: 'executed', outcome: 'SUCCEEDED', result } };
    } finally {
      this.unleased.delete(id);
    }
  }

  /**
   * `runUnleased` for several fires (Kafka targets, first attempts, due) at once: one check, one
   * batch of produces, one insert of the runs, one batch of results. A fire already running
   * here, or twice in `fires`, waits like a second copy does in `runUnleased`.
   */
  private async runUnleasedMany(fires: readonly FireEvent[], stopping: AbortSignal): Promise<Unleased[]> {
    const out = new Array<Unleased>(fires.length);
    const ids = fires.map(unleasedId);
    const asked: number[] = [];
    ids.forEach((id, i) => {
      if (this.unleased.has(id)) out[i] = SAME_FIRE_HERE;
      else asked.push(i);
    });
    const keys = asked.map((i): FireKey => ({ jobId: fires[i]!.jobId, fenceToken: fires[i]!.fenceToken }));
    const checked = await this.withLedger(
      'check',
      () =>
        this.runs.mayRunUnleasedMany
          ? this.runs.mayRunUnleasedMany(keys)
          : Promise.all(keys.map((k) => this.runs.mayRunUnleased(k))),
      stopping,
    );
    if (!checked.ok) {
      const report = { kind: 'report', report: givenUp(checked.why) } as const;
      for (const i of asked) out[i] = report;
      return out;
    }
    const allowed = checked.value;
    const mine: number[] = [];
    asked.forEach((i, k) => {
      if (!allowed[k]) out[i] = LEASED;
      else if (this.unleased.has(ids[i]!)) out[i] = SAME_FIRE_HERE;
      else {
        this.unleased.add(ids[i]!);
        mine.push(i);
      }
    });
    if (mine.length === 0) return out;
    try {
      const began = Date.now();
      const calls = mine.map((i) => ({
        target: fires[i]!.target as KafkaTarget,
        request: requestOf(fires[i]!),
      }));
      const sends = this.kafka.runMany
        ? this.kafka.runMany(calls)
        : Promise.all(calls.map((c) => this.kafka.run(c.target, c.request)));
      const outcomes = await this.untilStopped(sends, stopping);
      if (outcomes === undefined) {
        for (const i of mine) out[i] = ABANDONED;
        return out;
      }
      const sent: number[] = [];
      const runs: UnleasedRun[] = [];
      const durationMs = Date.now() - began;
      mine.forEach((i, k) => {
        const outcome = outcomes[k]!;
        if (!outcome.ok) out[i] = { kind: 'failed', outcome };
        else {
          sent.push(i);
          runs.push({
            fire: fires[i]!,
            owner: this.opts.owner,
            durationMs,
            httpStatus: outcome.httpStatus,
            leaseToken: issueLeaseToken(this.issuer),
          });
        }
      });
      if (sent.length === 0) return out;
      // Produced: the records are retried until they land, never produced again (see runUnleased).
      const stored = await this.withLedger(
        'record',
        (retried) => {
          const batch = retried ? runs.map((r) => ({ ...r, retried })) : runs;
          return this.runs.recordUnleasedRuns
            ? this.runs.recordUnleasedRuns(batch)
            : Promise.all(batch.map((r) => this.runs.recordUnleasedRun(r)));
        },
        stopping,
      );
      if (!stored.ok) {
        const report = { kind: 'report', report: givenUp(stored.why) } as const;
        for (const i of sent) out[i] = report;
        return out;
      }
      const recorded = stored.value;
      const results: FireResult[] = [];
      const executed: number[] = [];
      sent.forEach((i, k) => {
        const fire = fires[i]!;
        const times = recorded[k];
        if (times) {
          results.push(resultOf(fire, times, 'SUCCEEDED', runs[k]!.httpStatus, null));
          executed.push(i);
        } else {
          // A concurrent delivery recorded a run of this fire first; that run owns the outcome.
          this.events.onDuplicate?.(fire, 'RECORDED_ELSEWHERE');
          out[i] = { kind: 'report', report: { kind: 'duplicate', reason: 'RECORDED_ELSEWHERE' } };
        }
      });
      if (results.length === 0) return out;
      if (this.sink.publishResults) await this.sink.publishResults(results);
      else await Promise.all(results.map((r) => this.sink.publishResult(r)));
      executed.forEach((i, k) => {
        const result = results[k]!;
        this.events.onExecuted?.(fires[i]!, result);
        out[i] = { kind: 'report', report: { kind: 'executed', outcome: 'SUCCEEDED', result } };
      });
      return out;
    } finally {
      for (const i of mine) this.unleased.delete(ids[i]!);
    }
  }

  private decide(
    fire: FireEvent,
    attempt: number,
    policy: RetryPolicy,
    outcome: AttemptOutcome,
  ): FinalDecision {
    if (outcome.ok) return { kind: 'succeeded' };
    const plan = planRetry({
      outcome,
      attempt,
      policy,
      scheduledFor: fire.scheduledFor,
      now: this.now(),
      random: this.random,
    });
    return plan.kind === 'retry' ? { kind: 'retry', notBefore: plan.notBefore } : plan;
  }

  /**
   * Records the outcome under the lease, hands the run on, and publishes the attempt's result. A
   * transient ledger error does not lose the outcome: the write is tried again (the lease renewed
   * by `keeper` meanwhile) until it lands, is fenced out, the executor stops or the budget runs out.
   */
  private async finish(
    fire: FireEvent,
    key: FireKey,
    leaseToken: string,
    outcome: AttemptOutcome,
    decision: FinalDecision,
    ctx: DeliveryContext,
    stopping: AbortSignal,
    keeper?: LeaseKeeper,
  ): Promise<ExecutionReport> {
    keeper?.guard(undefined);
    const status: FireOutcome =
      decision.kind === 'succeeded' ? 'SUCCEEDED' : decision.kind === 'retry' ? 'RETRYING' : 'DEAD_LETTERED';
    const error = decision.kind === 'dead-letter' ? `${decision.reason}: ${decision.detail}` : outcome.error;
    const completion: RunCompletion = {
      status: status === 'SUCCEEDED' ? 'SUCCEEDED' : status === 'RETRYING' ? 'RETRYING' : 'DEAD_LETTERED',
      httpStatus: outcome.httpStatus,
      error,
      nextAttemptAt: decision.kind === 'retry' ? decision.notBefore : null,
    };
    const written = await this.withLedger(
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
      return { kind: 'lease-lost' };
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
    const result = resultOf(fire, written.value, status, outcome.httpStatus, error);
    await this.sink.publishResult(result);
    this.events.onExecuted?.(fire, result);
    return { kind: 'executed', outcome: status, result };
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
    return this.withLedger('hand-off', () => this.runs.markHandedOff(key, status, attempt), stopping);
  }

  /**
   * Runs a ledger statement, trying it again on a transient database error with a short capped
   * backoff (`retried` tells the statement it is a retry) until it answers; gives up when the
   * executor stops or after `ledgerRetryMs`. Any other error is thrown.
   */
  private async withLedger<T>(
    step: LedgerStep,
    statement: (retried: boolean) => Promise<T>,
    stopping: AbortSignal,
  ): Promise<Retried<T>> {
    const deadline = Date.now() + this.ledgerRetryMs;
    let delay: number = LEDGER_RETRY.initialMs;
    for (let tries = 1; ; tries++) {
      try {
        return { ok: true, value: await statement(tries > 1) };
      } catch (e) {
        if (!isTransientDatabaseError(e)) throw e;
        this.events.onLedgerRetry?.(step, e as Error, tries);
        if (stopping.aborted) return GAVE_UP_STOPPING;
        if (Date.now() + delay > deadline) return GAVE_UP_BUDGET;
        await this.pause(delay, stopping);
        delay = Math.min(LEDGER_RETRY.maxMs, delay * 2);
      }
    }
  }

  /** Waits `ms`, or until `stopping` fires. */
  private pause(ms: number, stopping: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let untrack: () => void = () => undefined;
      const wake = () => {
        clearTimeout(timer);
        untrack();
        resolve();
      };
      const timer = setTimeout(wake, ms);
      untrack = this.track(stopping, { abort: wake });
    });
  }

  /** A delivery that may not run: finish any hand-off a crash left undone, or come back later. */
  private async onSkip(
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
          run.nextAttemptAt ?? this.now(),
          run.error ?? 'failed',
        );
      } else {
        const [reason, ...rest] = (run.error ?? 'NON_RETRYABLE: failed').split(': ');
        await this.sink.deadLetter(
          recorded,
          (reason ?? 'NON_RETRYABLE') as DeadLetterReason,
          rest.join(': '),
          ctx.source,
        );
      }
      const marked = await this.markHandedOff(key, run.status, run.attempt, stopping);
      if (!marked.ok) return givenUp(marked.why);
    }
    // The recorded result may not have been published before a crash: publish it again.
    if (run && run.status !== 'RETRYING') await this.sink.publishResult(inTraceOf(fire, resultOfRun(run)));
    this.events.onDuplicate?.(fire, start.reason);
    return { kind: 'duplicate', reason: start.reason };
  }

  /** Calls the target while `keeper` extends the lease; a lost lease aborts the call. */
  private async callWithLease(
    fire: FireEvent,
    keeper: LeaseKeeper,
    stopping: AbortSignal,
  ): Promise<AttemptOutcome> {
    // One controller per call, aborted by the lease keeper or by `stopping`. Calls are tracked
    // in a set per `stopping` signal (one listener each) rather than each adding a listener to it:
    // with a thousand calls in flight, per-call listeners make every removal a linear scan.
    const call = new AbortController();
    const untrack = this.track(stopping, call);
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

  /**
   * Waits for `work` (produces: they cannot be recalled), or until `stopping` fires: then
   * undefined. Tracked like a leased call, but without an AbortController per produce: creating
   * one costs more than the rest of a produce's bookkeeping.
   */
  private async untilStopped<T>(work: Promise<T>, stopping: AbortSignal): Promise<T | undefined> {
    let stop!: () => void;
    const stopped = new Promise<undefined>((resolve) => (stop = () => resolve(undefined)));
    const untrack = this.track(stopping, { abort: stop });
    try {
      return await Promise.race([work, stopped]);
    } finally {
      untrack();
    }
  }

  /** Registers a call to be aborted when `stopping` fires; returns the unregistration. */
  private track(stopping: AbortSignal, call: { abort(): void }): () => void {
    if (stopping.aborted) {
      call.abort();
      return () => undefined;
    }
    let calls = this.inFlight.get(stopping);
    if (!calls) {
      const set = new Set<{ abort(): void }>();
      calls = set;
      this.inFlight.set(stopping, set);
      stopping.addEventListener('abort', () => set.forEach((c) => c.abort()), { once: true });
    }
    calls.add(call);
    return () => calls.delete(call);
  }
}

type FinalDecision =
  | { readonly kind: 'succeeded' }
  | { readonly kind: 'retry'; readonly notBefore: Date }
  | { readonly kind: 'dead-letter'; readonly reason: DeadLetterReason; readonly detail: string };

/** What the target runners get of a fire. */
function requestOf(fire: FireEvent): TargetRequest {
  return {
    jobId: fire.jobId,
    tenantId: fire.tenantId,
    fenceToken: fire.fenceToken,
    fireId: fire.fireId,
    scheduledFor: fire.scheduledFor,
    attempt: fire.attempt,
    body: fire.payload === null ? null : JSON.stringify(fire.payload),
    traceHeaders: boundTraceContext(fire),
  };
}

/** The result of one attempt of `fire`, with the times the ledger recorded for it, in its trace. */
function resultOf(
  fire: FireEvent,
  { startedAt, finishedAt }: RecordedRun,
  outcome: FireOutcome,
  httpStatus: number | null,
  error: string | null,
): FireResult {
  return inTraceOf(fire, {
    jobId: fire.jobId,
    tenantId: fire.tenantId,
    fenceToken: fire.fenceToken,
    fireId: fire.fireId,
    scheduledFor: fire.scheduledFor,
    ...(fire.spreadOffsetMs ? { spreadOffsetMs: fire.spreadOffsetMs } : {}),
    startedAt,
    finishedAt,
    attempt: fire.attempt,
    outcome,
    httpStatus,
    error,
    durationMs: finishedAt.getTime() - startedAt.getTime(),
  });
}

/** `fire` at another attempt, in the same trace. */
function atAttempt(fire: FireEvent, attempt: number): FireEvent {
  return attempt === fire.attempt ? fire : inTraceOf(fire, { ...fire, attempt });
}

/** `derived` (a copy of `fire`, or its result), bound to the trace `fire` carries. */
function inTraceOf<T extends object>(fire: FireEvent, derived: T): T {
  bindTraceContext(derived, boundTraceContext(fire));
  return derived;
}

function resultOfRun(run: RunState): FireResult {
  const startedAt = run.startedAt ?? run.scheduledFor;
  const finishedAt = run.finishedAt ?? startedAt;
  return {
    jobId: run.jobId,
    tenantId: run.tenantId,
    fenceToken: run.fenceToken,
    fireId: run.fireId,
    scheduledFor: run.scheduledFor,
    ...(run.spreadOffsetMs ? { spreadOffsetMs: run.spreadOffsetMs } : {}),
    startedAt,
    finishedAt,
    attempt: run.attempt,
    outcome: run.status === 'RUNNING' ? 'FAILED' : run.status,
    httpStatus: run.httpStatus,
    error: run.error,
    durationMs: finishedAt.getTime() - startedAt.getTime(),
  };
}
