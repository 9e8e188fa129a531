/** Who is calling an application service, and the tenancy rules that follow from it. */
import type { Principal } from '@tickwork/config';
import { TENANT_ID_PATTERN, ValidationError, type Job } from '@tickwork/domain';
import { JobNotFoundError, PermissionDeniedError } from './errors';

/** The interface a call came through. */
export type Via = 'grpc' | 'rest' | 'kafka';

/** An authenticated caller: a tenant user (confined to `tenantId`) or an admin (`tenantId` null). */
export interface Caller {
  /** Recorded as the actor of audit events: the token's name, or `kafka` for commands. */
  readonly actor: string;
  readonly role: 'tenant' | 'admin';
  readonly tenantId: string | null;
  readonly via: Via;
}

/** The caller for an authenticated principal on an interface. */
export function callerOf(principal: Principal, via: Via): Caller {
  return { actor: principal.name, role: principal.role, tenantId: principal.tenantId, via };
}

/** The job, if the caller may see it; otherwise JobNotFoundError (another tenant's job is not revealed). */
export function visibleJob(caller: Caller, jobId: string, job: Job | null): Job {
  if (!job) throw new JobNotFoundError(jobId);
  if (caller.tenantId !== null && job.tenantId !== caller.tenantId) throw new JobNotFoundError(jobId, true);
  return job;
}

/**
 * The tenant a listing or creation is about. A tenant caller may name only its own tenant (or
 * none); an admin may name any, or none (`fallback`: all tenants for listings, `default` for creates).
 */
export function tenantScope(
  caller: Caller,
  requested: string | undefined,
  field: string,
): string | undefined {
  const named = requested === undefined || requested === '' ? undefined : requested;
  if (named !== undefined && !TENANT_ID_PATTERN.test(named)) {
    throw new ValidationError([{ field, message: 'must be 1-64 characters of letters, digits, . _ -' }]);
  }
  if (caller.tenantId === null) return named;
  if (named !== undefined && named !== caller.tenantId)
    throw new PermissionDeniedError(`caller of tenant ${caller.tenantId} may not act on tenant ${named}`);
  return caller.tenantId;
}
