/** Bearer-token authentication for both listeners: the token → a principal → the service's Caller. */
import type { TenantRegistry } from '@tickwork/config';
import { callerOf, UnauthenticatedError, type Caller, type Via } from '@tickwork/jobs';

export class Authenticator {
  constructor(private readonly tenants: TenantRegistry) {}

  /** The caller for an `authorization` value (`Bearer <token>`); UnauthenticatedError when missing or unknown. */
  authenticate(authorization: string | undefined, via: Via): Caller {
    const token = bearerToken(authorization);
    if (this.tenants.authMode === 'required' && token === undefined) {
      throw new UnauthenticatedError(
        authorization ? 'the authorization value must be "Bearer <token>"' : undefined,
      );
    }
    const principal = this.tenants.authenticate(token);
    if (!principal) throw new UnauthenticatedError('the bearer token is not known');
    return callerOf(principal, via);
  }
}

/** The token of `Bearer <token>` (scheme case-insensitive), or undefined. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m?.[1];
}
