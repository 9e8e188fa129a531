/** The API's instruments: request and call durations (semantic-convention names and attributes). */
import { Attr } from '../attributes';
import { defineMetric, DURATION_BUCKETS_SECONDS, histogramOf, meter, seconds } from './spec';

/** The API's metrics. */
export const API_METRICS = {
  httpServerDuration: defineMetric({
    name: 'http.server.request.duration',
    kind: 'histogram',
    unit: 's',
    buckets: DURATION_BUCKETS_SECONDS,
    help: 'Duration of HTTP server requests',
  }),
  rpcServerDuration: defineMetric({
    name: 'rpc.server.call.duration',
    kind: 'histogram',
    unit: 's',
    buckets: DURATION_BUCKETS_SECONDS,
    help: 'Duration of gRPC server calls',
  }),
} as const;

/** Request durations of the API (semantic-convention names and attributes). */
export class ApiMetrics {
  private readonly m = meter();
  private readonly http = histogramOf(this.m, API_METRICS.httpServerDuration);
  private readonly rpc = histogramOf(this.m, API_METRICS.rpcServerDuration);

  /** Records one HTTP request. */
  httpRequest(method: string, route: string, status: number, durationMs: number): void {
    this.http.record(seconds(durationMs), {
      [Attr.HttpMethod]: method,
      [Attr.HttpRoute]: route,
      [Attr.HttpStatus]: status,
    });
  }

  /** Records one gRPC call. */
  rpcCall(service: string, method: string, code: number, durationMs: number): void {
    this.rpc.record(seconds(durationMs), {
      [Attr.RpcSystem]: 'grpc',
      [Attr.RpcService]: service,
      [Attr.RpcMethod]: method,
      [Attr.RpcGrpcStatus]: code,
    });
  }
}
