import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { FireEvent, WebhookTarget } from '@tickwork/domain';
import { setSpansRecorded } from '@tickwork/telemetry';
import type { AttemptOutcome, TargetRequest, TargetRunner } from './attempt';
import type { RunLedger } from './run-ledger';
import { callOutcome, TracedLedger, TracedWebhookRunner } from './tracing';

const exporter = new InMemorySpanExporter();

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
});

afterAll(() => {
  trace.disable();
  propagation.disable();
  context.disable();
});

const fail = (o: Partial<AttemptOutcome>): AttemptOutcome => ({
  ok: false,
  httpStatus: null,
  error: null,
  retryable: true,
  ...o,
});

describe('target call tracing', () => {
  it('names how a call ended with a bounded set of labels', () => {
    expect(callOutcome({ ok: true, httpStatus: 204, error: null, retryable: false })).toBe('ok');
    expect(callOutcome(fail({ httpStatus: 503, error: 'HTTP 503' }))).toBe('http_5xx');
    expect(callOutcome(fail({ httpStatus: 404, error: 'HTTP 404' }))).toBe('http_4xx');
    expect(callOutcome(fail({ error: 'TIMEOUT: no complete answer within 10 ms' }))).toBe('timeout');
    expect(callOutcome(fail({ error: 'NETWORK: ECONNREFUSED connect' }))).toBe('network');
    expect(callOutcome(fail({ error: 'ABORTED: …', aborted: true }))).toBe('aborted');
    expect(callOutcome(fail({ error: 'refused', refused: true, retryable: false }))).toBe('refused');
    expect(callOutcome(fail({ error: 'something else https://x/?token=secret' }))).toBe('error');
  });

  it('makes each webhook call a client span and sends its context to the target', async () => {
    let seen: TargetRequest | undefined;
    const inner: TargetRunner<WebhookTarget> = {
      run: async (_t, req) => {
        seen = req;
        return fail({ httpStatus: 502, error: 'HTTP 502' });
      },
    };
    const observed: [string, string][] = [];
    const runner = new TracedWebhookRunner(inner, (type, outcome) => observed.push([type, outcome]));
    const target = {
      type: 'webhook',
      url: 'https://user:pw@hooks.example.com:8443/in?token=secret#x',
      method: 'POST',
      headers: {},
      timeoutMs: 1_000,
      successStatus: { min: 200, max: 299 },
    } as WebhookTarget;
    await runner.run(
      target,
      {
        jobId: 'j',
        tenantId: 'acme',
        fenceToken: 4,
        fireId: 'j:4',
        scheduledFor: new Date(0),
        attempt: 2,
        body: '{}',
      },
      new AbortController().signal,
    );
    const span = exporter.getFinishedSpans()[0]!;
    expect(span.name).toBe('POST');
    expect(span.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 502,
      'url.full': 'https://hooks.example.com:8443/in',
      'server.address': 'hooks.example.com',
      'server.port': 8443,
      'tickwork.job_id': 'j',
      'tickwork.fence_token': 4,
      'tickwork.attempt': 2,
      'error.type': 'http_5xx',
    });
    expect(span.status.code).toBe(2);
    expect(seen?.traceHeaders?.traceparent).toBe(
      `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`,
    );
    expect(observed).toEqual([['webhook', 'http_5xx']]);
  });
});

describe('run ledger tracing', () => {
  it('makes the unleased check and record client spans of job_runs, with how they went', async () => {
    exporter.reset();
    const fire: FireEvent = {
      jobId: 'j',
      tenantId: 'acme',
      fenceToken: 7,
      fireId: 'j:7',
      scheduledFor: new Date(0),
      nominalTime: new Date(0),
      attempt: 1,
      target: { type: 'kafka', topic: 'orders', key: null, headers: {} },
      payload: null,
    };
    const unused = () => Promise.reject(new Error('not used here'));
    const inner: RunLedger = {
      isUnavailable: () => false,
      beginRun: unused,
      heartbeat: unused,
      completeRun: unused,
      markHandedOff: unused,
      releaseRun: unused,
      mayRunUnleased: async (key) => key.fenceToken === 7,
      recordUnleasedRun: async () => null,
    };
    const ledger = new TracedLedger(inner);
    expect(await ledger.mayRunUnleased(fire)).toBe(true);
    expect(await ledger.recordUnleasedRun({ fire, owner: 'me', durationMs: 3, httpStatus: null })).toBeNull();
    const spans = exporter.getFinishedSpans();
    expect(spans.map((x) => [x.name, x.attributes['tickwork.outcome']])).toEqual([
      ['check job_runs', 'unleased'],
      ['record job_runs', 'RECORDED_ELSEWHERE'],
    ]);
    expect(spans[1]!.attributes).toMatchObject({
      'db.collection.name': 'job_runs',
      'tickwork.fence_token': 7,
    });
  });
});

describe('spans not recorded (no trace exporter)', () => {
  afterEach(() => setSpansRecorded(true));

  it('makes no span of its own for a target call, yet sends the active context and reports the call', async () => {
    setSpansRecorded(false);
    exporter.reset();
    let seen: TargetRequest | undefined;
    const inner: TargetRunner<WebhookTarget> = {
      run: async (_t, req) => {
        seen = req;
        return { ok: true, httpStatus: 204, error: null, retryable: false };
      },
    };
    const observed: [string, string][] = [];
    const runner = new TracedWebhookRunner(inner, (type, outcome) => observed.push([type, outcome]));
    const parent = trace.getTracer('test').startSpan('delivery');
    await context.with(trace.setSpan(context.active(), parent), () =>
      runner.run(
        {
          type: 'webhook',
          url: 'https://hooks.example.com/in',
          method: 'POST',
          headers: {},
          timeoutMs: 1_000,
          successStatus: { min: 200, max: 299 },
        },
        {
          jobId: 'j',
          tenantId: 'acme',
          fenceToken: 1,
          fireId: 'j:1',
          scheduledFor: new Date(0),
          attempt: 1,
          body: '{}',
        },
        new AbortController().signal,
      ),
    );
    parent.end();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['delivery']);
    expect(seen?.traceHeaders?.traceparent).toBe(
      `00-${parent.spanContext().traceId}-${parent.spanContext().spanId}-01`,
    );
    expect(observed).toEqual([['webhook', 'ok']]);
  });
});
