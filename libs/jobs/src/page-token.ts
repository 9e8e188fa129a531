/** Opaque page tokens: base64url JSON tagged with what they page, validated on the way back in. */
import { ValidationError } from '@tickwork/domain';

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
