/** The one table from application error codes to gRPC status codes and HTTP statuses. */
import { status as GrpcStatus } from '@grpc/grpc-js';
import { IdempotencyKeyReusedError, PreconditionFailedError, type ErrorCode } from '@tickwork/jobs';

export const GRPC_CODES: Readonly<Record<ErrorCode | 'DEADLINE_EXCEEDED', GrpcStatus>> = {
  INVALID_ARGUMENT: GrpcStatus.INVALID_ARGUMENT,
  NOT_FOUND: GrpcStatus.NOT_FOUND,
  ALREADY_EXISTS: GrpcStatus.ALREADY_EXISTS,
  FAILED_PRECONDITION: GrpcStatus.FAILED_PRECONDITION,
  UNAUTHENTICATED: GrpcStatus.UNAUTHENTICATED,
  PERMISSION_DENIED: GrpcStatus.PERMISSION_DENIED,
  RESOURCE_EXHAUSTED: GrpcStatus.RESOURCE_EXHAUSTED,
  INTERNAL: GrpcStatus.INTERNAL,
  DEADLINE_EXCEEDED: GrpcStatus.DEADLINE_EXCEEDED,
};

/**
 * HTTP status for an error code; a stale etag (If-Match) is 412, an idempotency key reused for
 * another request 422 (as the IETF Idempotency-Key draft has it), other failed preconditions 409.
 */
export function httpStatusOf(code: ErrorCode, error: unknown): number {
  switch (code) {
    case 'INVALID_ARGUMENT':
      return 400;
    case 'UNAUTHENTICATED':
      return 401;
    case 'PERMISSION_DENIED':
      return 403;
    case 'NOT_FOUND':
      return 404;
    case 'ALREADY_EXISTS':
      return 409;
    case 'FAILED_PRECONDITION':
      if (error instanceof IdempotencyKeyReusedError) return 422;
      return error instanceof PreconditionFailedError && /etag/.test(error.message) ? 412 : 409;
    case 'RESOURCE_EXHAUSTED':
      return 429;
    case 'INTERNAL':
      return 500;
  }
}
