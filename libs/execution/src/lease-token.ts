/** The lease tokens an executor issues: `<issuer>-<lease>`, the issuer naming this process (LEASE_ISSUER_CHARS). */
import { randomUUID } from 'node:crypto';
import { LEASE_ISSUER_CHARS } from '@tickwork/domain';

/** A fresh issuer: one per executor process (its liveness beat names it). */
export function newLeaseIssuer(): string {
  return randomUUID().slice(0, LEASE_ISSUER_CHARS);
}

/** A fresh lease token of `issuer` (see newLeaseIssuer). */
export function issueLeaseToken(issuer: string): string {
  return issuer + randomUUID().slice(LEASE_ISSUER_CHARS);
}
