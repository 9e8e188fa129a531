/**
 * A server span and a duration metric for every SchedulerAdmin call: the caller's `traceparent`
 * (gRPC metadata) is the parent, and the handler runs inside the span's context, so the job
 * writes it makes (and the fires they lead to) are in the caller's trace.
 */
import type { Metadata } from '@grpc/grpc-js';
import {
  Inject,
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import {
  ApiMetrics,
  Attr,
  contextWithSpan,
  extractTraceContext,
  recordFailure,
  SpanKind,
  tracer,
} from '@tickwork/telemetry';
import { Observable } from 'rxjs';
import { context } from '@opentelemetry/api';
import { API_METRICS } from '../tokens';

/** Where @GrpcMethod keeps { service, rpc } (Nest's PATTERN_METADATA). */
const PATTERN_METADATA = 'microservices:pattern';
const PACKAGES: Readonly<Record<string, string>> = {
  SchedulerAdmin: 'tickwork.admin.v1',
  Health: 'grpc.health.v1',
};
const UNKNOWN = 2;

/** Traces and measures each gRPC call (HTTP requests have the middleware instead). */
@Injectable()
export class GrpcTelemetryInterceptor implements NestInterceptor {
  constructor(@Inject(API_METRICS) private readonly metrics: ApiMetrics) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (ctx.getType() !== 'rpc') return next.handle();
    const pattern = (
      Reflect.getMetadata(PATTERN_METADATA, ctx.getHandler()) as
        | { service?: string; rpc?: string }[]
        | undefined
    )?.[0];
    const service = pattern?.service
      ? `${PACKAGES[pattern.service] ?? ''}.${pattern.service}`.replace(/^\./, '')
      : 'unknown';
    const method = pattern?.rpc ?? ctx.getHandler().name;
    const metadata = ctx.switchToRpc().getContext<Metadata>();
    const parent = extractTraceContext(metadata.getMap());
    return new Observable((subscriber) => {
      const started = performance.now();
      const span = tracer().startSpan(
        `${service}/${method}`,
        {
          kind: SpanKind.SERVER,
          attributes: { [Attr.RpcSystem]: 'grpc', [Attr.RpcService]: service, [Attr.RpcMethod]: method },
        },
        parent,
      );
      const finish = (code: number, error?: unknown) => {
        span.setAttribute(Attr.RpcGrpcStatus, code);
        if (error !== undefined && code !== 0) recordFailure(span, grpcError(error));
        span.end();
        this.metrics.rpcCall(service, method, code, performance.now() - started);
      };
      const subscription = context.with(contextWithSpan(parent, span), () =>
        next.handle().subscribe({
          next: (v) => subscriber.next(v),
          error: (e: unknown) => {
            finish(codeOf(e), e);
            subscriber.error(e);
          },
          complete: () => {
            finish(0);
            subscriber.complete();
          },
        }),
      );
      return () => subscription.unsubscribe();
    });
  }
}

/** The gRPC status code of an error as the controllers throw it (`{ code, details }`). */
function codeOf(e: unknown): number {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : UNKNOWN;
}

function grpcError(e: unknown): Error {
  if (e instanceof Error) return e;
  const details = (e as { details?: unknown } | null)?.details;
  const err = new Error(typeof details === 'string' ? details : 'gRPC error');
  err.name = `GrpcStatus${codeOf(e)}`;
  return err;
}
