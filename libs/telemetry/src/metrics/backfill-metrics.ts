/** Backfill instruments of a scheduler instance: fires made, and active backfills of its shards. */
import { Attr } from '../attributes';
import type { TenantLabels } from '../tenant-labels';
import { counterOf, defineMetric, gaugeOf, meter } from './spec';

/** The backfill metrics. */
export const BACKFILL_METRICS = {
  backfillFires: defineMetric({
    name: 'tickwork.backfill.fires',
    kind: 'counter',
    help: 'Backfill fires put in the outbox (trigger BACKFILL), by tenant',
  }),
  backfillsActive: defineMetric({
    name: 'tickwork.backfills.active',
    kind: 'gauge',
    integer: true,
    help: "Backfills PENDING or RUNNING in this instance's shards (sum over instances: the cluster's)",
  }),
} as const;

/** Backfill instruments of a scheduler instance. */
export class BackfillMetrics {
  private readonly m = meter();
  private readonly fires = counterOf(this.m, BACKFILL_METRICS.backfillFires);

  constructor(
    private readonly tenants: TenantLabels,
    active: () => number,
  ) {
    gaugeOf(this.m, BACKFILL_METRICS.backfillsActive).addCallback((r) => r.observe(active()));
  }

  /** Counts backfill fires, by tenant. */
  fired(events: readonly { readonly tenantId: string }[]): void {
    const byTenant = new Map<string, number>();
    for (const e of events) byTenant.set(e.tenantId, (byTenant.get(e.tenantId) ?? 0) + 1);
    for (const [tenantId, n] of byTenant) this.fires.add(n, { [Attr.Tenant]: this.tenants.label(tenantId) });
  }
}
