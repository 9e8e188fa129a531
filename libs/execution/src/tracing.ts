/**
 * Tracing for the executor, as decorators over its seams, so the execution logic stays as it is:
 * - every delivery is processed in a `process <topic>` consumer span whose parent is the context
 *   in the message headers (the scheduler's send, or the executor's own retry send): the fire,
 *   its attempts, retries and dead letter are one trace;
 * - ledger calls are database spans (heartbeats are counted, not traced: there are many);
 * - each target call is a client span (HTTP, or a Kafka send) whose context goes to the target
 *   in `traceparent`, so a receiver can continue the trace.
 */
import type { FireEvent, FireKey, KafkaTarget, WebhookTarget } from '@tickwork/domain';
import type { InboundMessage } from '@tickwork/messaging';
import type { RecordedRun, RunCompletion, RunStart, UnleasedRun } from '@tickwork/domain';
import {
  Attr,
  dbAttributes,
  extractTraceContext,
  fireAttributes,
  inSpan,
  injectTraceContext,
  kafkaAttributes,
  SpanKind,
  spansRecorded,
  type Span,
} from '@tickwork/telemetry';
import type { AttemptOutcome, TargetCall, TargetRequest, TargetRunner } from './attempt';
import type { RunLedger } from './run-ledger';
import type { MessageProcessor, ProcessResult } from './partition-flow';

/** Each delivery in a consumer span, child of the producer context its headers carry. */
export class TracedProcessor implements MessageProcessor {
  readonly holdUntil?: (message: InboundMessage) => number | undefined;

  constructor(
    private readonly inner: MessageProcessor,
    private readonly groupOf: (topic: string) => string,
  ) {
    if (inner.holdUntil) this.holdUntil = (m) => inner.holdUntil!(m);
  }

  /** Together when spans are not recorded; with spans, each delivery in its own consumer span. */
  processMany(messages: readonly InboundMessage[], signal: AbortSignal): Promise<ProcessResult>[] {
    if (spansRecorded() || !this.inner.processMany) return messages.map((m) => this.process(m, signal));
    return this.inner.processMany(messages, signal);
  }

  process(message: InboundMessage, signal: AbortSignal): Promise<ProcessResult> {
    // Nothing recorded: the fire carries the trace of its headers on by itself (FireProcessor).
    if (!spansRecorded()) return this.inner.process(message, signal);
    const attempt = Number(message.headers['tickwork-attempt']);
    return inSpan(
      `process ${message.topic}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: kafkaAttributes('process', message.topic, {
          [Attr.MessagingConsumerGroup]: this.groupOf(message.topic),
          [Attr.MessagingPartition]: String(message.partition),
          [Attr.MessagingKafkaOffset]: Number(message.offset),
          ...(message.key ? { [Attr.MessagingKafkaKey]: message.key.toString('utf8') } : {}),
          ...(message.headers['tickwork-fire-id']
            ? { [Attr.FireId]: message.headers['tickwork-fire-id'] }
            : {}),
          ...(Number.isInteger(attempt) ? { [Attr.Attempt]: attempt } : {}),
        }),
      },
      async (span) => {
        const result = await this.inner.process(message, signal);
        span.setAttribute(Attr.Outcome, result.kind);
        return result;
      },
      extractTraceContext(message.headers),
    );
  }
}

/** What the ledger reports besides spans: lease heartbeats, renewed or lost. */
export interface LedgerObserver {
  onHeartbeat?(renewed: boolean): void;
}

/** The run ledger with a database span per call. */
export class TracedLedger implements RunLedger {
  constructor(
    private readonly inner: RunLedger,
    private readonly observer: LedgerObserver = {},
  ) {}

  beginRun(fire: FireEvent, owner: string, leaseMs: number, leaseToken?: string): Promise<RunStart> {
    if (!spansRecorded()) return this.inner.beginRun(fire, owner, leaseMs, leaseToken);
    return inSpan(
      'begin job_runs',
      {
        kind: SpanKind.CLIENT,
        attributes: dbAttributes('begin', 'job_runs', fireAttributes(fire)),
      },
      async (span) => {
        const start = await this.inner.beginRun(fire, owner, leaseMs, leaseToken);
        span.setAttribute(Attr.Outcome, start.action === 'skip' ? `skip:${start.reason}` : start.action);
        return start;
      },
    );
  }

  async heartbeat(key: FireKey, leaseToken: string, leaseMs: number): Promise<boolean> {
    const held = await this.inner.heartbeat(key, leaseToken, leaseMs);
    this.observer.onHeartbeat?.(held);
    return held;
  }

  completeRun(key: FireKey, leaseToken: string, outcome: RunCompletion): Promise<RecordedRun | null> {
    if (!spansRecorded()) return this.complete(key, leaseToken, outcome);
    return inSpan(
      'complete job_runs',
      {
        kind: SpanKind.CLIENT,
        attributes: dbAttributes('complete', 'job_runs', keyAttributes(key)),
      },
      async (span) => {
        const done = await this.complete(key, leaseToken, outcome);
        span.setAttribute(Attr.Outcome, done ? outcome.status : 'LEASE_LOST');
        return done;
      },
    );
  }

  private async complete(
    key: FireKey,
    leaseToken: string,
    outcome: RunCompletion,
  ): Promise<RecordedRun | null> {
    const done = await this.inner.completeRun(key, leaseToken, outcome);
    // Recording under a lease that was taken over is the other way a lease is found lost.
    if (!done) this.observer.onHeartbeat?.(false);
    return done;
  }

  markHandedOff(key: FireKey, status: 'RETRYING' | 'DEAD_LETTERED', attempt: number): Promise<void> {
    if (!spansRecorded()) return this.inner.markHandedOff(key, status, attempt);
    return inSpan(
      'hand-off job_runs',
      {
        kind: SpanKind.CLIENT,
        attributes: dbAttributes('hand-off', 'job_runs', keyAttributes(key)),
      },
      () => this.inner.markHandedOff(key, status, attempt),
    );
  }

  mayRunUnleased(key: FireKey): Promise<boolean> {
    if (!spansRecorded()) return this.inner.mayRunUnleased(key);
    return inSpan(
      'check job_runs',
      { kind: SpanKind.CLIENT, attributes: dbAttributes('check', 'job_runs', keyAttributes(key)) },
      async (span) => {
        const allowed = await this.inner.mayRunUnleased(key);
        span.setAttribute(Attr.Outcome, allowed ? 'unleased' : 'leased');
        return allowed;
      },
    );
  }

  /** Batch check when spans are not recorded; with spans, one traced check per fire. */
  mayRunUnleasedMany(keys: readonly FireKey[]): Promise<boolean[]> {
    if (spansRecorded() || !this.inner.mayRunUnleasedMany)
      return Promise.all(keys.map((k) => this.mayRunUnleased(k)));
    return this.inner.mayRunUnleasedMany(keys);
  }

  /** Batch record when spans are not recorded; with spans, one traced record per run. */
  recordUnleasedRuns(runs: readonly UnleasedRun[]): Promise<(RecordedRun | null)[]> {
    if (spansRecorded() || !this.inner.recordUnleasedRuns)
      return Promise.all(runs.map((r) => this.recordUnleasedRun(r)));
    return this.inner.recordUnleasedRuns(runs);
  }

  recordUnleasedRun(run: UnleasedRun): Promise<RecordedRun | null> {
    if (!spansRecorded()) return this.inner.recordUnleasedRun(run);
    return inSpan(
      'record job_runs',
      { kind: SpanKind.CLIENT, attributes: dbAttributes('record', 'job_runs', fireAttributes(run.fire)) },
      async (span) => {
        const recorded = await this.inner.recordUnleasedRun(run);
        span.setAttribute(Attr.Outcome, recorded ? 'SUCCEEDED' : 'RECORDED_ELSEWHERE');
        return recorded;
      },
    );
  }

  isUnavailable(error: unknown): boolean {
    return this.inner.isUnavailable(error);
  }

  releaseRun(key: FireKey, leaseToken: string): Promise<void> {
    if (!spansRecorded()) return this.inner.releaseRun(key, leaseToken);
    return inSpan(
      'release job_runs',
      {
        kind: SpanKind.CLIENT,
        attributes: dbAttributes('release', 'job_runs', keyAttributes(key)),
      },
      () => this.inner.releaseRun(key, leaseToken),
    );
  }
}

/** A bounded name for how a target call ended (a metric label and a span attribute). */
export function callOutcome(o: AttemptOutcome): string {
  if (o.ok) return 'ok';
  if (o.aborted) return 'aborted';
  if (o.refused) return 'refused';
  if (o.httpStatus !== null) return `http_${Math.floor(o.httpStatus / 100)}xx`;
  const kind = /^([A-Z_]+):/.exec(o.error ?? '')?.[1] ?? '';
  return CALL_ERRORS.has(kind) ? kind.toLowerCase() : 'error';
}

/** Error prefixes of the target runners that name a kind of failure worth its own label. */
const CALL_ERRORS: ReadonlySet<string> = new Set(['TIMEOUT', 'NETWORK', 'KAFKA', 'INVALID_TARGET']);

/** Told about every target call: its type, outcome (callOutcome) and duration. */
export type TargetCallObserver = (type: 'webhook' | 'kafka', outcome: string, durationMs: number) => void;

/** A webhook runner whose calls are HTTP client spans, with their context sent in `traceparent`. */
export class TracedWebhookRunner implements TargetRunner<WebhookTarget> {
  constructor(
    private readonly inner: TargetRunner<WebhookTarget>,
    private readonly observe?: TargetCallObserver,
  ) {}

  run(target: WebhookTarget, req: TargetRequest, signal: AbortSignal): Promise<AttemptOutcome> {
    if (!spansRecorded()) return observed(this.inner, 'webhook', target, req, signal, this.observe);
    const url = safeUrl(target.url);
    return inSpan(
      target.method,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [Attr.HttpMethod]: target.method,
          ...(url
            ? {
                [Attr.UrlFull]: url.full,
                [Attr.ServerAddress]: url.host,
                [Attr.ServerPort]: url.port,
              }
            : {}),
          ...requestAttributes(req),
        },
      },
      async (span) => {
        const started = performance.now();
        const outcome = await this.inner.run(
          target,
          { ...req, traceHeaders: injectTraceContext({}) },
          signal,
        );
        if (outcome.httpStatus !== null) span.setAttribute(Attr.HttpStatus, outcome.httpStatus);
        endCall(span, outcome);
        this.observe?.('webhook', callOutcome(outcome), performance.now() - started);
        return outcome;
      },
    );
  }
}

/** A Kafka target runner whose sends are producer spans, with their context in the message headers. */
export class TracedKafkaRunner implements TargetRunner<KafkaTarget> {
  constructor(
    private readonly inner: TargetRunner<KafkaTarget>,
    private readonly observe?: TargetCallObserver,
  ) {}

  run(target: KafkaTarget, req: TargetRequest, signal?: AbortSignal): Promise<AttemptOutcome> {
    if (!spansRecorded()) return observed(this.inner, 'kafka', target, req, signal, this.observe);
    return inSpan(
      `send ${target.topic}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: kafkaAttributes('send', target.topic, requestAttributes(req)),
      },
      async (span) => {
        const started = performance.now();
        const outcome = await this.inner.run(
          target,
          { ...req, traceHeaders: injectTraceContext({}) },
          signal,
        );
        endCall(span, outcome);
        this.observe?.('kafka', callOutcome(outcome), performance.now() - started);
        return outcome;
      },
    );
  }

  /** Several sends together when spans are not recorded; with spans, each its own (see run). */
  async runMany(calls: readonly TargetCall<KafkaTarget>[]): Promise<AttemptOutcome[]> {
    if (spansRecorded() || !this.inner.runMany)
      return Promise.all(calls.map((c) => this.run(c.target, c.request)));
    const started = performance.now();
    const active = injectTraceContext({});
    const outcomes = await this.inner.runMany(
      calls.map((c) =>
        c.request.traceHeaders ? c : { ...c, request: { ...c.request, traceHeaders: active } },
      ),
    );
    const ms = performance.now() - started;
    if (this.observe) for (const o of outcomes) this.observe('kafka', callOutcome(o), ms);
    return outcomes;
  }
}

/** A target call without a span of its own (spans not recorded): the fire's trace, else the active one, goes to the target. */
async function observed<T>(
  inner: TargetRunner<T>,
  type: 'webhook' | 'kafka',
  target: T,
  req: TargetRequest,
  signal: AbortSignal | undefined,
  observe: TargetCallObserver | undefined,
): Promise<AttemptOutcome> {
  const started = performance.now();
  const outcome = await inner.run(
    target,
    { ...req, traceHeaders: req.traceHeaders ?? injectTraceContext({}) },
    signal,
  );
  observe?.(type, callOutcome(outcome), performance.now() - started);
  return outcome;
}

function requestAttributes(req: TargetRequest): Record<string, string | number> {
  return {
    [Attr.JobId]: req.jobId,
    [Attr.TenantId]: req.tenantId,
    [Attr.FenceToken]: req.fenceToken,
    [Attr.FireId]: req.fireId,
    [Attr.ScheduledFor]: req.scheduledFor.toISOString(),
    [Attr.Attempt]: req.attempt,
  };
}

function keyAttributes(key: FireKey): Record<string, string | number> {
  return { [Attr.JobId]: key.jobId, [Attr.FenceToken]: key.fenceToken };
}

/** A failed call marks its span failed with a bounded error type (the outcome, never a body). */
function endCall(span: Span, outcome: AttemptOutcome): void {
  span.setAttribute(Attr.Outcome, callOutcome(outcome));
  if (outcome.ok) return;
  span.setAttribute(Attr.ErrorType, callOutcome(outcome));
  span.setStatus({ code: 2, message: outcome.error ?? 'failed' });
}

/** The URL without credentials, query or fragment (they may hold secrets), and its host and port. */
function safeUrl(raw: string): { full: string; host: string; port: number } | undefined {
  try {
    const u = new URL(raw);
    const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    return { full: `${u.protocol}//${u.host}${u.pathname}`, host: u.hostname, port };
  } catch {
    return undefined;
  }
}
