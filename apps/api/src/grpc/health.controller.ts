/**
 * gRPC: grpc.health.v1.Health, so grpc_health_probe and load balancers can check the API. No auth.
 * SERVING exactly when HTTP /health/ready is 200: the same checks (PostgreSQL, Kafka).
 */
import { Controller, Inject, UseFilters } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import { NotFoundError } from '@tickwork/jobs';
import { distinctUntilChanged, from, map, switchMap, timer, type Observable } from 'rxjs';
import type { Readiness } from '@tickwork/telemetry';
import { READINESS } from '../tokens';
import { GrpcErrorsFilter } from './grpc-errors.filter';

/** Services whose health this server reports: '' is the server as a whole. */
const SERVICES = new Set(['', 'tickwork.admin.v1.SchedulerAdmin']);

type ServingStatus = 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

@Controller()
@UseFilters(new GrpcErrorsFilter())
export class GrpcHealthController {
  constructor(@Inject(READINESS) private readonly readiness: Readiness) {}

  @GrpcMethod('Health', 'Check')
  async check(req: { service?: string }): Promise<{ status: ServingStatus }> {
    if (!SERVICES.has(req.service ?? '')) throw new NotFoundError(`unknown service ${req.service}`);
    return { status: await this.status() };
  }

  @GrpcMethod('Health', 'Watch')
  watch(req: { service?: string }): Observable<{ status: ServingStatus }> {
    const known = SERVICES.has(req.service ?? '');
    return timer(0, 5_000).pipe(
      switchMap(() => from(known ? this.status() : Promise.resolve<ServingStatus>('SERVICE_UNKNOWN'))),
      distinctUntilChanged(),
      map((status) => ({ status })),
    );
  }

  private async status(): Promise<ServingStatus> {
    return (await this.readiness.report()).ready ? 'SERVING' : 'NOT_SERVING';
  }
}
