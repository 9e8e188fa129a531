/**
 * The tenant registry: bearer tokens (stored only as SHA-256 hashes) mapped to a tenant and a role,
 * and per-tenant quotas. Read once at start-up from TICKWORK_TENANTS_FILE (a YAML or JSON file) or
 * TICKWORK_TENANTS (the same document inline), validated, and frozen.
 *
 * ```yaml
 * defaults: { max_jobs: 10000, max_fires_per_second: 100 }   # for tenants without their own
 * tenants:
 *   acme: { max_jobs: 500, max_fires_per_second: 20 }
 * tokens:
 *   - name: acme-ci                 # who, in audit events
 *     sha256: 9f86d08188…            # hex SHA-256 of the token; the token itself is never stored
 *     role: tenant                  # sees and changes only its tenant's jobs
 *     tenant: acme
 *   - name: ops
 *     sha256: 60303ae22b…
 *     role: admin                   # every tenant
 * ```
 *
 * Tokens must be random (at least 128 bits, e.g. `openssl rand -hex 32`): a plain hash is the
 * right tool for a random secret, not for a password. With no tokens configured, auth is off
 * (the laptop default) — see `authMode`.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from './env';

/** A caller's role: `tenant` is confined to its tenant; `admin` sees and changes every tenant's jobs. */
export type Role = 'tenant' | 'admin';

/** Per-tenant limits, shared by the API (max jobs) and the scheduler's fire-rate limiter. */
export interface TenantQuotas {
  /** Live jobs (SCHEDULED or PAUSED) the tenant may have at once. */
  readonly maxJobs: number;
  /** Fires per second the scheduler may claim for the tenant (token bucket rate; burst = the same number). */
  readonly maxFiresPerSecond: number;
}

/** Who is calling, once a bearer token has been checked. */
export interface Principal {
  /** The token's name (or `anonymous` when auth is off); recorded as the actor in audit events. */
  readonly name: string;
  readonly role: Role;
  /** The tenant a `tenant` principal is confined to; null for admins. */
  readonly tenantId: string | null;
}

/**
 * `required`: every call needs a valid token. `off`: no tokens configured; every caller is an
 * anonymous admin (laptop default, loud in the logs, refused on a non-loopback host unless
 * TICKWORK_AUTH=off says so explicitly).
 */
export type AuthMode = 'required' | 'off';

/** The loaded registry: look up a token, read a tenant's quotas. */
export interface TenantRegistry {
  readonly authMode: AuthMode;
  /** Where the registry came from (file path, `TICKWORK_TENANTS`, or `none`), for start-up logs. */
  readonly source: string;
  /** Tenants named in the registry (others get `defaults`). */
  readonly tenantIds: readonly string[];
  /** The principal for a raw bearer token, or null when the token is unknown. With auth off: anonymous admin. */
  authenticate(token: string | undefined): Principal | null;
  /** The quotas of a tenant: its own, else the defaults. */
  quotasFor(tenantId: string): TenantQuotas;
}

/** Built-in quotas when the registry names none: generous, so a laptop never hits them. */
export const DEFAULT_TENANT_QUOTAS: TenantQuotas = Object.freeze({
  maxJobs: 100_000,
  maxFiresPerSecond: 1_000,
});

const TENANT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The hex SHA-256 of a token, as stored in the registry (`tickwork` CLI: `tickwork token hash`). */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Reads the tenant registry from TICKWORK_TENANTS_FILE or TICKWORK_TENANTS (not both); throws
 * ConfigError naming the variable and every bad entry. TICKWORK_AUTH=off disables auth even when
 * tokens are configured; TICKWORK_AUTH=required refuses to start without tokens.
 */
export function loadTenants(env: Readonly<Record<string, string | undefined>> = process.env): TenantRegistry {
  const file = env.TICKWORK_TENANTS_FILE?.trim();
  const inline = env.TICKWORK_TENANTS?.trim();
  const authSetting = (env.TICKWORK_AUTH?.trim() || 'auto').toLowerCase();
  const problems: string[] = [];
  if (!['auto', 'required', 'off'].includes(authSetting))
    problems.push(`TICKWORK_AUTH=${JSON.stringify(authSetting)} must be auto, required or off`);
  if (file && inline) problems.push('set TICKWORK_TENANTS_FILE or TICKWORK_TENANTS, not both');

  let source = 'none';
  let doc: unknown = undefined;
  if (file && !inline) {
    source = file;
    try {
      doc = parseYaml(readFileSync(file, 'utf8'));
    } catch (e) {
      problems.push(
        `TICKWORK_TENANTS_FILE=${JSON.stringify(file)} cannot be read as YAML or JSON: ${(e as Error).message}`,
      );
    }
  } else if (inline && !file) {
    source = 'TICKWORK_TENANTS';
    try {
      doc = parseYaml(inline);
    } catch (e) {
      problems.push(`TICKWORK_TENANTS is not YAML or JSON: ${(e as Error).message}`);
    }
  }
  // A problem in the file's content names the file too: an operator sees which one to fix.
  const where = file ? `TICKWORK_TENANTS_FILE=${JSON.stringify(file)}` : 'TICKWORK_TENANTS';
  const parsed = doc === undefined || doc === null ? emptyDocument() : parseDocument(doc, where, problems);
  if (authSetting === 'required' && parsed.tokens.size === 0)
    problems.push(
      'TICKWORK_AUTH=required but no tokens are configured (TICKWORK_TENANTS_FILE or TICKWORK_TENANTS)',
    );
  if (problems.length > 0) throw new ConfigError(problems);

  const authMode: AuthMode = authSetting === 'off' || parsed.tokens.size === 0 ? 'off' : 'required';
  return Object.freeze(new LoadedRegistry(authMode, source, parsed));
}

interface ParsedDocument {
  defaults: TenantQuotas;
  tenants: Map<string, TenantQuotas>;
  tokens: Map<string, Principal>;
}

function emptyDocument(): ParsedDocument {
  return { defaults: DEFAULT_TENANT_QUOTAS, tenants: new Map(), tokens: new Map() };
}

function parseDocument(doc: unknown, where: string, problems: string[]): ParsedDocument {
  const out = emptyDocument();
  if (typeof doc !== 'object' || Array.isArray(doc) || doc === null) {
    problems.push(`${where}: the document must be a mapping with tenants, tokens and defaults`);
    return out;
  }
  const root = doc as Record<string, unknown>;
  for (const key of Object.keys(root))
    if (!['defaults', 'tenants', 'tokens'].includes(key))
      problems.push(`${where}: ${key} is not a known field`);
  if (root.defaults !== undefined)
    out.defaults = parseQuotas(root.defaults, `${where}: defaults`, DEFAULT_TENANT_QUOTAS, problems);

  if (root.tenants !== undefined) {
    if (typeof root.tenants !== 'object' || root.tenants === null || Array.isArray(root.tenants))
      problems.push(`${where}: tenants must be a mapping of tenant id to quotas`);
    else {
      for (const [id, q] of Object.entries(root.tenants as Record<string, unknown>)) {
        if (!TENANT_ID.test(id))
          problems.push(
            `${where}: tenants.${id} is not a valid tenant id (letters, digits, . _ -; at most 64)`,
          );
        out.tenants.set(
          id,
          Object.freeze(parseQuotas(q ?? {}, `${where}: tenants.${id}`, out.defaults, problems)),
        );
      }
    }
  }

  if (root.tokens !== undefined) {
    if (!Array.isArray(root.tokens)) problems.push(`${where}: tokens must be a list`);
    else {
      const names = new Set<string>();
      root.tokens.forEach((raw: unknown, i) => {
        const at = `${where}: tokens[${i}]`;
        if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
          return problems.push(`${at} must be a mapping`);
        const t = raw as Record<string, unknown>;
        for (const key of Object.keys(t))
          if (!['name', 'sha256', 'role', 'tenant'].includes(key))
            problems.push(`${at}.${key} is not a known field`);
        const name = typeof t.name === 'string' && t.name.trim() ? t.name.trim() : undefined;
        if (!name) problems.push(`${at}.name is required`);
        else if (names.has(name)) problems.push(`${at}.name ${JSON.stringify(name)} is used twice`);
        else names.add(name);
        const sha = typeof t.sha256 === 'string' ? t.sha256.trim().toLowerCase() : '';
        if (!SHA256_HEX.test(sha))
          problems.push(
            `${at}.sha256 must be 64 hex digits (the SHA-256 of the token, never the token itself)`,
          );
        else if (out.tokens.has(sha)) problems.push(`${at}.sha256 is the same as another token's`);
        const role = t.role;
        if (role !== 'tenant' && role !== 'admin') problems.push(`${at}.role must be tenant or admin`);
        let tenantId: string | null = null;
        if (role === 'tenant') {
          if (typeof t.tenant !== 'string' || !TENANT_ID.test(t.tenant))
            problems.push(`${at}.tenant is required for role tenant and must be a valid tenant id`);
          else tenantId = t.tenant;
        } else if (role === 'admin' && t.tenant !== undefined)
          problems.push(`${at}.tenant must not be set for role admin (admins see every tenant)`);
        if (name && SHA256_HEX.test(sha) && (role === 'admin' || tenantId))
          out.tokens.set(sha, Object.freeze({ name, role: role as Role, tenantId }));
      });
    }
  }
  return out;
}

function parseQuotas(raw: unknown, at: string, fallback: TenantQuotas, problems: string[]): TenantQuotas {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problems.push(`${at} must be a mapping with max_jobs and max_fires_per_second`);
    return fallback;
  }
  const q = raw as Record<string, unknown>;
  for (const key of Object.keys(q))
    if (!['max_jobs', 'max_fires_per_second'].includes(key))
      problems.push(`${at}.${key} is not a known field`);
  const num = (key: string, dflt: number, min: number): number => {
    const v = q[key];
    if (v === undefined || v === null) return dflt;
    if (
      typeof v !== 'number' ||
      !Number.isFinite(v) ||
      v < min ||
      (key === 'max_jobs' && !Number.isSafeInteger(v))
    ) {
      problems.push(`${at}.${key} must be ${key === 'max_jobs' ? 'an integer' : 'a number'} >= ${min}`);
      return dflt;
    }
    return v;
  };
  return Object.freeze({
    maxJobs: num('max_jobs', fallback.maxJobs, 0),
    maxFiresPerSecond: num('max_fires_per_second', fallback.maxFiresPerSecond, 0),
  });
}

const ANONYMOUS: Principal = Object.freeze({ name: 'anonymous', role: 'admin', tenantId: null });

class LoadedRegistry implements TenantRegistry {
  readonly tenantIds: readonly string[];

  constructor(
    readonly authMode: AuthMode,
    readonly source: string,
    private readonly doc: ParsedDocument,
  ) {
    this.tenantIds = Object.freeze([...doc.tenants.keys()]);
  }

  authenticate(token: string | undefined): Principal | null {
    if (this.authMode === 'off') return ANONYMOUS;
    if (!token) return null;
    // Looked up by hash: the stored values are hashes, so timing reveals nothing about a token.
    return this.doc.tokens.get(hashToken(token)) ?? null;
  }

  quotasFor(tenantId: string): TenantQuotas {
    return this.doc.tenants.get(tenantId) ?? this.doc.defaults;
  }
}
