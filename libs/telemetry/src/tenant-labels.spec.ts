import { OTHER_TENANT, TenantLabels } from './tenant-labels';

describe('TenantLabels', () => {
  it('labels the first N tenants it sees and calls the rest "other"', () => {
    const labels = new TenantLabels({ topN: 2 });
    expect(labels.label('a')).toBe('a');
    expect(labels.label('b')).toBe('b');
    expect(labels.label('c')).toBe(OTHER_TENANT);
    expect(labels.label('a')).toBe('a');
  });

  it('always labels pinned tenants, outside the top N', () => {
    const labels = new TenantLabels({ topN: 1, pinned: ['vip'] });
    expect(labels.label('a')).toBe('a');
    expect(labels.label('vip')).toBe('vip');
    expect(labels.label('b')).toBe(OTHER_TENANT);
  });

  it('re-ranks by recent volume, so a tenant that grows busy gets its own label', () => {
    let now = 0;
    const labels = new TenantLabels({ topN: 1, rerankEveryMs: 1_000, now: () => now });
    expect(labels.label('early', 1)).toBe('early');
    expect(labels.label('busy', 50)).toBe(OTHER_TENANT);
    now = 1_000;
    expect(labels.label('busy', 1)).toBe('busy');
    expect(labels.label('early', 1)).toBe(OTHER_TENANT);
  });

  it('never hands out more than pinned + 4·N labels, however many tenants pass through the top', () => {
    let now = 0;
    const labels = new TenantLabels({ topN: 2, rerankEveryMs: 1, now: () => now });
    const seen = new Set<string>();
    for (let i = 0; i < 500; i++) {
      now += 1;
      // Each new tenant is the busiest one for a moment.
      seen.add(labels.label(`t${i}`, 1_000 * (i + 1)));
    }
    seen.delete(OTHER_TENANT);
    expect(seen.size).toBeLessThanOrEqual(8);
    expect(seen.size).toBeGreaterThan(2);
  });

  it('labels nobody with topN 0', () => {
    expect(new TenantLabels({ topN: 0 }).label('a')).toBe(OTHER_TENANT);
  });
});
