/**
 * The delivery state machine on a ManualClock, against an in-memory implementation of the
 * RunLedger port (our own port: the PostgreSQL adapter is covered by test/integration): the lease
 * taken, the heartbeat renewing it, a retry scheduled with backoff, the dead letter after the last
 * attempt (its reason in a field of its own), a lease held elsewhere waited out then taken over
 * (the late holder fenced out), a ledger write retried with backoff, and a Kafka target's single
 * first attempt going through as a batch of one.
 */
import {
  LEASE_ISSUER_CHARS,
  ManualClock,
  type DeadLetterReason,
  type FireEvent,
  type FireKey,
  type FireResult,
  type KafkaTarget,
  type RecordedRun,
  type RetryPolicy,
  type RunCompletion,
  type RunStart,
  type RunState,
  type RunStatus,
  type UnleasedRun,
  type WebhookTarget,
} from '@tickwork/domain';
import type { AttemptOutcome, TargetRequest, TargetRunner } from './attempt';
import { FireExecutor } from './delivery-router';
import type { ExecutionReport } from './delivery';
import { newLeaseIssuer } from './lease-token';
import type { FireOutcomeSink } from './outcome-sink';
import type { RunLedger } from './run-ledger';

const T0 = Date.parse('2026-06-01T12:00:00Z');
const LEASE_MS = 30_000;
const HEARTBEAT_MS = 10_000;
const policy: RetryPolicy = {
  maxAttempts: 3,
  initialBackoffMs: 1_000,
  multiplier: 2,
  maxBackoffMs: 60_000,
  maxEventAgeMs: 3_600_000,
};
const webhook: WebhookTarget = {
  type: 'webhook',
  url: 'https://example.com/hook',
  method: 'POST',
  headers: {},
  timeoutMs: 60_000,
  successStatus: { min: 200, max: 299 },
};
const kafka: KafkaTarget = { type: 'kafka', topic: 'orders', key: null, headers: {} };

function fireOf(target: WebhookTarget | KafkaTarget, attempt = 1): FireEvent {
  return {
    jobId: 'job-1',
    tenantId: 't',
    fenceToken: 7,
    fireId: 'job-1:7',
    scheduledFor: new Date(T0),
    nominalTime: new Date(T0),
    attempt,
    target,
    payload: null,
  };
}

/** Thrown by the in-memory ledger while it is "down": the port's unavailable error. */
class LedgerDown extends Error {}

interface Row {
  status: RunStatus;
  attempt: number;
  leaseToken: string | null;
  leaseExpiresAt: number | null;
  startedAt: number;
  finishedAt: number | null;
  httpStatus: number | null;
  error: string | null;
  nextAttemptAt: number | null;
  handedOffAt: number | null;
  deadLetterReason: DeadLetterReason | null;
}

/** The RunLedger port's rules in memory, on the test's clock (one job, its policy or deleted). */
class InMemoryRunLedger implements RunLedger {
  readonly rows = new Map<string, Row>();
  policy: RetryPolicy | null = policy;
  /** Statements fail as unreachable while this is above 0 (each failure counts it down). */
  downFor = 0;

  constructor(private readonly clock: ManualClock) {}

  private up(): void {
    if (this.downFor > 0) {
      this.downFor--;
      throw new LedgerDown('ledger unreachable');
    }
  }

  row(key: FireKey): Row | undefined {
    return this.rows.get(`${key.jobId}/${key.fenceToken}`);
  }

  async beginRun(fire: FireEvent, _owner: string, leaseMs: number, leaseToken?: string): Promise<RunStart> {
    this.up();
    const now = this.clock.now();
    const token = leaseToken ?? newLeaseIssuer() + '-0000-000000000000';
    const id = `${fire.jobId}/${fire.fenceToken}`;
    const row = this.rows.get(id);
    const lease = (attempt: number, takenOver: boolean): RunStart => {
      this.rows.set(id, {
        status: 'RUNNING',
        attempt,
        leaseToken: token,
        leaseExpiresAt: now + leaseMs,
        startedAt: now,
        finishedAt: null,
        httpStatus: null,
        error: null,
        nextAttemptAt: null,
        handedOffAt: null,
        deadLetterReason: null,
      });
      return { action: 'execute', leaseToken: token, takenOver, attempt, retryPolicy: this.policy };
    };
    if (!row) return lease(fire.attempt, false);
    if (row.status === 'RUNNING') {
      const expired = row.leaseExpiresAt !== null && row.leaseExpiresAt <= now;
      const mine = row.leaseToken?.slice(0, LEASE_ISSUER_CHARS) === token.slice(0, LEASE_ISSUER_CHARS);
      if (expired || mine) return lease(Math.max(row.attempt, fire.attempt), true);
      return { action: 'skip', reason: 'LEASE_HELD', status: 'RUNNING', run: this.state(fire, row) };
    }
    if (row.status === 'RETRYING' && fire.attempt > row.attempt) return lease(fire.attempt, false);
    return {
      action: 'skip',
      reason: row.status === 'RETRYING' ? 'RETRY_SCHEDULED' : 'ALREADY_FINAL',
      status: row.status,
      run: this.state(fire, row),
    };
  }

  private state(fire: FireEvent, row: Row): RunState {
    const now = this.clock.now();
    return {
      jobId: fire.jobId,
      fenceToken: fire.fenceToken,
      tenantId: fire.tenantId,
      fireId: fire.fireId,
      scheduledFor: fire.scheduledFor,
      nominalTime: fire.nominalTime,
      attempt: row.attempt,
      status: row.status,
      leaseOwner: null,
      leaseExpiresAt: row.leaseExpiresAt === null ? null : new Date(row.leaseExpiresAt),
      startedAt: new Date(row.startedAt),
      finishedAt: row.finishedAt === null ? null : new Date(row.finishedAt),
      httpStatus: row.httpStatus,
      error: row.error,
      nextAttemptAt: row.nextAttemptAt === null ? null : new Date(row.nextAttemptAt),
      handedOffAt: row.handedOffAt === null ? null : new Date(row.handedOffAt),
      leaseRemainingMs: Math.max(0, (row.leaseExpiresAt ?? now) - now),
      deadLetterReason: row.deadLetterReason,
    };
  }

  async heartbeat(key: FireKey, leaseToken: string, leaseMs: number): Promise<boolean> {
    this.up();
    const row = this.row(key);
    if (!row || row.status !== 'RUNNING' || row.leaseToken !== leaseToken) return false;
    row.leaseExpiresAt = this.clock.now() + leaseMs;
    return true;
  }

  async completeRun(key: FireKey, leaseToken: string, o: RunCompletion): Promise<RecordedRun | null> {
    this.up();
    const row = this.row(key);
    if (!row || row.status !== 'RUNNING' || row.leaseToken !== leaseToken) return null;
    Object.assign(row, {
      status: o.status,
      httpStatus: o.httpStatus,
      error: o.error,
      nextAttemptAt: o.nextAttemptAt ? o.nextAttemptAt.getTime() : null,
      deadLetterReason: o.deadLetterReason ?? null,
      finishedAt: this.clock.now(),
      leaseExpiresAt: null,
      handedOffAt: null,
    });
    return { startedAt: new Date(row.startedAt), finishedAt: new Date(row.finishedAt!) };
  }

  async markHandedOff(key: FireKey, status: 'RETRYING' | 'DEAD_LETTERED', attempt: number): Promise<void> {
    this.up();
    const row = this.row(key);
    if (row && row.status === status && row.attempt === attempt) row.handedOffAt ??= this.clock.now();
  }

  async releaseRun(key: FireKey, leaseToken: string): Promise<void> {
    this.up();
    const row = this.row(key);
    if (row && row.status === 'RUNNING' && row.leaseToken === leaseToken)
      row.leaseExpiresAt = this.clock.now();
  }

  async mayRunUnleased(key: FireKey): Promise<boolean> {
    this.up();
    return !this.row(key) && this.policy !== null;
  }

  async recordUnleasedRun(run: UnleasedRun): Promise<RecordedRun | null> {
    this.up();
    const id = `${run.fire.jobId}/${run.fire.fenceToken}`;
    if (this.rows.has(id)) return null;
    const now = this.clock.now();
    this.rows.set(id, {
      status: 'SUCCEEDED',
      attempt: 1,
      leaseToken: run.leaseToken ?? null,
      leaseExpiresAt: null,
      startedAt: now - run.durationMs,
      finishedAt: now,
      httpStatus: run.httpStatus,
      error: null,
      nextAttemptAt: null,
      handedOffAt: null,
      deadLetterReason: null,
    });
    return { startedAt: new Date(now - run.durationMs), finishedAt: new Date(now) };
  }

  isUnavailable(error: unknown): boolean {
    return error instanceof LedgerDown;
  }
}

/** A ledger as one executor process sees it: frozen (its statements wait) while the process is. */
class ProcessView implements RunLedger {
  private frozen: Promise<void> | undefined;
  private thaw: (() => void) | undefined;
  readonly heartbeats: number[] = [];

  constructor(
    private readonly ledger: InMemoryRunLedger,
    private readonly clock: ManualClock,
  ) {}

  freeze(): void {
    this.frozen = new Promise((resolve) => (this.thaw = resolve));
  }

  unfreeze(): void {
    this.frozen = undefined;
    this.thaw?.();
  }

  private async gate(): Promise<void> {
    if (this.frozen) await this.frozen;
  }

  async beginRun(...a: Parameters<RunLedger['beginRun']>): Promise<RunStart> {
    await this.gate();
    return this.ledger.beginRun(...a);
  }
  async heartbeat(...a: Parameters<RunLedger['heartbeat']>): Promise<boolean> {
    this.heartbeats.push(this.clock.now() - T0);
    await this.gate();
    return this.ledger.heartbeat(...a);
  }
  async completeRun(...a: Parameters<RunLedger['completeRun']>): Promise<RecordedRun | null> {
    await this.gate();
    return this.ledger.completeRun(...a);
  }
  async markHandedOff(...a: Parameters<RunLedger['markHandedOff']>): Promise<void> {
    await this.gate();
    return this.ledger.markHandedOff(...a);
  }
  async releaseRun(...a: Parameters<RunLedger['releaseRun']>): Promise<void> {
    await this.gate();
    return this.ledger.releaseRun(...a);
  }
  async mayRunUnleased(key: FireKey): Promise<boolean> {
    await this.gate();
    return this.ledger.mayRunUnleased(key);
  }
  async recordUnleasedRun(run: UnleasedRun): Promise<RecordedRun | null> {
    await this.gate();
    return this.ledger.recordUnleasedRun(run);
  }
  isUnavailable(error: unknown): boolean {
    return this.ledger.isUnavailable(error);
  }
}

/** What the executor sent out. */
class Sink implements FireOutcomeSink {
  readonly results: FireResult[] = [];
  readonly retries: { attempt: number; notBefore: number }[] = [];
  readonly deadLetters: { attempt: number; reason: DeadLetterReason; detail: string }[] = [];
  async publishResult(r: FireResult): Promise<void> {
    this.results.push(r);
  }
  async scheduleRetry(f: FireEvent, notBefore: Date): Promise<void> {
    this.retries.push({ attempt: f.attempt, notBefore: notBefore.getTime() });
  }
  async deadLetter(f: FireEvent, reason: DeadLetterReason, detail: string): Promise<void> {
    this.deadLetters.push({ attempt: f.attempt, reason, detail });
  }
}

/** A target whose calls answer when the test says so. */
class Target implements TargetRunner<WebhookTarget>, TargetRunner<KafkaTarget> {
  readonly calls: TargetRequest[] = [];
  private readonly pending: ((o: AttemptOutcome) => void)[] = [];
  /** Answers at once with this, when set; otherwise the call waits for `answer`. */
  immediate: AttemptOutcome | undefined;

  run(_t: WebhookTarget | KafkaTarget, req: TargetRequest, signal?: AbortSignal): Promise<AttemptOutcome> {
    this.calls.push(req);
    if (this.immediate) return Promise.resolve(this.immediate);
    return new Promise((resolve) => {
      this.pending.push(resolve);
      signal?.addEventListener('abort', () =>
        resolve({ ok: false, httpStatus: null, error: 'ABORTED', retryable: true, aborted: true }),
      );
    });
  }

  /** Answers the oldest waiting call. */
  answer(o: AttemptOutcome): void {
    this.pending.shift()!(o);
  }
}

const OK: AttemptOutcome = { ok: true, httpStatus: 200, error: null, retryable: false };
const UNAVAILABLE: AttemptOutcome = { ok: false, httpStatus: 503, error: 'HTTP 503', retryable: true };

function executorOn(clock: ManualClock, ledger: RunLedger, target: Target, sink: Sink, owner = 'exec-a') {
  return new FireExecutor(ledger, target, target, sink, {
    owner,
    leaseIssuer: newLeaseIssuer(),
    runLeaseMs: LEASE_MS,
    heartbeatMs: HEARTBEAT_MS,
    runRetentionMs: 30 * 86_400_000,
    clock,
    random: () => 0.5,
  });
}

function world() {
  const clock = new ManualClock(T0);
  const ledger = new InMemoryRunLedger(clock);
  const target = new Target();
  const sink = new Sink();
  const ex = executorOn(clock, ledger, target, sink);
  return { clock, ledger, target, sink, ex, stop: new AbortController() };
}

const KEY: FireKey = { jobId: 'job-1', fenceToken: 7 };

describe('the delivery state machine (ManualClock, in-memory RunLedger)', () => {
  it('takes the lease before calling, and records the outcome under it', async () => {
    const { clock, ledger, target, sink, ex, stop } = world();
    const running = ex.execute(fireOf(webhook), stop.signal);
    await clock.advance(0);
    expect(target.calls).toHaveLength(1);
    const leased = ledger.row(KEY)!;
    expect(leased.status).toBe('RUNNING');
    expect(leased.leaseExpiresAt).toBe(T0 + LEASE_MS);
    await clock.advance(1_500);
    target.answer(OK);
    const report = await running;
    expect(report).toMatchObject({ kind: 'executed', outcome: 'SUCCEEDED' });
    expect(ledger.row(KEY)).toMatchObject({
      status: 'SUCCEEDED',
      leaseExpiresAt: null,
      finishedAt: T0 + 1_500,
    });
    expect(sink.results.map((r) => [r.outcome, r.durationMs])).toEqual([['SUCCEEDED', 1_500]]);
  });

  it('renews the lease every heartbeat while the call runs, and stops once it is recorded', async () => {
    const { clock, ledger, target, stop } = world();
    const view = new ProcessView(ledger, clock);
    const ex = executorOn(clock, view, target, new Sink());
    const running = ex.execute(fireOf(webhook), stop.signal);
    await clock.advance(25_000);
    expect(view.heartbeats).toEqual([10_000, 20_000]);
    expect(ledger.row(KEY)!.leaseExpiresAt).toBe(T0 + 20_000 + LEASE_MS);
    // Past the first lease's end: still held, because it was renewed.
    await clock.advance(10_000);
    expect(ledger.row(KEY)!.leaseExpiresAt).toBe(T0 + 30_000 + LEASE_MS);
    target.answer(OK);
    expect(await running).toMatchObject({ kind: 'executed', outcome: 'SUCCEEDED' });
    await clock.advance(60_000);
    expect(view.heartbeats).toEqual([10_000, 20_000, 30_000]);
  });

  it('schedules a retry with backoff after a retryable failure, then runs it when it is due', async () => {
    const { clock, ledger, target, sink, ex, stop } = world();
    target.immediate = UNAVAILABLE;
    expect(await ex.execute(fireOf(webhook), stop.signal)).toMatchObject({ outcome: 'RETRYING' });
    // Full jitter on [0, 1000] at random 0.5: 500 ms.
    expect(sink.retries).toEqual([{ attempt: 2, notBefore: T0 + 500 }]);
    expect(ledger.row(KEY)).toMatchObject({ status: 'RETRYING', nextAttemptAt: T0 + 500, handedOffAt: T0 });

    // The first attempt's re-delivery finds the retry scheduled and does nothing.
    expect(await ex.execute(fireOf(webhook), stop.signal)).toEqual({
      kind: 'duplicate',
      reason: 'RETRY_SCHEDULED',
    });
    expect(target.calls).toHaveLength(1);

    await clock.advance(500);
    expect(await ex.execute(fireOf(webhook, 2), stop.signal)).toMatchObject({ outcome: 'RETRYING' });
    // The second backoff's cap doubles (2000): 1000 ms at random 0.5.
    expect(sink.retries[1]).toEqual({ attempt: 3, notBefore: T0 + 500 + 1_000 });
    expect(target.calls.map((c) => c.attempt)).toEqual([1, 2]);
  });

  it('dead-letters after the last attempt, its reason in a field of its own', async () => {
    const { clock, ledger, target, sink, ex, stop } = world();
    target.immediate = UNAVAILABLE;
    for (const attempt of [1, 2, 3]) {
      await ex.execute(fireOf(webhook, attempt), stop.signal);
      await clock.advance(5_000);
    }
    expect(sink.deadLetters).toEqual([
      { attempt: 3, reason: 'RETRIES_EXHAUSTED', detail: 'gave up after 3 attempts; last error: HTTP 503' },
    ]);
    expect(ledger.row(KEY)).toMatchObject({
      status: 'DEAD_LETTERED',
      deadLetterReason: 'RETRIES_EXHAUSTED',
      error: 'RETRIES_EXHAUSTED: gave up after 3 attempts; last error: HTTP 503',
    });
    expect(sink.results.map((r) => r.outcome)).toEqual(['RETRYING', 'RETRYING', 'DEAD_LETTERED']);
  });

  it('a re-delivery hands a dead letter a crash left undone on, with the reason from its column', async () => {
    const { ledger, target, sink, ex, stop } = world();
    ledger.rows.set('job-1/7', {
      status: 'DEAD_LETTERED',
      attempt: 2,
      leaseToken: null,
      leaseExpiresAt: null,
      startedAt: T0,
      finishedAt: T0,
      httpStatus: null,
      error: 'MAX_EVENT_AGE: attempt 2 would start: too late',
      nextAttemptAt: null,
      handedOffAt: null,
      deadLetterReason: 'MAX_EVENT_AGE',
    });
    expect(await ex.execute(fireOf(webhook, 2), stop.signal)).toEqual({
      kind: 'duplicate',
      reason: 'ALREADY_FINAL',
    });
    // The reason from its column; the detail is the error after it.
    expect(sink.deadLetters).toEqual([
      { attempt: 2, reason: 'MAX_EVENT_AGE', detail: 'attempt 2 would start: too late' },
    ]);
    expect(ledger.row(KEY)!.handedOffAt).toBe(T0);
    expect(target.calls).toHaveLength(0);
  });

  it('a lease held elsewhere is waited for, then taken over once it expires; the frozen holder is fenced out', async () => {
    const { clock, ledger, target, sink } = world();
    const stop = new AbortController();
    const holderView = new ProcessView(ledger, clock);
    const holderTarget = new Target();
    const holder = executorOn(clock, holderView, holderTarget, sink, 'exec-holder');
    const taker = executorOn(clock, ledger, target, sink, 'exec-taker');
    const held = holder.execute(fireOf(webhook), stop.signal);
    await clock.advance(10_000); // one renewal lands: leased until T0 + 40 s
    holderView.freeze(); // the holder's process stops (a long GC pause, a frozen VM)

    target.immediate = OK;
    const waits: number[] = [];
    let report: ExecutionReport;
    for (;;) {
      report = await taker.execute(fireOf(webhook), stop.signal);
      if (report.kind !== 'later') break;
      expect(report.why).toBe('run lease held elsewhere');
      waits.push(report.afterMs);
      await clock.advance(report.afterMs);
    }
    // Looked at again at least once a second; not called before the renewed lease ran out.
    expect(waits.length).toBeGreaterThan(25);
    expect(Math.max(...waits)).toBeLessThanOrEqual(1_000);
    expect(clock.now()).toBeGreaterThanOrEqual(T0 + 10_000 + LEASE_MS);
    expect(report).toMatchObject({ kind: 'executed', outcome: 'SUCCEEDED' });
    expect(target.calls).toHaveLength(1);

    // The holder wakes up and its call answers: its late outcome is not recorded.
    holderView.unfreeze();
    holderTarget.answer(OK);
    expect(await held).toEqual({ kind: 'lease-lost' });
    expect(sink.results.map((r) => r.outcome)).toEqual(['SUCCEEDED']);
    expect(ledger.row(KEY)!.status).toBe('SUCCEEDED');
  });

  it("keeps a call's answer through an unreachable ledger: the record is retried with backoff, not the call", async () => {
    const { clock, ledger, target, sink, ex, stop } = world();
    const running = ex.execute(fireOf(webhook), stop.signal);
    await clock.advance(0);
    ledger.downFor = 3; // the completion's first three tries
    target.answer(OK);
    await clock.advance(0);
    expect(ledger.row(KEY)!.status).toBe('RUNNING');
    await clock.advance(100 + 200); // two backoffs: 100 ms, 200 ms
    expect(ledger.row(KEY)!.status).toBe('RUNNING');
    await clock.advance(400);
    expect(await running).toMatchObject({ kind: 'executed', outcome: 'SUCCEEDED' });
    expect(ledger.row(KEY)!.finishedAt).toBe(T0 + 700);
    expect(target.calls).toHaveLength(1);
    expect(sink.results).toHaveLength(1);
  });

  it("a Kafka target's single first attempt is a batch of one: produced, then recorded in one write, no lease", async () => {
    const { ledger, target, sink, ex, stop } = world();
    target.immediate = { ok: true, httpStatus: null, error: null, retryable: false };
    const begun = jest.spyOn(ledger, 'beginRun');
    expect(await ex.execute(fireOf(kafka), stop.signal)).toMatchObject({
      kind: 'executed',
      outcome: 'SUCCEEDED',
    });
    expect(begun).not.toHaveBeenCalled();
    expect(ledger.row(KEY)).toMatchObject({ status: 'SUCCEEDED', attempt: 1 });
    expect(sink.results).toHaveLength(1);
    // Its re-delivery finds the run and produces nothing.
    expect(await ex.execute(fireOf(kafka), stop.signal)).toEqual({
      kind: 'duplicate',
      reason: 'ALREADY_FINAL',
    });
    expect(target.calls).toHaveLength(1);
  });
});
