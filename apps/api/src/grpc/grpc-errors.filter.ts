/** Maps application errors to gRPC statuses at the edge; INVALID_ARGUMENT carries google.rpc.BadRequest. */
import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import { Catch, Logger, type RpcExceptionFilter } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';
import { ValidationError } from '@tickwork/domain';
import { errorCodeOf } from '@tickwork/jobs';
import { GRPC_CODES } from '../error-mapping';
import { badRequestDetails } from './status-details';

/** The call's deadline passed before (or while) it was served. */
export class DeadlineExceededError extends Error {
  constructor(message = 'the call deadline was exceeded') {
    super(message);
    this.name = 'DeadlineExceededError';
  }
}

/** What grpc-js sends for a failed unary call: status code, message, trailers. */
export interface GrpcError {
  readonly code: GrpcStatus;
  readonly details: string;
  readonly metadata: Metadata;
}

const log = new Logger('grpc');

/** An error as a gRPC status; validation errors carry their field violations in `grpc-status-details-bin`. */
export function toGrpcError(error: unknown, fieldPath: (wirePath: string) => string = (p) => p): GrpcError {
  const metadata = new Metadata();
  if (error instanceof DeadlineExceededError)
    return { code: GrpcStatus.DEADLINE_EXCEEDED, details: error.message, metadata };
  const code = errorCodeOf(error);
  const grpcCode = GRPC_CODES[code];
  if (error instanceof ValidationError) {
    const violations = error.violations.map((v) => ({ field: fieldPath(v.field), message: v.message }));
    const message = violations.map((v) => `${v.field}: ${v.message}`).join('; ');
    metadata.set('grpc-status-details-bin', badRequestDetails(grpcCode, message, violations));
    return { code: grpcCode, details: message, metadata };
  }
  if (code === 'INTERNAL') {
    log.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    return { code: grpcCode, details: 'internal error', metadata };
  }
  return { code: grpcCode, details: (error as Error).message, metadata };
}

@Catch()
export class GrpcErrorsFilter implements RpcExceptionFilter<unknown> {
  catch(error: unknown): Observable<never> {
    // Already mapped by the controller (it knows the request's field paths).
    if (
      error &&
      typeof error === 'object' &&
      'code' in error &&
      (error as { metadata?: unknown }).metadata instanceof Metadata
    ) {
      return throwError(() => error);
    }
    return throwError(() => toGrpcError(error));
  }
}
