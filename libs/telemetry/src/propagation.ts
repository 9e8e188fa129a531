/**
 * W3C trace context in and out of plain string maps: Kafka message headers, gRPC metadata, HTTP
 * headers and the `trace_context` columns of the store all carry `traceparent` (and `tracestate`).
 */
import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  trace,
  type Context,
  type SpanContext,
} from '@opentelemetry/api';

/** `traceparent` and, when there is one, `tracestate`. */
export type TraceCarrier = Readonly<Record<string, string>>;

const getter = {
  keys: (carrier: Readonly<Record<string, unknown>>) => Object.keys(carrier),
  get: (carrier: Readonly<Record<string, unknown>>, key: string) => {
    const v = carrier[key] ?? carrier[key.toLowerCase()];
    if (typeof v === 'string') return v;
    if (Buffer.isBuffer(v)) return v.toString('utf8');
    if (Array.isArray(v)) return v.map((x) => (Buffer.isBuffer(x) ? x.toString('utf8') : String(x)));
    return undefined;
  },
};

/** Writes the trace context of `ctx` (default: the active one) into `headers`; returns them. */
export function injectTraceContext<T extends Record<string, string>>(
  headers: T,
  ctx: Context = context.active(),
): T {
  propagation.inject(ctx, headers);
  return headers;
}

/** The trace context of `ctx` as a carrier, or undefined when there is no valid span in it. */
export function traceCarrier(ctx: Context = context.active()): TraceCarrier | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent ? carrier : undefined;
}

/** A context whose remote parent is the one in `headers` (on top of `base`, default the root context). */
export function extractTraceContext(
  headers: Readonly<Record<string, unknown>> | null | undefined,
  base: Context = ROOT_CONTEXT,
): Context {
  return headers ? propagation.extract(base, headers, getter) : base;
}

/** The span context carried by `headers`, or undefined when it has none or an invalid one. */
export function spanContextOf(
  headers: Readonly<Record<string, unknown>> | null | undefined,
): SpanContext | undefined {
  const sc = trace.getSpanContext(extractTraceContext(headers));
  return sc && isSpanContextValid(sc) ? sc : undefined;
}

/** Trace and span id as log fields (`trace_id`, `span_id`), from a carrier or the active context. */
export function traceLogFields(carrier?: TraceCarrier): { trace_id?: string; span_id?: string } {
  const sc = carrier ? spanContextOf(carrier) : trace.getSpanContext(context.active());
  if (!sc || !isSpanContextValid(sc)) return {};
  return { trace_id: sc.traceId, span_id: sc.spanId };
}

// A fire event travels from the store (which knows its trace context) through code that knows
// nothing of tracing to the publisher; the context rides along keyed by the event object itself.
const boundContexts = new WeakMap<object, TraceCarrier>();

/** Attaches a trace context to an object (a FireEvent) for whoever publishes it later. */
export function bindTraceContext(target: object, carrier: TraceCarrier | undefined): void {
  if (carrier) boundContexts.set(target, carrier);
}

/** The trace context attached to an object by bindTraceContext, if any. */
export function boundTraceContext(target: object): TraceCarrier | undefined {
  return boundContexts.get(target);
}
