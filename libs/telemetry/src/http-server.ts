/**
 * A server span and a duration metric for every HTTP request, as Node middleware (Express and
 * Nest's Express adapter take it with app.use). The incoming `traceparent` is the parent, and the
 * rest of the request runs inside the span's context, so spans made while serving it are children.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { Attr } from './attributes';
import type { ApiMetrics } from './metrics';
import { extractTraceContext } from './propagation';
import { tracer } from './tracing';

export interface HttpServerTelemetryOptions {
  readonly metrics?: ApiMetrics;
  /** Paths not traced nor measured (health probes, scrapes). */
  readonly ignore?: (path: string) => boolean;
  /** The matched route template (e.g. /v1/jobs/:id), known once the request was routed. */
  readonly route: (req: IncomingMessage) => string | undefined;
}

/** The middleware. */
export function httpServerTelemetry(
  opts: HttpServerTelemetryOptions,
): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  return (req, res, next) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (opts.ignore?.(path)) {
      next();
      return;
    }
    const started = performance.now();
    const method = (req.method ?? 'GET').toUpperCase();
    const parent = extractTraceContext(req.headers);
    const [host, port] = (req.headers.host ?? '').split(':');
    const span = tracer().startSpan(
      method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [Attr.HttpMethod]: method,
          [Attr.UrlPath]: path,
          [Attr.UrlScheme]: (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http',
          ...(host ? { [Attr.ServerAddress]: host } : {}),
          ...(port ? { [Attr.ServerPort]: Number(port) } : {}),
        },
      },
      parent,
    );
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      const route = opts.route(req);
      const status = res.statusCode;
      if (route) {
        span.updateName(`${method} ${route}`);
        span.setAttribute(Attr.HttpRoute, route);
      }
      span.setAttribute(Attr.HttpStatus, status);
      if (status >= 500) {
        span.setAttribute(Attr.ErrorType, String(status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
      opts.metrics?.httpRequest(method, route ?? 'unmatched', status, performance.now() - started);
    };
    res.once('finish', finish);
    res.once('close', finish);
    context.with(trace.setSpan(parent, span), next);
  };
}
