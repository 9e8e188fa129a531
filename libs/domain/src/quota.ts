/** Per-tenant fairness and rate caps for claiming fires. Pure: time comes in as a parameter. */

/** A token bucket per tenant: `ratePerSec` tokens a second, bursting up to `burst`. */
export class TenantTokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly rateFor: (tenantId: string) => { ratePerSec: number; burst: number } | null) {}

  /** Tokens the tenant may spend now (Infinity when it has no cap). */
  available(tenantId: string, nowMs: number): number {
    const rate = this.rateFor(tenantId);
    if (!rate || rate.ratePerSec <= 0) return Number.POSITIVE_INFINITY;
    const b = this.refill(tenantId, rate, nowMs);
    return Math.floor(b.tokens);
  }

  /** Spends tokens for fires actually claimed. */
  consume(tenantId: string, count: number, nowMs: number): void {
    const rate = this.rateFor(tenantId);
    if (!rate || rate.ratePerSec <= 0 || count <= 0) return;
    const b = this.refill(tenantId, rate, nowMs);
    b.tokens = Math.max(0, b.tokens - count);
  }

  private refill(
    tenantId: string,
    rate: { ratePerSec: number; burst: number },
    nowMs: number,
  ): { tokens: number; at: number } {
    let b = this.buckets.get(tenantId);
    if (!b) {
      b = { tokens: rate.burst, at: nowMs };
      this.buckets.set(tenantId, b);
    }
    const elapsed = Math.max(0, nowMs - b.at);
    b.tokens = Math.min(rate.burst, b.tokens + (elapsed / 1000) * rate.ratePerSec);
    b.at = nowMs;
    return b;
  }
}

export interface TenantShare {
  readonly tenantId: string;
  /** Most jobs to claim for this tenant in this batch. */
  readonly cap: number;
  /** True when the rate cap, not the fair share, limited the tenant. */
  readonly deferredByQuota: boolean;
}

/** Splits a claim batch evenly across the tenants with due work, each capped by its available tokens. */
export function fairShares(
  tenants: readonly string[],
  batchSize: number,
  available: (tenantId: string) => number,
): TenantShare[] {
  if (tenants.length === 0) return [];
  const even = Math.max(1, Math.ceil(batchSize / tenants.length));
  return tenants.map((tenantId) => {
    const tokens = available(tenantId);
    const cap = Math.max(0, Math.min(even, tokens));
    return { tenantId, cap, deferredByQuota: tokens < even };
  });
}
