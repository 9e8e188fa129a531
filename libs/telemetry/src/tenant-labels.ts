/**
 * Bounded-cardinality tenant labels for metrics: pinned tenants and the top N by recent volume get
 * their own label, every other tenant is "other". Volumes are estimated with the Space-Saving
 * algorithm in a fixed number of counters, re-ranked periodically and halved at each re-rank so the
 * ranking follows recent traffic. A process never emits more than `pinned + 4·N + 1` tenant label
 * values, however many tenants there are: once that many were handed out, only those are reused.
 */

export const OTHER_TENANT = 'other';

export interface TenantLabelOptions {
  /** How many tenants (besides the pinned ones) get a label of their own. */
  readonly topN: number;
  /** Tenants that always get their own label. */
  readonly pinned?: readonly string[];
  /** How often the top N is recomputed. */
  readonly rerankEveryMs?: number;
  readonly now?: () => number;
}

/** Hands out tenant label values for one process's metrics (see the file comment). */
export class TenantLabels {
  private readonly pinned: ReadonlySet<string>;
  private readonly counts = new Map<string, number>();
  private readonly capacity: number;
  private readonly maxEverLabeled: number;
  private labeled = new Set<string>();
  private readonly everLabeled = new Set<string>();
  private lastRerank: number;

  constructor(private readonly opts: TenantLabelOptions) {
    this.pinned = new Set(opts.pinned ?? []);
    this.capacity = Math.max(64, 8 * opts.topN);
    this.maxEverLabeled = 4 * opts.topN;
    this.lastRerank = (opts.now ?? Date.now)();
  }

  /** The label for `tenantId`, counting `weight` events toward its rank. */
  label(tenantId: string, weight = 1): string {
    if (this.pinned.has(tenantId)) return tenantId;
    if (this.opts.topN <= 0) return OTHER_TENANT;
    this.count(tenantId, weight);
    const now = (this.opts.now ?? Date.now)();
    if (now - this.lastRerank >= (this.opts.rerankEveryMs ?? 60_000)) this.rerank(now);
    // Free slots are handed out at once, so a quiet system labels every tenant it sees.
    if (!this.labeled.has(tenantId) && this.labeled.size < this.opts.topN && this.admissible(tenantId))
      this.admit(tenantId);
    return this.labeled.has(tenantId) ? tenantId : OTHER_TENANT;
  }

  /** The tenants that currently have a label of their own (pinned ones excluded). */
  current(): readonly string[] {
    return [...this.labeled];
  }

  private count(tenantId: string, weight: number): void {
    const c = this.counts.get(tenantId);
    if (c !== undefined) {
      this.counts.set(tenantId, c + weight);
      return;
    }
    if (this.counts.size < this.capacity) {
      this.counts.set(tenantId, weight);
      return;
    }
    // Space-Saving: the newcomer replaces the smallest counter and inherits its count (an overestimate).
    let minKey: string | undefined;
    let min = Number.POSITIVE_INFINITY;
    for (const [k, v] of this.counts) {
      if (v < min) {
        min = v;
        minKey = k;
      }
    }
    if (minKey !== undefined) this.counts.delete(minKey);
    this.counts.set(tenantId, (Number.isFinite(min) ? min : 0) + weight);
  }

  private rerank(now: number): void {
    this.lastRerank = now;
    const ranked = [...this.counts.entries()]
      .filter(([t]) => this.admissible(t))
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, this.opts.topN)
      .map(([t]) => t);
    this.labeled = new Set();
    for (const t of ranked) this.admit(t);
    for (const [k, v] of this.counts) this.counts.set(k, v / 2);
  }

  private admissible(tenantId: string): boolean {
    return this.everLabeled.has(tenantId) || this.everLabeled.size < this.maxEverLabeled;
  }

  private admit(tenantId: string): void {
    this.labeled.add(tenantId);
    this.everLabeled.add(tenantId);
  }
}
