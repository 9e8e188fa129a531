-- Tickwork store, version 5: trace context, so one trace follows an occurrence end to end.
-- jobs.trace_context: the W3C trace context of the request (API call or Kafka command) that last
--   scheduled the job, {"traceparent", "tracestate"?, "fence_token"} with the job's fence token at
--   that moment: the first occurrence after it joins that request's trace, later ones link to it.
-- fires.trace_context: the context of the occurrence's own span, written with the outbox row, so
--   every publish of the fire (the first one and any relay) carries the same trace to Kafka.
-- Both are nullable without a default: adding them rewrites nothing.
ALTER TABLE jobs ADD COLUMN trace_context jsonb;
ALTER TABLE fires ADD COLUMN trace_context jsonb;
