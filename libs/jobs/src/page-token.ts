/** Opaque page tokens: base64url JSON tagged with what they page, validated on the way back in. */
import { isInstantInRange, JOB_ID_PATTERN, parseInstant, ValidationError } from '@tickwork/domain';

/** Encodes a position for `kind` listings. */
export function encodePageToken(kind: string, position: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify({ k: kind, ...position }), 'utf8').toString('base64url');
}

/** Decodes a token issued for `kind`; INVALID_ARGUMENT on anything else. Empty means the first page. */
export function decodePageToken(
  token: string | undefined,
  kind: string,
  field = 'page_token',
): Record<string, unknown> | undefined {
  if (token === undefined || token === '') return undefined;
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v) && (v as { k?: unknown }).k === kind)
      return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new ValidationError([{ field, message: 'is not a page token issued by this listing' }]);
}

/** Page size: default 50, 1..1000. */
export function pageSize(raw: number | undefined, field = 'page_size'): number {
  if (raw === undefined || raw === 0) return 50;
  if (!Number.isSafeInteger(raw) || raw < 0 || raw > 1000)
    throw new ValidationError([{ field, message: 'must be between 1 and 1000 (0 or absent: 50)' }]);
  return raw;
}

/** Checks a decoded position's fields; a token with a wrong type or value is INVALID_ARGUMENT, never a query. */
export function checkPosition(
  position: Record<string, unknown>,
  checks: Readonly<Record<string, (v: unknown) => boolean>>,
  field = 'page_token',
): void {
  if (!Object.entries(checks).every(([name, ok]) => ok(position[name])))
    throw new ValidationError([{ field, message: 'is not a page token issued by this listing' }]);
}

/** Position field checks for checkPosition. */
export const TOKEN_FIELD = {
  jobId: (v: unknown) => typeof v === 'string' && JOB_ID_PATTERN.test(v),
  fenceToken: (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0,
  instant: (v: unknown) => {
    const at = typeof v === 'string' ? parseInstant(v) : undefined;
    return at !== undefined && isInstantInRange(at.getTime());
  },
  micros: (v: unknown) => typeof v === 'string' && /^-?\d{1,19}$/.test(v) && BigInt(v) < 2n ** 63n,
  oneOf:
    (...allowed: string[]) =>
    (v: unknown) =>
      typeof v === 'string' && allowed.includes(v),
} as const;
