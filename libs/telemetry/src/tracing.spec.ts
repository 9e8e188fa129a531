import { context, propagation, trace, type SpanContext } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import {
  bindTraceContext,
  boundTraceContext,
  extractTraceContext,
  injectTraceContext,
  spanContextOf,
  traceCarrier,
} from './propagation';
import {
  inSpan,
  occurrenceCarrier,
  occurrenceParent,
  spanCarrier,
  startClaimSpan,
  startFireSpan,
  tracer,
} from './tracing';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const fire = {
  jobId: 'job-1',
  tenantId: 'acme',
  fenceToken: 1,
  fireId: 'job-1:1',
  scheduledFor: new Date('2026-12-01T09:00:00.000Z'),
  attempt: 1,
};

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
});

afterAll(() => {
  trace.disable();
  propagation.disable();
  context.disable();
});

beforeEach(() => exporter.reset());

describe('W3C context in string maps', () => {
  it('round-trips a span context through headers', () => {
    const span = tracer().startSpan('x');
    const headers = injectTraceContext<Record<string, string>>(
      { other: 'kept' },
      trace.setSpan(context.active(), span),
    );
    expect(headers.other).toBe('kept');
    expect(headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(spanContextOf(headers)).toMatchObject({
      traceId: span.spanContext().traceId,
      spanId: span.spanContext().spanId,
      isRemote: true,
    });
    span.end();
  });

  it('has no carrier outside a span, and no context from garbage', () => {
    expect(traceCarrier()).toBeUndefined();
    expect(spanContextOf({ traceparent: 'nonsense' })).toBeUndefined();
    expect(spanContextOf(undefined)).toBeUndefined();
    expect(trace.getSpanContext(extractTraceContext({}))).toBeUndefined();
  });

  it('reads Buffer values (gRPC metadata, Kafka headers) as well as strings', () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(spanContextOf({ traceparent: Buffer.from(tp) })?.spanId).toBe('b7ad6b7169203331');
  });

  it('carries a context with an object for code that knows nothing of tracing', () => {
    const event = { ...fire };
    expect(boundTraceContext(event)).toBeUndefined();
    bindTraceContext(event, { traceparent: 'x' });
    expect(boundTraceContext(event)).toEqual({ traceparent: 'x' });
    expect(boundTraceContext({ ...event })).toBeUndefined();
  });
});

describe('occurrence traces', () => {
  const request = (): { origin: { traceparent: string; fence_token: number }; sc: SpanContext } => {
    const span = tracer().startSpan('mutate jobs');
    span.end();
    return {
      origin: { traceparent: spanCarrier(span)!.traceparent!, fence_token: 0 },
      sc: span.spanContext(),
    };
  };

  it("puts the first occurrence after a request in the request's trace", () => {
    const { origin, sc } = request();
    const where = occurrenceParent(origin, 1);
    const span = startFireSpan(fire, 'SCHEDULE', { parent: where.parent, links: where.links, shard: 3 });
    span.end();
    const done = exporter.getFinishedSpans().find((s) => s.name === 'tickwork.fire')!;
    expect(done.spanContext().traceId).toBe(sc.traceId);
    expect(done.parentSpanContext?.spanId).toBe(sc.spanId);
    expect(done.links).toEqual([]);
    expect(done.attributes).toMatchObject({
      'tickwork.job_id': 'job-1',
      'tickwork.tenant_id': 'acme',
      'tickwork.fence_token': 1,
      'tickwork.scheduled_for': '2026-12-01T09:00:00.000Z',
      'tickwork.trigger': 'SCHEDULE',
      'tickwork.shard': 3,
    });
  });

  it('starts a new trace for later occurrences, linked to the request', () => {
    const { origin, sc } = request();
    const where = occurrenceParent(origin, 2);
    const span = startFireSpan({ ...fire, fenceToken: 2 }, 'SCHEDULE', where);
    span.end();
    const done = exporter.getFinishedSpans().find((s) => s.name === 'tickwork.fire')!;
    expect(done.spanContext().traceId).not.toBe(sc.traceId);
    expect(done.parentSpanContext).toBeUndefined();
    expect(done.links).toEqual([
      {
        context: expect.objectContaining({ spanId: sc.spanId }),
        attributes: { 'tickwork.link.role': 'job-request' },
      },
    ]);
  });

  it('starts a trace of its own for a job that has no stored context', () => {
    expect(occurrenceParent(null, 1).links).toEqual([]);
    const span = startFireSpan(fire, 'SCHEDULE', occurrenceParent(undefined, 1));
    expect(span.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    span.end();
  });

  it('carries, without spans, the context a no-op fire span would pass on', () => {
    const { origin } = request();
    const withState = { ...origin, tracestate: 'vendor=x' };
    // The first occurrence after the request continues its trace (the request's own context)...
    expect(occurrenceCarrier(withState, 1)).toEqual({
      traceparent: origin.traceparent,
      tracestate: 'vendor=x',
    });
    expect(occurrenceCarrier(origin, 1)).toEqual({ traceparent: origin.traceparent });
    // ...later ones, and jobs with no (or an unreadable) stored context, have none to pass on.
    expect(occurrenceCarrier(origin, 2)).toBeUndefined();
    expect(occurrenceCarrier(null, 1)).toBeUndefined();
    expect(occurrenceCarrier({ traceparent: 'garbage', fence_token: 0 }, 1)).toBeUndefined();
    // Exactly what the no-op tracer (no provider registered) propagates for the same fire.
    trace.disable();
    try {
      for (const [o, token] of [
        [withState, 1],
        [origin, 2],
      ] as const) {
        const where = occurrenceParent(o, token);
        const span = startFireSpan({ ...fire, fenceToken: token }, 'SCHEDULE', where);
        expect(span.isRecording()).toBe(false);
        expect(spanCarrier(span)).toEqual(occurrenceCarrier(o, token));
      }
    } finally {
      trace.setGlobalTracerProvider(provider);
    }
  });

  it('makes the claim span a root with database attributes, begun when the claim began', () => {
    const startedAt = Date.now() - 50;
    const claim = startClaimSpan(startedAt, { fires: 2, skipped: 1, shards: 4 });
    claim.end();
    const done = exporter.getFinishedSpans()[0]!;
    expect(done.name).toBe('claim jobs');
    expect(done.parentSpanContext).toBeUndefined();
    expect(done.attributes).toMatchObject({
      'db.system.name': 'postgresql',
      'db.operation.name': 'claim',
      'tickwork.claim.fires': 2,
      'tickwork.claim.skipped': 1,
    });
    expect(done.startTime[0] * 1000 + done.startTime[1] / 1e6).toBeCloseTo(startedAt, -1);
  });

  it('inSpan records a failure and rethrows it', async () => {
    await expect(
      inSpan('work', {}, async () => {
        throw new TypeError('no');
      }),
    ).rejects.toThrow('no');
    const done = exporter.getFinishedSpans()[0]!;
    expect(done.status).toMatchObject({ code: 2, message: 'no' });
    expect(done.attributes['error.type']).toBe('TypeError');
  });

  it('inSpan makes its span the active one for the work inside', async () => {
    let inner: string | undefined;
    await inSpan('outer', {}, async (span) => {
      await Promise.resolve();
      inner = traceCarrier()?.traceparent;
      expect(inner).toContain(span.spanContext().spanId);
    });
    expect(inner).toBeDefined();
  });
});
