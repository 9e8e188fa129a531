import { fairShares, TenantTokenBuckets } from './quota';

describe('fairShares', () => {
  it('splits a batch evenly so one tenant cannot take it all', () => {
    const shares = fairShares(['big', 'small'], 1000, () => Number.POSITIVE_INFINITY);
    expect(shares).toEqual([
      { tenantId: 'big', cap: 500, deferredByQuota: false },
      { tenantId: 'small', cap: 500, deferredByQuota: false },
    ]);
  });

  it('gives every tenant at least one slot when tenants outnumber the batch', () => {
    expect(fairShares(['a', 'b', 'c'], 2, () => Number.POSITIVE_INFINITY).map((s) => s.cap)).toEqual([
      1, 1, 1,
    ]);
  });

  it('caps a tenant by its tokens and marks it deferred by quota', () => {
    const shares = fairShares(['capped', 'free'], 100, (t) =>
      t === 'capped' ? 7 : Number.POSITIVE_INFINITY,
    );
    expect(shares).toEqual([
      { tenantId: 'capped', cap: 7, deferredByQuota: true },
      { tenantId: 'free', cap: 50, deferredByQuota: false },
    ]);
  });
});

describe('TenantTokenBuckets', () => {
  const buckets = () =>
    new TenantTokenBuckets((t) => (t === 'limited' ? { ratePerSec: 10, burst: 20 } : null));

  it('is unlimited for tenants without a cap', () => {
    expect(buckets().available('other', 0)).toBe(Number.POSITIVE_INFINITY);
  });

  it('starts full, drains on consume, and refills at the rate up to the burst', () => {
    const b = buckets();
    expect(b.available('limited', 0)).toBe(20);
    b.consume('limited', 20, 0);
    expect(b.available('limited', 0)).toBe(0);
    expect(b.available('limited', 500)).toBe(5);
    expect(b.available('limited', 10_000)).toBe(20);
  });

  it('never goes below zero and ignores a clock that went backwards', () => {
    const b = buckets();
    b.consume('limited', 50, 1_000);
    expect(b.available('limited', 1_000)).toBe(0);
    expect(b.available('limited', 500)).toBe(0);
  });
});
