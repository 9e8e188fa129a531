/**
 * Span helpers shared by the apps and libs. With no exporter configured the global tracer is the
 * no-op one: these calls then cost an object allocation and still pass a remote parent through.
 */
import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type SpanOptions,
  type Tracer,
} from '@opentelemetry/api';
import { Attr } from './attributes';
import { extractTraceContext, spanContextOf, traceCarrier, type TraceCarrier } from './propagation';

export { SpanKind };
export type { Span, SpanContext, Context };

const TRACER_NAME = 'tickwork';

let recorded = true;

/**
 * Declares whether spans are recorded (a trace exporter is configured); apps set it at start-up.
 * When they are not, every span is a no-op, yet building one per fire (attributes, a context, its
 * headers) costs a measurable share of a busy scheduler or executor. Hot paths then hand the trace
 * context on as it came, which is exactly what a no-op span would have propagated.
 */
export function setSpansRecorded(on: boolean): void {
  recorded = on;
}

/** Whether spans are recorded (see setSpansRecorded; true until an app says otherwise). */
export function spansRecorded(): boolean {
  return recorded;
}

/** Tickwork's tracer (a proxy: it follows the provider registered by startTelemetry). */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** Marks a span failed with the error's type and message (never its payload). */
export function recordFailure(span: Span, error: unknown): void {
  const e = error instanceof Error ? error : new Error(String(error));
  span.recordException(e);
  span.setAttribute(Attr.ErrorType, e.name || 'Error');
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/** Runs `work` in a new active span (child of `parent`, default the active context) and ends it. */
export async function inSpan<T>(
  name: string,
  options: SpanOptions,
  work: (span: Span) => Promise<T>,
  parent: Context = context.active(),
): Promise<T> {
  return tracer().startActiveSpan(name, options, parent, async (span) => {
    try {
      return await work(span);
    } catch (e) {
      recordFailure(span, e);
      throw e;
    } finally {
      span.end();
    }
  });
}

/** The identity of one occurrence, structurally the domain's FireEvent. */
export interface FireIdentity {
  readonly jobId: string;
  readonly tenantId: string;
  readonly fenceToken: number;
  readonly fireId: string;
  readonly scheduledFor: Date;
  readonly attempt: number;
}

/** The tickwork.* attributes of a fire. */
export function fireAttributes(f: FireIdentity): Attributes {
  return {
    [Attr.JobId]: f.jobId,
    [Attr.TenantId]: f.tenantId,
    [Attr.FenceToken]: f.fenceToken,
    [Attr.FireId]: f.fireId,
    [Attr.ScheduledFor]: f.scheduledFor.toISOString(),
    [Attr.Attempt]: f.attempt,
  };
}

/** Database span attributes (PostgreSQL). */
export function dbAttributes(operation: string, collection: string, extra: Attributes = {}): Attributes {
  return {
    [Attr.DbSystem]: 'postgresql',
    [Attr.DbOperation]: operation,
    [Attr.DbCollection]: collection,
    ...extra,
  };
}

/** Kafka span attributes for one operation on one topic. */
export function kafkaAttributes(
  operationType: 'send' | 'receive' | 'process' | 'create' | 'settle',
  topic: string,
  extra: Attributes = {},
): Attributes {
  return {
    [Attr.MessagingSystem]: 'kafka',
    [Attr.MessagingOperationType]: operationType,
    [Attr.MessagingOperationName]: operationType,
    [Attr.MessagingDestination]: topic,
    ...extra,
  };
}

/**
 * The trace context a job row keeps: the context of the request that last scheduled it, and the
 * job's fence token at that moment (stored as the `trace_context` jsonb of `jobs`).
 */
export interface JobTraceOrigin {
  readonly traceparent: string;
  readonly tracestate?: string;
  readonly fence_token: number;
}

/** What a job row stores of a carrier (traceparent, tracestate), or null when there is no trace. */
export function originCarrier(carrier: TraceCarrier | undefined): Record<string, string> | null {
  if (!carrier?.traceparent) return null;
  return carrier.tracestate
    ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate }
    : { traceparent: carrier.traceparent };
}

/**
 * Where the trace of an occurrence starts. The first occurrence after the request that scheduled
 * the job belongs to that request's trace (an API call → its fire, end to end); every later one
 * of a recurring job starts a trace of its own that links to the request, so one trace per
 * occurrence stays small however long the job lives.
 */
export function occurrenceParent(
  origin: JobTraceOrigin | null | undefined,
  fenceToken: number,
): { parent: Context; links: Link[] } {
  const sc = origin ? spanContextOf(origin as unknown as Record<string, unknown>) : undefined;
  if (!sc) return { parent: ROOT_CONTEXT, links: [] };
  if (fenceToken === Number(origin!.fence_token) + 1)
    return { parent: trace.setSpanContext(ROOT_CONTEXT, sc), links: [] };
  return { parent: ROOT_CONTEXT, links: [{ context: sc, attributes: { [Attr.LinkRole]: 'job-request' } }] };
}

/**
 * The trace context an occurrence carries when no span is recorded: what a no-op fire span under
 * occurrenceParent propagates — the scheduling request's context for the first occurrence after it,
 * none for later ones (a no-op span under a root context has no valid context to pass on).
 */
export function occurrenceCarrier(
  origin: JobTraceOrigin | null | undefined,
  fenceToken: number,
): TraceCarrier | undefined {
  if (!origin || fenceToken !== Number(origin.fence_token) + 1) return undefined;
  if (!spanContextOf(origin as unknown as Record<string, unknown>)) return undefined;
  return origin.tracestate
    ? { traceparent: origin.traceparent, tracestate: origin.tracestate }
    : { traceparent: origin.traceparent };
}

/** The span name of one occurrence (claimed, triggered or replayed): the root of its Kafka hops. */
export const FIRE_SPAN = 'tickwork.fire';

/**
 * Starts the span of one occurrence as the scheduler claims it (or the API triggers it). Its
 * context is stored with the fire and travels in the Kafka headers of every publish of it.
 */
export function startFireSpan(
  fire: FireIdentity,
  trigger: 'SCHEDULE' | 'MANUAL' | 'REPLAY',
  where: { readonly parent?: Context; readonly links?: readonly Link[]; readonly shard?: number },
): Span {
  return tracer().startSpan(
    FIRE_SPAN,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        ...fireAttributes(fire),
        [Attr.Trigger]: trigger,
        ...(where.shard !== undefined ? { [Attr.Shard]: where.shard } : {}),
      },
      links: [...(where.links ?? [])],
    },
    where.parent ?? context.active(),
  );
}

/** The trace context of a span as a carrier (its traceparent), or undefined for an invalid span. */
export function spanCarrier(span: Span): TraceCarrier | undefined {
  return traceCarrier(trace.setSpan(ROOT_CONTEXT, span));
}

/** The span name of one claim transaction (a batch of fires). */
export const CLAIM_SPAN = 'claim jobs';

/** Starts the span of one claim batch, begun at `startTime` (epoch ms), as a root of its own trace. */
export function startClaimSpan(
  startTime: number,
  counts: { readonly fires: number; readonly skipped: number; readonly shards: number },
): Span {
  return tracer().startSpan(
    CLAIM_SPAN,
    {
      kind: SpanKind.CLIENT,
      startTime,
      root: true,
      attributes: dbAttributes('claim', 'jobs', {
        [Attr.ClaimFires]: counts.fires,
        [Attr.ClaimSkipped]: counts.skipped,
        [Attr.ClaimShards]: counts.shards,
        [Attr.DbBatchSize]: counts.fires,
      }),
    },
    ROOT_CONTEXT,
  );
}

/** The context to publish a fire under: the one stored with it, or a new trace when it has none. */
export function fireContext(carrier: TraceCarrier | undefined): Context {
  return extractTraceContext(carrier);
}

/** `parent` with `span` as its current span (to inject the span's context into headers). */
export function contextWithSpan(parent: Context, span: Span): Context {
  return trace.setSpan(parent, span);
}

/** A link to a span context with a role. */
export function linkTo(sc: SpanContext, role: string): Link {
  return { context: sc, attributes: { [Attr.LinkRole]: role } };
}
