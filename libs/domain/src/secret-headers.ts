/**
 * Target headers that carry credentials are write-only: the API shows them masked, and an update
 * that sends the mask back keeps the stored value. Which names count as secret is decided by name,
 * not by value, so a client can tell from the name alone what it will read back.
 */
import type { JsonValue } from './job';
import type { Target } from './target';
import type { FieldViolation } from './validation';

/** What a secret header's value reads as. Sent back unchanged in an update, it keeps the stored value. */
export const SECRET_HEADER_MASK = '********';

/** Header names that are secret whatever else they contain. */
const SECRET_HEADER_NAMES = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);
/** Parts of a name that make it secret: x-api-key, x-auth-token, x-hub-signature, client-secret, … */
const SECRET_HEADER_PART = /auth|token|secret|key|password|passwd|credential|signature|session/i;

/** Whether a target header of this name is stored write-only (case-insensitive). */
export function isSecretHeaderName(name: string): boolean {
  return SECRET_HEADER_NAMES.has(name.toLowerCase()) || SECRET_HEADER_PART.test(name);
}

/** A wire target (targetToWire) with every secret header's value replaced by the mask. */
export function maskTargetSecrets(target: Record<string, JsonValue>): Record<string, JsonValue> {
  const headers = target.headers;
  if (!headers || typeof headers !== 'object' || Array.isArray(headers)) return target;
  const masked: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(headers)) masked[k] = isSecretHeaderName(k) ? SECRET_HEADER_MASK : v;
  return { ...target, headers: masked };
}

/**
 * The incoming wire target with each masked secret header replaced by the stored value of the same
 * name (case-insensitive) from `stored`; a mask with nothing stored behind it is a violation (the
 * client sent back what it read from another job, or never set the value).
 */
export function restoreMaskedSecrets(
  incoming: unknown,
  stored: Target | null,
  field = 'target',
): { target: unknown; violations: FieldViolation[] } {
  if (!incoming || typeof incoming !== 'object' || Array.isArray(incoming))
    return { target: incoming, violations: [] };
  const t = incoming as Record<string, unknown>;
  const headers = t.headers;
  if (!headers || typeof headers !== 'object' || Array.isArray(headers))
    return { target: incoming, violations: [] };
  const storedByName = new Map<string, string>();
  if (stored && stored.type === t.type)
    for (const [k, v] of Object.entries(stored.headers)) storedByName.set(k.toLowerCase(), v);
  const violations: FieldViolation[] = [];
  const restored: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(headers as Record<string, unknown>)) {
    if (v === SECRET_HEADER_MASK && isSecretHeaderName(k)) {
      const kept = storedByName.get(k.toLowerCase());
      if (kept === undefined)
        violations.push({
          field: `${field}.headers.${k}`,
          message: `is the mask ${SECRET_HEADER_MASK} of a secret this job does not hold; send the value itself`,
        });
      else restored[k] = kept;
    } else {
      Object.defineProperty(restored, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
  }
  return { target: { ...t, headers: restored }, violations };
}
