/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
 * `${webhook-id}.${webhook-timestamp}.${body}` with each of the tenant's active secrets, sent as
 * `webhook-signature: v1,<base64> v1,<base64>` so a receiver verifies with any library that
 * implements the spec, and secrets rotate by having two active at once.
 */
import { createHmac } from 'node:crypto';

const PREFIX = 'whsec_';

/** The tenant key that applies to tenants without secrets of their own. */
export const DEFAULT_TENANT_SECRETS = '*';

/** Decodes a `whsec_<base64>` secret to its key bytes; throws without echoing the secret. */
export function decodeWebhookSecret(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) throw new Error(`a webhook secret must start with "${PREFIX}"`);
  const b64 = secret.slice(PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64))
    throw new Error('a webhook secret must be whsec_ followed by base64');
  const key = Buffer.from(b64, 'base64');
  if (key.length < 24 || key.length > 64)
    throw new Error(`a webhook secret must decode to 24..64 bytes (got ${key.length})`);
  return key;
}

/** Signs webhook calls with per-tenant secrets. */
export class WebhookSigner {
  private readonly keys: ReadonlyMap<string, readonly Buffer[]>;

  /** `secrets`: tenant id (or `*` for every other tenant) → its active `whsec_` secrets. */
  constructor(secrets: Readonly<Record<string, readonly string[]>>) {
    this.keys = new Map(
      Object.entries(secrets).map(([tenant, list]) => [tenant, list.map(decodeWebhookSecret)]),
    );
  }

  /** True when calls for this tenant will be signed. */
  signs(tenantId: string): boolean {
    return (this.keys.get(tenantId) ?? this.keys.get(DEFAULT_TENANT_SECRETS) ?? []).length > 0;
  }

  /** The webhook-signature header value, or null when the tenant has no secret. */
  sign(tenantId: string, webhookId: string, timestampSeconds: number, body: string): string | null {
    const keys = this.keys.get(tenantId) ?? this.keys.get(DEFAULT_TENANT_SECRETS) ?? [];
    if (keys.length === 0) return null;
    const content = `${webhookId}.${timestampSeconds}.${body}`;
    return keys
      .map((k) => `v1,${createHmac('sha256', k).update(content, 'utf8').digest('base64')}`)
      .join(' ');
  }
}
