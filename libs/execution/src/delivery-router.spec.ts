/**
 * The executor's rules in isolation (the ledger, sink and target are scripted here; the real
 * ones are exercised by test/integration and test/e2e): record before hand-off, nothing produced
 * when fenced out, hand-offs repaired on re-delivery, and what is (not) acknowledged.
 */
import { getEventListeners } from 'node:events';
import type {
  FireEvent,
  FireKey,
  FireResult,
  KafkaTarget,
  RetryPolicy,
  WebhookTarget,
} from '@tickwork/domain';
import type { RecordedRun, RunCompletion, RunStart, RunState, UnleasedRun } from '@tickwork/domain';
import { ManualClock, systemClock, type Clock } from '@tickwork/domain';
import { bindTraceContext, boundTraceContext } from '@tickwork/telemetry';
import type { AttemptOutcome, TargetRequest, TargetRunner } from './attempt';
import { FireExecutor } from './delivery-router';
import type { RunLedger } from './run-ledger';
import type { FireOutcomeSink } from './outcome-sink';
import type { DeadLetterReason } from './retry-plan';
import { Slots } from './slots';

const policy: RetryPolicy = {
  maxAttempts: 3,
  initialBackoffMs: 1_000,
  multiplier: 2,
  maxBackoffMs: 60_000,
  maxEventAgeMs: 3_600_000,
};
const target: WebhookTarget = {
  type: 'webhook',
  url: 'https://example.com/x',
  method: 'POST',
  headers: {},
  timeoutMs: 1_000,
  successStatus: { min: 200, max: 299 },
};
const now = new Date('2026-06-01T12:00:00Z');
/** What the ledger recorded for an attempt (its clock, not the executor's `now`). */
const LEDGER_TIMES: RecordedRun = {
  startedAt: new Date('2026-06-01T12:00:00.004Z'),
  finishedAt: new Date('2026-06-01T12:00:00.019Z'),
};
const fire: FireEvent = {
  jobId: 'j',
  tenantId: 't',
  fenceToken: 4,
  fireId: 'j:4',
  scheduledFor: now,
  nominalTime: now,
  attempt: 1,
  target,
  payload: { a: 1 },
};

/** What node-postgres throws when the server refuses the connection (a transient error). */
const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

type Step = 'begin' | 'complete' | 'record-unleased' | 'handed-off' | 'may-run-unleased';

class Script implements RunLedger, FireOutcomeSink {
  readonly log: string[] = [];
  /** How many more times each ledger step fails, and with what (default: connection refused). */
  failures: Partial<Record<Step, number>> = {};
  failWith: () => Error = refused;
  /** The lease token the executor asked for, per beginRun. */
  readonly beginTokens: (string | undefined)[] = [];
  /** Answers of the next beginRuns, in order (then `start`). */
  starts: RunStart[] = [];
  /** The unleased runs recordUnleasedRun was given. */
  readonly unleasedRuns: UnleasedRun[] = [];

  protected fail(step: Step): void {
    const left = this.failures[step] ?? 0;
    if (left <= 0) return;
    this.failures[step] = left - 1;
    this.log.push(`${step} failed`);
    throw this.failWith();
  }
  start: RunStart = {
    action: 'execute',
    leaseToken: 'L1',
    takenOver: false,
    attempt: 1,
    retryPolicy: policy,
  };
  completes = true;
  heartbeatResult: boolean | Error = true;
  /** What mayRunUnleased answers (false: a run was recorded, or the job is gone). */
  unleasedAllowed = false;
  /** What recordUnleasedRun answers (false: a concurrent delivery recorded first). */
  unleasedRecorded = true;

  async beginRun(_f: FireEvent, _owner: string, _leaseMs: number, leaseToken?: string): Promise<RunStart> {
    this.beginTokens.push(leaseToken);
    this.fail('begin');
    this.log.push('begin');
    return this.starts.shift() ?? this.start;
  }
  async heartbeat(): Promise<boolean> {
    this.log.push('heartbeat');
    if (this.heartbeatResult instanceof Error) throw this.heartbeatResult;
    return this.heartbeatResult;
  }
  async completeRun(_k: FireKey, token: string, o: RunCompletion): Promise<RecordedRun | null> {
    this.fail('complete');
    this.log.push(
      `complete ${o.status} ${token}${o.nextAttemptAt ? ` next=${o.nextAttemptAt.toISOString()}` : ''}${o.retried ? ' retried' : ''}`,
    );
    return this.completes ? LEDGER_TIMES : null;
  }
  async mayRunUnleased(): Promise<boolean> {
    this.fail('may-run-unleased');
    this.log.push('may-run-unleased');
    return this.unleasedAllowed;
  }
  async recordUnleasedRun(r: UnleasedRun): Promise<RecordedRun | null> {
    this.unleasedRuns.push(r);
    this.fail('record-unleased');
    this.log.push(`record-unleased ${r.fire.fenceToken} by=${r.owner}${r.retried ? ' retried' : ''}`);
    return this.unleasedRecorded ? LEDGER_TIMES : null;
  }
  async markHandedOff(_k: FireKey, status: string, attempt: number): Promise<void> {
    this.fail('handed-off');
    this.log.push(`handed-off ${status} ${attempt}`);
  }
  async releaseRun(): Promise<void> {
    this.log.push('release');
  }
  /** What the PostgreSQL adapter calls transient, as far as these scripts fail: a refused connection. */
  isUnavailable(e: unknown): boolean {
    return (e as { code?: string }).code === 'ECONNREFUSED';
  }
  async publishResult(r: FireResult): Promise<void> {
    this.log.push(`result ${r.attempt} ${r.outcome}`);
  }
  async scheduleRetry(f: FireEvent, notBefore: Date): Promise<void> {
    this.log.push(`retry attempt=${f.attempt} at=${notBefore.toISOString()}`);
  }
  async deadLetter(f: FireEvent, reason: DeadLetterReason): Promise<void> {
    this.log.push(`dlq ${reason} attempt=${f.attempt}`);
  }
}

class Target implements TargetRunner<WebhookTarget>, TargetRunner<KafkaTarget> {
  calls: TargetRequest[] = [];
  answer: (signal?: AbortSignal) => Promise<AttemptOutcome> = async () => ({
    ok: true,
    httpStatus: 200,
    error: null,
    retryable: false,
  });
  run(_t: WebhookTarget | KafkaTarget, req: TargetRequest, signal?: AbortSignal): Promise<AttemptOutcome> {
    this.calls.push(req);
    return this.answer(signal);
  }
}

function setup(
  opts: {
    leaseMs?: number;
    heartbeatMs?: number;
    webhookSlots?: Slots;
    ledgerRetryMs?: number;
    clock?: Clock;
  } = {},
) {
  const s = new Script();
  const t = new Target();
  const retries: string[] = [];
  const ex = new FireExecutor(
    s,
    t,
    t,
    s,
    {
      owner: 'me',
      runLeaseMs: opts.leaseMs ?? 30_000,
      heartbeatMs: opts.heartbeatMs ?? 10_000,
      runRetentionMs: 30 * 86_400_000,
      clock: opts.clock ?? { ...systemClock, now: () => now.getTime() },
      random: () => 0.5,
      ...(opts.webhookSlots ? { webhookSlots: opts.webhookSlots } : {}),
      ...(opts.ledgerRetryMs !== undefined ? { ledgerRetryMs: opts.ledgerRetryMs } : {}),
    },
    { onLedgerRetry: (step, _e, tries) => retries.push(`${step} ${tries}`) },
  );
  return { s, t, ex, retries, stop: new AbortController() };
}

/** Polls `check` every few ms until it holds (2 s at most). */
async function eventually(check: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 2_000; !check(); ) {
    if (Date.now() > deadline) throw new Error('condition not met within 2 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const hanging = (signal?: AbortSignal) =>
  new Promise<AttemptOutcome>((resolve) =>
    signal!.addEventListener('abort', () =>
      resolve({ ok: false, httpStatus: null, error: 'ABORTED', retryable: true, aborted: true }),
    ),
  );

describe('FireExecutor', () => {
  it("a result carries the times the ledger recorded for the attempt, not the executor's clock", async () => {
    const { s, ex, stop } = setup();
    const results: FireResult[] = [];
    s.publishResult = async (r: FireResult) => {
      results.push(r);
    };
    // Leased (a webhook), and a Kafka target's first attempt recorded without a lease.
    await ex.execute(fire, stop.signal);
    s.unleasedAllowed = true;
    const kafkaFire: FireEvent = {
      ...fire,
      fenceToken: 9,
      fireId: 'j:9',
      target: { type: 'kafka', topic: 'orders', key: null, headers: {} },
    };
    await ex.execute(kafkaFire, stop.signal);
    expect(results.map((r) => [r.fenceToken, r.startedAt, r.finishedAt, r.durationMs])).toEqual([
      [fire.fenceToken, LEDGER_TIMES.startedAt, LEDGER_TIMES.finishedAt, 15],
      [9, LEDGER_TIMES.startedAt, LEDGER_TIMES.finishedAt, 15],
    ]);
  });

  it('holds a target slot only for the call: not for the lease before it nor the bookkeeping after it', async () => {
    const slots = new Slots(1);
    const { s, t, ex, stop } = setup({ webhookSlots: slots });
    let finishCall: (o: AttemptOutcome) => void = () => undefined;
    t.answer = () => new Promise((resolve) => (finishCall = resolve));
    const publishing: (() => void)[] = [];
    s.publishResult = (r: FireResult) => {
      s.log.push(`result ${r.attempt} ${r.outcome}`);
      return new Promise<void>((resolve) => publishing.push(resolve));
    };
    const first = ex.execute(fire, stop.signal);
    const second = ex.execute({ ...fire, fenceToken: 5, fireId: 'j:5' }, stop.signal);
    await new Promise((r) => setImmediate(r));
    // One slot: both runs took their lease, but only the first one calls.
    expect(s.log.filter((l) => l === 'begin')).toHaveLength(2);
    expect(t.calls).toHaveLength(1);
    expect(slots.waiting()).toBe(1);
    finishCall({ ok: true, httpStatus: 200, error: null, retryable: false });
    await new Promise((r) => setImmediate(r));
    // The first run is still publishing its result, yet the second run's call has started.
    expect(s.log).toContain('result 1 SUCCEEDED');
    expect(t.calls).toHaveLength(2);
    expect(slots.inUse()).toBe(1);
    finishCall({ ok: true, httpStatus: 200, error: null, retryable: false });
    await new Promise((r) => setImmediate(r));
    expect(publishing).toHaveLength(2);
    for (const done of publishing) done();
    await expect(Promise.all([first, second])).resolves.toEqual([
      expect.objectContaining({ kind: 'executed' }),
      expect.objectContaining({ kind: 'executed' }),
    ]);
    expect(slots.inUse()).toBe(0);
  });

  it('gives a Kafka target no slot: its message rides the batched produce requests', async () => {
    const slots = new Slots(1);
    const { t, ex, stop } = setup({ webhookSlots: slots });
    await slots.acquire(); // every webhook slot is taken
    const kafkaFire: FireEvent = {
      ...fire,
      fenceToken: 8,
      fireId: 'j:8',
      target: { type: 'kafka', topic: 'orders', key: null, headers: {} },
    };
    expect(await ex.execute(kafkaFire, stop.signal)).toMatchObject({
      kind: 'executed',
      outcome: 'SUCCEEDED',
    });
    expect(t.calls).toHaveLength(1);
    // A webhook fire still waits for a slot.
    const webhook = ex.execute({ ...fire, fenceToken: 9, fireId: 'j:9' }, stop.signal);
    await new Promise((r) => setImmediate(r));
    expect(t.calls).toHaveLength(1);
    expect(slots.waiting()).toBe(1);
    slots.release();
    await expect(webhook).resolves.toMatchObject({ kind: 'executed' });
    expect(t.calls).toHaveLength(2);
    expect(slots.inUse()).toBe(0);
  });

  describe("a Kafka target's first attempt", () => {
    const kafkaFire: FireEvent = {
      ...fire,
      target: { type: 'kafka', topic: 'orders', key: null, headers: {} },
    };

    it('runs without a lease when no run of it was recorded: check, produce, one record, result', async () => {
      const { s, t, ex, stop } = setup();
      s.unleasedAllowed = true;
      expect(await ex.execute(kafkaFire, stop.signal)).toMatchObject({
        kind: 'executed',
        outcome: 'SUCCEEDED',
      });
      expect(t.calls).toHaveLength(1);
      expect(s.log).toEqual(['may-run-unleased', 'record-unleased 4 by=me', 'result 1 SUCCEEDED']);
    });

    it('takes the leased path when a run was recorded or the job is gone, and from the second attempt on', async () => {
      const { s, t, ex, stop } = setup();
      expect(await ex.execute(kafkaFire, stop.signal)).toMatchObject({
        kind: 'executed',
        outcome: 'SUCCEEDED',
      });
      expect(s.log).toEqual(['may-run-unleased', 'begin', 'complete SUCCEEDED L1', 'result 1 SUCCEEDED']);
      s.log.length = 0;
      s.unleasedAllowed = true;
      s.start = { action: 'execute', leaseToken: 'L2', takenOver: false, attempt: 2, retryPolicy: policy };
      await ex.execute({ ...kafkaFire, attempt: 2 }, stop.signal);
      expect(s.log).toEqual(['begin', 'complete SUCCEEDED L2', 'result 2 SUCCEEDED']);
      expect(t.calls).toHaveLength(2);
    });

    it('records a failed produce under a lease and hands the retry on, without producing again', async () => {
      const { s, t, ex, stop } = setup();
      s.unleasedAllowed = true;
      t.answer = async () => ({ ok: false, httpStatus: null, error: 'KAFKA: broker down', retryable: true });
      expect(await ex.execute(kafkaFire, stop.signal)).toMatchObject({
        kind: 'executed',
        outcome: 'RETRYING',
      });
      expect(t.calls).toHaveLength(1);
      expect(s.log).toEqual([
        'may-run-unleased',
        'begin',
        'complete RETRYING L1 next=2026-06-01T12:00:00.500Z',
        'retry attempt=2 at=2026-06-01T12:00:00.500Z',
        'handed-off RETRYING 1',
        'result 1 RETRYING',
      ]);
    });

    it('publishes no result when a concurrent delivery recorded its run first', async () => {
      const { s, ex, stop } = setup();
      s.unleasedAllowed = true;
      s.unleasedRecorded = false;
      expect(await ex.execute(kafkaFire, stop.signal)).toEqual({
        kind: 'duplicate',
        reason: 'RECORDED_ELSEWHERE',
      });
      expect(s.log).toEqual(['may-run-unleased', 'record-unleased 4 by=me']);
    });

    it('holds a second copy of a fire that is running here until the first is done', async () => {
      const { s, t, ex, stop } = setup();
      s.unleasedAllowed = true;
      let ack: (o: AttemptOutcome) => void = () => undefined;
      t.answer = () => new Promise((resolve) => (ack = resolve));
      const first = ex.execute(kafkaFire, stop.signal);
      await new Promise((r) => setImmediate(r));
      expect(await ex.execute(kafkaFire, stop.signal)).toMatchObject({
        kind: 'later',
        why: 'the same fire is running here',
      });
      ack({ ok: true, httpStatus: null, error: null, retryable: false });
      await expect(first).resolves.toMatchObject({ kind: 'executed' });
      expect(t.calls).toHaveLength(1);
    });

    it('leaves no listener behind on the stop signal, however many fires it produced', async () => {
      const { s, t, ex, stop } = setup();
      s.unleasedAllowed = true;
      // Like the Kafka runner: it listens for an abort of the signal it is given.
      t.answer = async (signal?: AbortSignal) => {
        signal?.addEventListener('abort', () => undefined, { once: true });
        return { ok: true, httpStatus: null, error: null, retryable: false };
      };
      for (let n = 1; n <= 20; n++)
        await ex.execute({ ...kafkaFire, fenceToken: n, fireId: `j:${n}` }, stop.signal);
      expect(t.calls).toHaveLength(20);
      expect(getEventListeners(stop.signal, 'abort').length).toBeLessThanOrEqual(1);
    });

    it('on stop, stops waiting for the ack, records nothing and does not acknowledge', async () => {
      const { s, t, ex, stop } = setup();
      s.unleasedAllowed = true;
      t.answer = () => new Promise<AttemptOutcome>(() => undefined); // the ack never comes
      const running = ex.execute(kafkaFire, stop.signal);
      await new Promise((r) => setImmediate(r));
      stop.abort();
      expect(await running).toEqual({ kind: 'abandoned' });
      expect(s.log).toEqual(['may-run-unleased']);
    });
  });

  it('renews the lease of a run that waited for a slot before calling, and does not call if it was taken', async () => {
    // heartbeatMs 0: any wait counts as long.
    const slots = new Slots(1);
    const { s, t, ex, stop } = setup({ webhookSlots: slots, heartbeatMs: 0 });
    expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'executed', outcome: 'SUCCEEDED' });
    expect(s.log.slice(0, 2)).toEqual(['begin', 'heartbeat']);
    expect(t.calls).toHaveLength(1);

    s.heartbeatResult = false;
    s.log.length = 0;
    expect(await ex.execute({ ...fire, fenceToken: 6, fireId: 'j:6' }, stop.signal)).toEqual({
      kind: 'lease-lost',
    });
    expect(s.log).toEqual(['begin', 'heartbeat']);
    expect(t.calls).toHaveLength(1);
    expect(slots.inUse()).toBe(0);

    s.heartbeatResult = new Error('connection refused');
    expect(await ex.execute({ ...fire, fenceToken: 7, fireId: 'j:7' }, stop.signal)).toMatchObject({
      kind: 'later',
      why: 'run ledger unreachable',
    });
    expect(t.calls).toHaveLength(1);
    expect(slots.inUse()).toBe(0);
  });

  it('records a retry before handing it off, then publishes the attempt result', async () => {
    const { s, t, ex, stop } = setup();
    t.answer = async () => ({ ok: false, httpStatus: 503, error: 'HTTP 503', retryable: true });
    expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'executed', outcome: 'RETRYING' });
    expect(s.log).toEqual([
      'begin',
      'complete RETRYING L1 next=2026-06-01T12:00:00.500Z',
      'retry attempt=2 at=2026-06-01T12:00:00.500Z',
      'handed-off RETRYING 1',
      'result 1 RETRYING',
    ]);
  });

  it('keeps the trace a fire arrived with on its target call, its retry and its result', async () => {
    const { s, t, ex, stop } = setup();
    const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    const traced: FireEvent = { ...fire };
    bindTraceContext(traced, trace);
    const sent: { what: string; trace: unknown }[] = [];
    s.scheduleRetry = async (f: FireEvent) =>
      void sent.push({ what: `retry ${f.attempt}`, trace: boundTraceContext(f) });
    s.publishResult = async (r: FireResult) =>
      void sent.push({ what: `result ${r.attempt}`, trace: boundTraceContext(r) });
    t.answer = async () => ({ ok: false, httpStatus: 503, error: 'HTTP 503', retryable: true });
    await ex.execute(traced, stop.signal);
    expect(t.calls[0]!.traceHeaders).toEqual(trace);
    expect(sent).toEqual([
      { what: 'retry 2', trace },
      { what: 'result 1', trace },
    ]);
  });

  it('produces nothing when its completion is fenced out', async () => {
    const { s, ex, stop } = setup();
    s.completes = false;
    expect(await ex.execute(fire, stop.signal)).toEqual({ kind: 'lease-lost' });
    expect(s.log).toEqual(['begin', 'complete SUCCEEDED L1']);
  });

  it('aborts the call when a heartbeat finds the lease taken, and records nothing', async () => {
    const { s, t, ex, stop } = setup({ heartbeatMs: 10 });
    s.heartbeatResult = false;
    t.answer = hanging;
    expect(await ex.execute(fire, stop.signal)).toEqual({ kind: 'lease-lost' });
    expect(s.log).toEqual(['begin', 'heartbeat']);
  });

  it('keeps the delivery when the ledger was unreachable for a whole lease', async () => {
    const clock = new ManualClock(now.getTime());
    const { s, t, ex, stop } = setup({ leaseMs: 30, heartbeatMs: 10, clock });
    s.heartbeatResult = new Error('connection refused');
    t.answer = hanging;
    const running = ex.execute(fire, stop.signal);
    await clock.advance(20);
    expect(s.log).toEqual(['begin', 'heartbeat', 'heartbeat']);
    await clock.advance(10);
    const r = await running;
    expect(r).toMatchObject({ kind: 'later', why: 'run ledger unreachable' });
    expect(s.log.filter((l) => !l.startsWith('heartbeat'))).toEqual(['begin']);
  });

  it('on stop, aborts the call, releases the lease and does not acknowledge', async () => {
    const { s, t, ex, stop } = setup();
    t.answer = hanging;
    const running = ex.execute(fire, stop.signal);
    await new Promise((r) => setImmediate(r));
    stop.abort();
    expect(await running).toEqual({ kind: 'abandoned' });
    expect(s.log).toEqual(['begin', 'release']);
  });

  it('dead-letters a deleted job without calling it', async () => {
    const { s, t, ex, stop } = setup();
    s.start = { action: 'execute', leaseToken: 'L1', takenOver: false, attempt: 1, retryPolicy: null };
    expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'executed', outcome: 'DEAD_LETTERED' });
    expect(t.calls).toHaveLength(0);
    expect(s.log).toEqual([
      'begin',
      'complete DEAD_LETTERED L1',
      'dlq UNKNOWN_JOB attempt=1',
      'handed-off DEAD_LETTERED 1',
      'result 1 DEAD_LETTERED',
    ]);
  });

  it('acts as the attempt it took over, and gives up on the last one', async () => {
    const { s, t, ex, stop } = setup();
    s.start = { action: 'execute', leaseToken: 'L2', takenOver: true, attempt: 3, retryPolicy: policy };
    t.answer = async () => ({ ok: false, httpStatus: 500, error: 'HTTP 500', retryable: true });
    await ex.execute(fire, stop.signal);
    expect(t.calls[0]!.attempt).toBe(3);
    expect(s.log).toContain('dlq RETRIES_EXHAUSTED attempt=3');
  });

  it('repairs a hand-off a crash left undone, on re-delivery', async () => {
    const { s, t, ex, stop } = setup();
    const run: RunState = {
      jobId: 'j',
      fenceToken: 4,
      tenantId: 't',
      fireId: 'j:4',
      scheduledFor: now,
      nominalTime: now,
      attempt: 2,
      status: 'RETRYING',
      leaseOwner: 'dead',
      leaseExpiresAt: null,
      startedAt: now,
      finishedAt: now,
      httpStatus: 503,
      error: 'HTTP 503',
      nextAttemptAt: new Date('2026-06-01T12:00:09Z'),
      handedOffAt: null,
      leaseRemainingMs: 0,
      deadLetterReason: null,
    };
    s.start = { action: 'skip', reason: 'RETRY_SCHEDULED', status: 'RETRYING', run };
    expect(await ex.execute({ ...fire, attempt: 2 }, stop.signal)).toEqual({
      kind: 'duplicate',
      reason: 'RETRY_SCHEDULED',
    });
    expect(s.log).toEqual(['begin', 'retry attempt=3 at=2026-06-01T12:00:09.000Z', 'handed-off RETRYING 2']);
    expect(t.calls).toHaveLength(0);

    s.log.length = 0;
    s.start = {
      action: 'skip',
      reason: 'RETRY_SCHEDULED',
      status: 'RETRYING',
      run: { ...run, handedOffAt: now },
    };
    await ex.execute({ ...fire, attempt: 2 }, stop.signal);
    expect(s.log).toEqual(['begin']);
  });

  it('does not acknowledge a delivery whose run is leased elsewhere: comes back when the lease would expire', async () => {
    const { s, ex, stop } = setup();
    s.start = { action: 'skip', reason: 'LEASE_HELD', status: 'RUNNING', run: null };
    expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'later', afterMs: 50 });
  });

  it('looks again within a second at a run leased elsewhere for longer (its holder may be draining)', async () => {
    const { s, ex, stop } = setup();
    s.start = {
      action: 'skip',
      reason: 'LEASE_HELD',
      status: 'RUNNING',
      run: {
        jobId: 'j',
        fenceToken: 1,
        tenantId: 't',
        fireId: 'j:1',
        scheduledFor: now,
        nominalTime: now,
        attempt: 1,
        status: 'RUNNING',
        leaseOwner: 'other',
        leaseExpiresAt: new Date(now.getTime() + 25_000),
        startedAt: now,
        finishedAt: null,
        httpStatus: null,
        error: null,
        nextAttemptAt: null,
        handedOffAt: null,
        leaseRemainingMs: 25_000,
        deadLetterReason: null,
      },
    };
    expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'later', afterMs: 1_000 });
  });

  it('holds a fire published ahead of its time', async () => {
    const { s, ex, stop } = setup();
    const r = await ex.execute({ ...fire, scheduledFor: new Date(now.getTime() + 1_500) }, stop.signal);
    expect(r).toMatchObject({ kind: 'later', afterMs: 1_500 });
    expect(s.log).toEqual([]);
  });

  describe('through a database blip', () => {
    it('keeps the answer through failing record writes: one call, one recorded outcome, one result', async () => {
      const { s, t, ex, retries, stop } = setup();
      s.failures.complete = 4;
      expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'executed', outcome: 'SUCCEEDED' });
      expect(t.calls).toHaveLength(1);
      expect(s.log).toEqual([
        'begin',
        'complete failed',
        'complete failed',
        'complete failed',
        'complete failed',
        // The retry says so: a try whose answer was lost may have committed (see completeRuns).
        'complete SUCCEEDED L1 retried',
        'result 1 SUCCEEDED',
      ]);
      expect(retries).toEqual(['record 1', 'record 2', 'record 3', 'record 4']);
    });

    it('renews the lease while the record is retried', async () => {
      const { s, t, ex, stop } = setup({ heartbeatMs: 40 });
      s.failures.complete = 4; // 100 + 200 + 400 + 800 ms of backoff
      expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'executed' });
      expect(t.calls).toHaveLength(1);
      const firstFail = s.log.indexOf('complete failed');
      const recorded = s.log.indexOf('complete SUCCEEDED L1 retried');
      const renewals = s.log.slice(firstFail, recorded).filter((l) => l === 'heartbeat');
      expect(renewals.length).toBeGreaterThanOrEqual(10);
      // No renewal after the outcome is recorded.
      const after = s.log.length;
      await new Promise((r) => setTimeout(r, 120));
      expect(s.log).toHaveLength(after);
    });

    it('an answered call is kept when the ledger is unreachable for longer than the lease: recorded, not called again', async () => {
      const { s, t, ex, stop } = setup({ leaseMs: 150, heartbeatMs: 30 });
      s.heartbeatResult = refused();
      s.failures.complete = 3; // 700 ms: the lease must have run out meanwhile
      expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'executed', outcome: 'SUCCEEDED' });
      expect(t.calls).toHaveLength(1);
      expect(s.log.filter((l) => !l.startsWith('heartbeat'))).toEqual([
        'begin',
        'complete failed',
        'complete failed',
        'complete failed',
        'complete SUCCEEDED L1 retried',
        'result 1 SUCCEEDED',
      ]);
    });

    it('a retried record fenced out (the lease was taken over) records and produces nothing', async () => {
      const { s, t, ex, stop } = setup();
      s.failures.complete = 1;
      s.completes = false;
      expect(await ex.execute(fire, stop.signal)).toEqual({ kind: 'lease-lost' });
      expect(t.calls).toHaveLength(1);
      expect(s.log).toEqual(['begin', 'complete failed', 'complete SUCCEEDED L1 retried']);
    });

    it('records a retry and retries its hand-off mark, producing the retry message once', async () => {
      const { s, t, ex, stop } = setup();
      t.answer = async () => ({ ok: false, httpStatus: 503, error: 'HTTP 503', retryable: true });
      s.failures.complete = 1;
      s.failures['handed-off'] = 2;
      expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'executed', outcome: 'RETRYING' });
      expect(s.log).toEqual([
        'begin',
        'complete failed',
        'complete RETRYING L1 next=2026-06-01T12:00:00.500Z retried',
        'retry attempt=2 at=2026-06-01T12:00:00.500Z',
        'handed-off failed',
        'handed-off failed',
        'handed-off RETRYING 1',
        'result 1 RETRYING',
      ]);
    });

    it('on stop while retrying the record: abandoned (not acknowledged), the lease given up, no second call', async () => {
      const { s, t, ex, stop } = setup();
      s.failures.complete = 1_000;
      const running = ex.execute(fire, stop.signal);
      await eventually(() => s.log.includes('complete failed'));
      stop.abort();
      expect(await running).toEqual({ kind: 'abandoned' });
      expect(t.calls).toHaveLength(1);
      expect(s.log.at(-1)).toBe('release');
      expect(getEventListeners(stop.signal, 'abort').length).toBeLessThanOrEqual(1);
    });

    it('gives the delivery back when the ledger stays unreachable past the retry budget', async () => {
      const { s, t, ex, stop } = setup({ ledgerRetryMs: 250 });
      s.failures.complete = 1_000;
      expect(await ex.execute(fire, stop.signal)).toMatchObject({
        kind: 'later',
        why: 'run ledger unreachable',
      });
      expect(t.calls).toHaveLength(1);
      expect(s.log.filter((l) => l === 'complete failed').length).toBeGreaterThanOrEqual(2);
    });

    it('does not retry an error that is not transient (a constraint violation): it is thrown', async () => {
      const { s, ex, retries, stop } = setup();
      s.failures.complete = 1;
      s.failWith = () =>
        Object.assign(new Error('duplicate key value violates unique constraint'), {
          code: '23505',
          severity: 'ERROR',
        });
      await expect(ex.execute(fire, stop.signal)).rejects.toThrow('duplicate key');
      expect(retries).toEqual([]);
    });

    it('retries beginRun with the same lease token, issued by this executor', async () => {
      const { s, t, ex, retries, stop } = setup();
      s.failures.begin = 2;
      expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'executed', outcome: 'SUCCEEDED' });
      expect(t.calls).toHaveLength(1);
      expect(retries).toEqual(['begin 1', 'begin 2']);
      const [first, ...rest] = s.beginTokens;
      expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(rest).toEqual([first, first]);
      // The next fire gets another lease token of the same issuer; another executor, another issuer.
      await ex.execute({ ...fire, fenceToken: 5, fireId: 'j:5' }, stop.signal);
      const next = s.beginTokens.at(-1)!;
      expect(next).not.toBe(first);
      expect(next.slice(0, 18)).toBe(first!.slice(0, 18));
      const other = setup();
      await other.ex.execute(fire, other.stop.signal);
      expect(other.s.beginTokens[0]!.slice(0, 18)).not.toBe(first!.slice(0, 18));
    });

    it('a second copy of a fire running here waits for the first, then begins: never for a lease', async () => {
      const { s, t, ex, stop } = setup();
      let answer: (o: AttemptOutcome) => void = () => undefined;
      t.answer = () => new Promise((resolve) => (answer = resolve));
      const final: RunStart = { action: 'skip', reason: 'ALREADY_FINAL', status: 'SUCCEEDED', run: null };
      s.starts = [s.start, final];
      const first = ex.execute(fire, stop.signal);
      const second = ex.execute(fire, stop.signal);
      await eventually(() => t.calls.length === 1);
      // The copy has not begun: beginning would take back the lease this executor is using.
      expect(s.log).toEqual(['begin']);
      answer({ ok: true, httpStatus: 200, error: null, retryable: false });
      await expect(first).resolves.toMatchObject({ kind: 'executed' });
      await expect(second).resolves.toEqual({ kind: 'duplicate', reason: 'ALREADY_FINAL' });
      expect(s.log).toEqual(['begin', 'complete SUCCEEDED L1', 'result 1 SUCCEEDED', 'begin']);
      expect(t.calls).toHaveLength(1);
    });

    it("a Kafka target's unleased record is retried with its token, never produced again", async () => {
      const { s, t, ex, stop } = setup();
      s.unleasedAllowed = true;
      s.failures['may-run-unleased'] = 1;
      s.failures['record-unleased'] = 2;
      const kafkaFire: FireEvent = {
        ...fire,
        target: { type: 'kafka', topic: 'orders', key: null, headers: {} },
      };
      expect(await ex.execute(kafkaFire, stop.signal)).toMatchObject({
        kind: 'executed',
        outcome: 'SUCCEEDED',
      });
      expect(t.calls).toHaveLength(1);
      expect(s.log).toEqual([
        'may-run-unleased failed',
        'may-run-unleased',
        'record-unleased failed',
        'record-unleased failed',
        'record-unleased 4 by=me retried',
        'result 1 SUCCEEDED',
      ]);
      const tokens = new Set(s.unleasedRuns.map((r) => r.leaseToken));
      expect(tokens.size).toBe(1);
      expect([...tokens][0]).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('a produced batch of Kafka targets is recorded by a retried insert, not produced again', async () => {
      const s = new (class extends Script {
        async recordUnleasedRuns(runs: readonly UnleasedRun[]): Promise<(RecordedRun | null)[]> {
          this.fail('record-unleased');
          this.log.push(
            `record ${runs.map((r) => r.fire.fenceToken).join(',')}${runs[0]!.retried ? ' retried' : ''}`,
          );
          return runs.map(() => LEDGER_TIMES);
        }
      })();
      s.unleasedAllowed = true;
      s.failures['record-unleased'] = 2;
      const t = new Target();
      const ex = new FireExecutor(s, t, t, s, {
        owner: 'me',
        runLeaseMs: 30_000,
        heartbeatMs: 10_000,
        runRetentionMs: 30 * 86_400_000,
        clock: { ...systemClock, now: () => now.getTime() },
      });
      const kafka = (n: number): FireEvent => ({
        ...fire,
        fenceToken: n,
        fireId: `j:${n}`,
        target: { type: 'kafka', topic: 'orders', key: null, headers: {} },
      });
      const reports = await Promise.all(
        ex.executeMany([kafka(1), kafka(2)], new AbortController().signal, [{}, {}]),
      );
      expect(reports.map((r) => r.kind)).toEqual(['executed', 'executed']);
      expect(t.calls.map((c) => c.fenceToken)).toEqual([1, 2]);
      expect(s.log.filter((l) => l.startsWith('record'))).toEqual([
        'record-unleased failed',
        'record-unleased failed',
        'record 1,2 retried',
      ]);
    });
  });

  describe('executeMany', () => {
    const kafka = (fenceToken: number, over: Partial<FireEvent> = {}): FireEvent => ({
      ...fire,
      fenceToken,
      fireId: `j:${fenceToken}`,
      target: { type: 'kafka', topic: 'orders', key: null, headers: {} },
      ...over,
    });

    /** The ledger and sink with their batch forms, answering per fence token. */
    class BatchScript extends Script {
      notAllowed = new Set<number>();
      recordedElsewhere = new Set<number>();
      async mayRunUnleasedMany(keys: readonly FireKey[]): Promise<boolean[]> {
        this.log.push(`check ${keys.map((k) => k.fenceToken).join(',')}`);
        return keys.map((k) => !this.notAllowed.has(k.fenceToken));
      }
      async recordUnleasedRuns(runs: readonly UnleasedRun[]): Promise<(RecordedRun | null)[]> {
        this.log.push(`record ${runs.map((r) => r.fire.fenceToken).join(',')}`);
        return runs.map((r) => (this.recordedElsewhere.has(r.fire.fenceToken) ? null : LEDGER_TIMES));
      }
      async publishResults(results: readonly FireResult[]): Promise<void> {
        this.log.push(`results ${results.map((r) => `${r.fenceToken}:${r.outcome}`).join(',')}`);
      }
    }

    /** A Kafka runner with its batch form; a fence token in `failing` fails its produce. */
    class BatchTarget extends Target {
      failing = new Set<number>();
      batches: number[][] = [];
      ack: Promise<void> = Promise.resolve();
      async runMany(calls: readonly { request: TargetRequest }[]): Promise<AttemptOutcome[]> {
        this.batches.push(calls.map((c) => c.request.fenceToken));
        await this.ack;
        return calls.map((c) =>
          this.failing.has(c.request.fenceToken)
            ? { ok: false, httpStatus: null, error: 'KAFKA: broker down', retryable: true }
            : { ok: true, httpStatus: null, error: null, retryable: false },
        );
      }
    }

    function batchSetup() {
      const s = new BatchScript();
      const t = new BatchTarget();
      const ex = new FireExecutor(s, t, t, s, {
        owner: 'me',
        runLeaseMs: 30_000,
        heartbeatMs: 10_000,
        runRetentionMs: 30 * 86_400_000,
        clock: { ...systemClock, now: () => now.getTime() },
        random: () => 0.5,
      });
      return { s, t, ex, stop: new AbortController() };
    }

    it("runs Kafka targets' first attempts together: one check, one produce batch, one insert, one result batch", async () => {
      const { s, t, ex, stop } = batchSetup();
      const fires = [kafka(1), kafka(2), kafka(3)];
      const reports = await Promise.all(ex.executeMany(fires, stop.signal, [{}, {}, {}]));
      expect(reports.map((r) => r.kind === 'executed' && r.outcome)).toEqual([
        'SUCCEEDED',
        'SUCCEEDED',
        'SUCCEEDED',
      ]);
      expect(t.batches).toEqual([[1, 2, 3]]);
      expect(t.calls).toEqual([]);
      expect(s.log).toEqual(['check 1,2,3', 'record 1,2,3', 'results 1:SUCCEEDED,2:SUCCEEDED,3:SUCCEEDED']);
    });

    it('hands on what the batch cannot finish: leased when a run exists, retried under a lease when its produce failed, duplicate when recorded elsewhere', async () => {
      const { s, t, ex, stop } = batchSetup();
      s.notAllowed.add(2);
      t.failing.add(3);
      s.recordedElsewhere.add(4);
      const reports = await Promise.all(
        ex.executeMany([kafka(1), kafka(2), kafka(3), kafka(4)], stop.signal, [{}, {}, {}, {}]),
      );
      expect(reports[0]).toMatchObject({ kind: 'executed', outcome: 'SUCCEEDED' });
      expect(reports[1]).toMatchObject({ kind: 'executed', outcome: 'SUCCEEDED' });
      expect(reports[2]).toMatchObject({ kind: 'executed', outcome: 'RETRYING' });
      expect(reports[3]).toEqual({ kind: 'duplicate', reason: 'RECORDED_ELSEWHERE' });
      // Each produced once: 2 on the leased way (one call of its own), 3 not again after failing.
      expect(t.batches).toEqual([[1, 3, 4]]);
      expect(t.calls.map((c) => c.fenceToken)).toEqual([2]);
      expect(s.log.slice(0, 3)).toEqual(['check 1,2,3,4', 'record 1,4', 'results 1:SUCCEEDED']);
      // Then 2 and 3 on the leased way, side by side: each records before it hands on.
      const leased = s.log.slice(3);
      expect([...leased].sort()).toEqual(
        [
          'begin',
          'begin',
          'complete SUCCEEDED L1',
          'result 1 SUCCEEDED',
          'complete RETRYING L1 next=2026-06-01T12:00:00.500Z',
          'retry attempt=2 at=2026-06-01T12:00:00.500Z',
          'handed-off RETRYING 1',
          'result 1 RETRYING',
        ].sort(),
      );
      const at = (l: string) => leased.findIndex((x) => x.startsWith(l));
      expect(at('complete RETRYING')).toBeLessThan(at('retry attempt=2'));
      expect(at('retry attempt=2')).toBeLessThan(at('handed-off'));
      expect(at('handed-off')).toBeLessThan(at('result 1 RETRYING'));
      expect(at('complete SUCCEEDED')).toBeLessThan(at('result 1 SUCCEEDED'));
    });

    it('runs webhooks, later attempts and fires ahead of their time one by one', async () => {
      const { s, t, ex, stop } = batchSetup();
      const reports = await Promise.all(
        ex.executeMany(
          [fire, kafka(2, { attempt: 2 }), kafka(3, { scheduledFor: new Date(now.getTime() + 1_000) })],
          stop.signal,
          [{}, {}, {}],
        ),
      );
      expect(reports.map((r) => r.kind)).toEqual(['executed', 'executed', 'later']);
      expect(t.batches).toEqual([]);
      expect(s.log.filter((l) => l.startsWith('check'))).toEqual([]);
    });

    it('runs a fire that is twice in the group once; the copy comes back later', async () => {
      const { t, ex, stop } = batchSetup();
      const reports = await Promise.all(
        ex.executeMany([kafka(1), kafka(1), kafka(2)], stop.signal, [{}, {}, {}]),
      );
      expect(reports[0]).toMatchObject({ kind: 'executed' });
      expect(reports[1]).toMatchObject({ kind: 'later', why: 'the same fire is running here' });
      expect(reports[2]).toMatchObject({ kind: 'executed' });
      expect(t.batches).toEqual([[1, 2]]);
    });

    it('on stop, stops waiting for the acks, records nothing and acknowledges none', async () => {
      const { s, t, ex, stop } = batchSetup();
      t.ack = new Promise(() => undefined); // the acks never come
      const running = Promise.all(ex.executeMany([kafka(1), kafka(2)], stop.signal, [{}, {}]));
      await new Promise((r) => setImmediate(r));
      stop.abort();
      expect(await running).toEqual([{ kind: 'abandoned' }, { kind: 'abandoned' }]);
      expect(s.log).toEqual(['check 1,2']);
      expect(getEventListeners(stop.signal, 'abort').length).toBeLessThanOrEqual(1);
    });
  });
});

describe("the job's result_events policy", () => {
  const failing = async (): Promise<AttemptOutcome> => ({
    ok: false,
    httpStatus: 503,
    error: 'HTTP 503',
    retryable: true,
  });
  const results = (s: Script) => s.log.filter((l) => l.startsWith('result'));

  it('FAILURES: a leased attempt that will retry is published, its successful retry is not', async () => {
    const { s, t, ex, stop } = setup();
    s.start = { ...s.start, resultEvents: 'FAILURES' } as RunStart;
    t.answer = failing;
    expect(await ex.execute(fire, stop.signal)).toMatchObject({ kind: 'executed', outcome: 'RETRYING' });
    expect(s.log).toContain('retry attempt=2 at=2026-06-01T12:00:00.500Z');
    expect(results(s)).toEqual(['result 1 RETRYING']);

    s.log.length = 0;
    s.start = { ...s.start, attempt: 2 } as RunStart;
    t.answer = async () => ({ ok: true, httpStatus: 200, error: null, retryable: false });
    // Executed and reported as ever (metrics, the ledger): only the result event is left out.
    expect(await ex.execute({ ...fire, attempt: 2 }, stop.signal)).toMatchObject({
      kind: 'executed',
      outcome: 'SUCCEEDED',
      result: expect.objectContaining({ outcome: 'SUCCEEDED' }),
    });
    expect(s.log).toEqual(['begin', 'complete SUCCEEDED L1']);
  });

  it('NONE: no result at all, while retries and dead letters still go out', async () => {
    const { s, t, ex, stop } = setup();
    s.start = { ...s.start, resultEvents: 'NONE' } as RunStart;
    t.answer = failing;
    await ex.execute(fire, stop.signal);
    s.start = { ...s.start, attempt: 3 } as RunStart;
    await ex.execute({ ...fire, attempt: 3 }, stop.signal);
    expect(s.log).toContain('retry attempt=2 at=2026-06-01T12:00:00.500Z');
    expect(s.log).toContain('dlq RETRIES_EXHAUSTED attempt=3');
    expect(results(s)).toEqual([]);
  });

  it('ALL, and a start that carries none (a deleted job), publish every result', async () => {
    const { s, t, ex, stop } = setup();
    s.start = { ...s.start, resultEvents: 'ALL' } as RunStart;
    await ex.execute(fire, stop.signal);
    s.start = { action: 'execute', leaseToken: 'L1', takenOver: false, attempt: 1, retryPolicy: null };
    await ex.execute({ ...fire, fenceToken: 5, fireId: 'j:5' }, stop.signal);
    expect(t.calls).toHaveLength(1);
    expect(results(s)).toEqual(['result 1 SUCCEEDED', 'result 1 DEAD_LETTERED']);
  });

  it("a Kafka target's unleased first attempt follows the policy its record read", async () => {
    const { s, t, ex, stop } = setup();
    s.unleasedAllowed = true;
    const byToken: Record<number, RecordedRun> = {
      1: { ...LEDGER_TIMES, resultEvents: 'FAILURES' },
      2: { ...LEDGER_TIMES, resultEvents: 'NONE' },
      3: LEDGER_TIMES, // ALL, or the job deleted since the check
    };
    s.recordUnleasedRun = async (r: UnleasedRun) => byToken[r.fire.fenceToken] ?? null;
    const kafka = (fenceToken: number): FireEvent => ({
      ...fire,
      fenceToken,
      fireId: `j:${fenceToken}`,
      target: { type: 'kafka', topic: 'orders', key: null, headers: {} },
    });
    const reports = await Promise.all([1, 2, 3].map((n) => ex.execute(kafka(n), stop.signal)));
    expect(reports.map((r) => r.kind)).toEqual(['executed', 'executed', 'executed']);
    expect(t.calls).toHaveLength(3);
    expect(results(s)).toEqual(['result 1 SUCCEEDED']);
  });

  it('a re-delivery re-publishes a recorded result only when the policy wants it', async () => {
    const { s, ex, stop } = setup();
    const run = (status: 'SUCCEEDED' | 'DEAD_LETTERED'): RunState => ({
      jobId: 'j',
      fenceToken: 4,
      tenantId: 't',
      fireId: 'j:4',
      scheduledFor: now,
      nominalTime: now,
      attempt: 1,
      status,
      leaseOwner: 'dead',
      leaseExpiresAt: null,
      startedAt: now,
      finishedAt: now,
      httpStatus: status === 'SUCCEEDED' ? 200 : 400,
      error: status === 'SUCCEEDED' ? null : 'HTTP 400',
      nextAttemptAt: null,
      handedOffAt: now,
      leaseRemainingMs: 0,
      deadLetterReason: status === 'SUCCEEDED' ? null : 'NON_RETRYABLE',
    });
    const redeliver = async (status: 'SUCCEEDED' | 'DEAD_LETTERED', resultEvents?: 'FAILURES' | 'NONE') => {
      s.start = {
        action: 'skip',
        reason: 'ALREADY_FINAL',
        status,
        run: run(status),
        ...(resultEvents ? { resultEvents } : {}),
      };
      expect(await ex.execute(fire, stop.signal)).toEqual({ kind: 'duplicate', reason: 'ALREADY_FINAL' });
    };
    await redeliver('SUCCEEDED', 'FAILURES');
    await redeliver('DEAD_LETTERED', 'FAILURES');
    await redeliver('DEAD_LETTERED', 'NONE');
    await redeliver('SUCCEEDED');
    expect(results(s)).toEqual(['result 1 DEAD_LETTERED', 'result 1 SUCCEEDED']);
  });
});
