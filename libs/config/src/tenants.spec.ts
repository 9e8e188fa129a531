import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, hashToken, loadTenants } from './index';

const doc = (o: unknown) => ({ TICKWORK_TENANTS: JSON.stringify(o) });

describe('loadTenants', () => {
  it('turns auth off with no tokens configured: every caller is an anonymous admin', () => {
    const t = loadTenants({});
    expect(t.authMode).toBe('off');
    expect(t.authenticate(undefined)).toEqual({ name: 'anonymous', role: 'admin', tenantId: null });
    expect(t.quotasFor('anyone')).toEqual({ maxJobs: 100_000, maxFiresPerSecond: 1_000 });
  });

  it('maps a token to its principal by hash only, and gives per-tenant quotas over the defaults', () => {
    const t = loadTenants(
      doc({
        defaults: { max_jobs: 10, max_fires_per_second: 2 },
        tenants: { acme: { max_jobs: 3 } },
        tokens: [
          { name: 'ci', sha256: hashToken('secret-a'), role: 'tenant', tenant: 'acme' },
          { name: 'ops', sha256: hashToken('secret-b'), role: 'admin' },
        ],
      }),
    );
    expect(t.authMode).toBe('required');
    expect(t.authenticate('secret-a')).toEqual({ name: 'ci', role: 'tenant', tenantId: 'acme' });
    expect(t.authenticate('secret-b')).toEqual({ name: 'ops', role: 'admin', tenantId: null });
    expect(t.authenticate('nope')).toBeNull();
    expect(t.authenticate(undefined)).toBeNull();
    expect(t.quotasFor('acme')).toEqual({ maxJobs: 3, maxFiresPerSecond: 2 });
    expect(t.quotasFor('other')).toEqual({ maxJobs: 10, maxFiresPerSecond: 2 });
  });

  it('names every bad entry at once', () => {
    let error: unknown;
    try {
      loadTenants(
        doc({
          tenants: { 'bad tenant!': {}, ok: { max_jobs: -1, burst: 3 } },
          tokens: [
            { name: 'x', sha256: 'plaintext-token', role: 'tenant' },
            { sha256: hashToken('a'), role: 'root' },
          ],
        }),
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const m = (error as Error).message;
    for (const part of [
      'tenants.bad tenant!',
      'tenants.ok.max_jobs',
      'tenants.ok.burst',
      'tokens[0].sha256',
      'tokens[0].tenant',
      'tokens[1].name',
      'tokens[1].role',
    ]) {
      expect(m).toContain(part);
    }
  });

  it('refuses TICKWORK_AUTH=required without tokens, and both sources at once', () => {
    expect(() => loadTenants({ TICKWORK_AUTH: 'required' })).toThrow(/TICKWORK_AUTH=required but no tokens/);
    expect(() => loadTenants({ TICKWORK_TENANTS: '{}', TICKWORK_TENANTS_FILE: '/x' })).toThrow(/not both/);
  });

  it('names the variable and the file when the file is missing or its content is invalid', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tickwork-tenants-'));
    try {
      const missing = join(dir, 'missing.yaml');
      expect(() => loadTenants({ TICKWORK_TENANTS_FILE: missing })).toThrow(
        `TICKWORK_TENANTS_FILE=${JSON.stringify(missing)} cannot be read`,
      );
      const bad = join(dir, 'tenants.yaml');
      writeFileSync(bad, 'tokens:\n  - { name: ci, sha256: "00", role: tenant }\n');
      expect(() => loadTenants({ TICKWORK_TENANTS_FILE: bad })).toThrow(
        `TICKWORK_TENANTS_FILE=${JSON.stringify(bad)}: tokens[0].sha256 must be 64 hex digits`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
