/** The scheduler's per-tenant fire-rate caps, as its composition root builds them. */
import { loadConfig, loadTenants } from '@tickwork/config';
import { tenantFireRateCaps } from './fire-loops';

const noTenants = () => loadTenants({});
const registry = () =>
  loadTenants({
    TICKWORK_TENANTS: JSON.stringify({
      defaults: { max_jobs: 10, max_fires_per_second: 40 },
      tenants: { acme: { max_fires_per_second: 8 }, free: { max_fires_per_second: 0 } },
    }),
  });

describe('tenantFireRateCaps', () => {
  it('caps nothing without a tenant registry or TICKWORK_TENANT_MAX_FIRES_PER_SEC', () => {
    expect(tenantFireRateCaps(loadConfig({}), noTenants(), () => 0)).toBeUndefined();
  });

  it('gives every tenant its share of TICKWORK_TENANT_MAX_FIRES_PER_SEC by the shards held, at least 1 a second', () => {
    let held = 2;
    const caps = tenantFireRateCaps(
      loadConfig({ TICKWORK_SHARDS: '4', TICKWORK_TENANT_MAX_FIRES_PER_SEC: '100' }),
      noTenants(),
      () => held,
    )!;
    expect(caps.available('a', 0)).toBe(50);
    held = 0;
    expect(caps.available('b', 0)).toBe(1);
  });

  it("takes each tenant's max_fires_per_second from the registry; 0 is no cap", () => {
    const caps = tenantFireRateCaps(loadConfig({ TICKWORK_SHARDS: '4' }), registry(), () => 4)!;
    expect(caps.available('acme', 0)).toBe(8);
    expect(caps.available('other', 0)).toBe(40);
    expect(caps.available('free', 0)).toBe(Number.POSITIVE_INFINITY);
  });
});
