/**
 * The application's typed errors. Each has a canonical code (the gRPC vocabulary, transport-
 * neutral); the edges map codes to gRPC statuses and HTTP responses, and audit events record them.
 */
import {
  AlreadyReplayedError,
  DuplicateCommandError,
  JobAlreadyExistsError,
  NotShardedError,
  ValidationError,
} from '@tickwork/domain';

export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'FAILED_PRECONDITION'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'RESOURCE_EXHAUSTED'
  | 'INTERNAL';

/** Something the caller asked for does not exist (or is not visible to the caller). */
export class NotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFoundError';
  }
}

/** A job that does not exist, or belongs to a tenant the caller may not see (the two look the same to the caller). */
export class JobNotFoundError extends NotFoundError {
  constructor(
    readonly jobId: string,
    /** True when the job exists under another tenant: never shown to API callers, used for command reject reasons. */
    readonly ownedByAnotherTenant = false,
  ) {
    super(`job ${jobId} not found`);
    this.name = 'JobNotFoundError';
  }
}

/** What the caller asked to create exists already (a calendar of that name). */
export class AlreadyExistsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AlreadyExistsError';
  }
}

/** The call named a tenant, or asked for an operation, that the caller's role does not allow. */
export class PermissionDeniedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PermissionDeniedError';
  }
}

/** No bearer token, or one the tenant registry does not know. */
export class UnauthenticatedError extends Error {
  constructor(message = 'a valid bearer token is required (authorization: Bearer <token>)') {
    super(message);
    this.name = 'UnauthenticatedError';
  }
}

/** A tenant quota would be exceeded. */
export class QuotaExceededError extends Error {
  constructor(
    readonly tenantId: string,
    readonly quota: 'max_jobs',
    readonly limit: number,
  ) {
    super(`tenant ${tenantId} has reached its quota ${quota} = ${limit}`);
    this.name = 'QuotaExceededError';
  }
}

/** The job is not in a state that allows the change (stale etag, resume of a completed job, …). */
export class PreconditionFailedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PreconditionFailedError';
  }
}

/**
 * A CreateJob idempotency key already used, within its retention, for a different request: the
 * client reuses keys across requests, which would make a retry create or return the wrong job.
 */
export class IdempotencyKeyReusedError extends Error {
  constructor(readonly key: string) {
    super(
      `idempotency_key ${JSON.stringify(key)} was used for a different CreateJob request in the last 24 hours; use a new key for a new request`,
    );
    this.name = 'IdempotencyKeyReusedError';
  }
}

/** The canonical code of an error; anything unexpected is INTERNAL. */
export function errorCodeOf(e: unknown): ErrorCode {
  if (e instanceof ValidationError) return 'INVALID_ARGUMENT';
  if (e instanceof NotFoundError) return 'NOT_FOUND';
  if (e instanceof JobAlreadyExistsError || e instanceof AlreadyExistsError) return 'ALREADY_EXISTS';
  if (
    e instanceof PreconditionFailedError ||
    e instanceof AlreadyReplayedError ||
    e instanceof IdempotencyKeyReusedError ||
    // A feature not routed across the databases of a sharded store (docs/scale.md).
    e instanceof NotShardedError
  )
    return 'FAILED_PRECONDITION';
  if (e instanceof UnauthenticatedError) return 'UNAUTHENTICATED';
  if (e instanceof PermissionDeniedError) return 'PERMISSION_DENIED';
  if (e instanceof QuotaExceededError) return 'RESOURCE_EXHAUSTED';
  if (e instanceof DuplicateCommandError) return 'ALREADY_EXISTS';
  return 'INTERNAL';
}
