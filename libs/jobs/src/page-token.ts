/**
 * Opaque page tokens: base64url JSON tagged with what they page and a digest of the listing's
 * filters, validated on the way back in, so a token is only good for the listing that issued it.
 */
import { createHash } from 'node:crypto';
import { ValidationError } from '@tickwork/domain';

/** The filters a listing was asked with (absent ones left out or undefined); labels in any order. */
export type PageFilters = Readonly<Record<string, string | Readonly<Record<string, string>> | undefined>>;

/** A short digest of the filters: key and label order do not matter; absent, '' and {} are the same. */
export function filtersDigest(filters: PageFilters): string {
  const canonical = Object.keys(filters)
    .filter((k) => {
      const v = filters[k];
      return v !== undefined && v !== '' && (typeof v === 'string' || Object.keys(v).length > 0);
    })
    .sort()
    .map((k) => {
      const v = filters[k]!;
      return [
        k,
        typeof v === 'string'
          ? v
          : Object.keys(v)
              .sort()
              .map((l) => [l, v[l]]),
      ];
    });
  return createHash('sha256').update(JSON.stringify(canonical)).digest('base64url').slice(0, 16);
}

/** Encodes a position for `kind` listings asked with `filters`. */
export function encodePageToken(
  kind: string,
  position: Record<string, string | number>,
  filters: PageFilters = {},
): string {
  return Buffer.from(JSON.stringify({ k: kind, f: filtersDigest(filters), ...position }), 'utf8').toString(
    'base64url',
  );
}

/**
 * Decodes a token issued for `kind` with the same `filters`; INVALID_ARGUMENT naming `field` on
 * anything else (another listing, other filters, not a token). Empty means the first page.
 */
export function decodePageToken(
  token: string | undefined,
  kind: string,
  filters: PageFilters = {},
  field = 'page_token',
): Record<string, unknown> | undefined {
  if (token === undefined || token === '') return undefined;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
  } catch {
    v = undefined;
  }
  if (!v || typeof v !== 'object' || Array.isArray(v) || (v as { k?: unknown }).k !== kind)
    throw new ValidationError([{ field, message: 'is not a page token issued by this listing' }]);
  if ((v as { f?: unknown }).f !== filtersDigest(filters)) {
    const named = Object.keys(filters).sort().join(', ');
    throw new ValidationError([
      {
        field,
        message: `was issued for other filters${named ? ` (${named})` : ''}: ask for the next page with the filters of the first`,
      },
    ]);
  }
  return v as Record<string, unknown>;
}

/** Page size: default 50, 1..1000. */
export function pageSize(raw: number | undefined, field = 'page_size'): number {
  if (raw === undefined || raw === 0) return 50;
  if (!Number.isSafeInteger(raw) || raw < 0 || raw > 1000)
    throw new ValidationError([{ field, message: 'must be between 1 and 1000 (0 or absent: 50)' }]);
  return raw;
}
