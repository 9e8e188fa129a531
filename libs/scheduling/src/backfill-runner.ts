/**
 * Fires backfills in the scheduler holding their job's shard: every tick, the active backfills of
 * the held shards whose next slot has come each take one paced step (BackfillStore.fireNext),
 * within the tenant's fire-rate cap (the fire loop's token buckets, so scheduled and backfill fires
 * share it). The fires go into the outbox as BACKFILL batches, which the fire loop's relay
 * publishes at once. The state is in the store: a new owner of the shard goes on where the last
 * one stopped, at the same pace.
 */
import { pacedFires, type ShardEpoch, type TenantTokenBuckets } from '@tickwork/domain';
import type { BackfillStore } from './ports';

export interface BackfillRunnerOptions {
  readonly owner: string;
  /** How often to look for due steps (ms). */
  readonly everyMs: number;
  /** Most fires one step makes (a backfill's pace may allow more after a stall). */
  readonly maxPerStep: number;
  /** Backfills stepped per tick at most. */
  readonly maxPerTick: number;
  readonly shards: () => readonly ShardEpoch[];
  readonly buckets?: TenantTokenBuckets;
  readonly now?: () => number;
}

export interface BackfillRunnerEvents {
  readonly onFired?: (
    fired: readonly { readonly tenantId: string; readonly fireId: string }[],
    backfillId: number,
  ) => void;
  readonly onFinished?: (backfillId: number, status: string) => void;
  readonly onError: (e: Error) => void;
}

/** The timer that steps the held shards' backfills. */
export class BackfillRunner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private active = 0;
  private lastCountMs = 0;

  constructor(
    private readonly store: BackfillStore,
    private readonly opts: BackfillRunnerOptions,
    private readonly events: BackfillRunnerEvents,
  ) {}

  /** Active backfills of the held shards, as last counted (about once a second). */
  activeBackfills(): number {
    return this.active;
  }

  start(): void {
    const tick = () => {
      this.running ??= this.step().finally(() => (this.running = undefined));
    };
    this.timer = setInterval(tick, this.opts.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** One pass: a step of each due backfill of the held shards. */
  async step(): Promise<void> {
    try {
      const shards = this.opts.shards();
      const now = this.opts.now ?? Date.now;
      // Counted about once a second; an idle instance (no active backfill) looks no more often,
      // so a new backfill starts within a second and idling costs one statement a second.
      if (now() - this.lastCountMs >= 1_000) {
        this.lastCountMs = now();
        this.active = await this.store.activeCount(shards.map((s) => s.shard));
      }
      if (shards.length === 0 || this.active === 0) return;
      const due = await this.store.due(this.opts.owner, shards, this.opts.maxPerTick);
      for (const d of due) {
        if (this.stopped) return;
        const buckets = this.opts.buckets;
        const step = await this.store.fireNext({
          owner: this.opts.owner,
          due: d,
          pace: (nextAtMs, nowMs, rate, left) =>
            pacedFires(
              nextAtMs,
              nowMs,
              rate,
              Math.min(left, this.opts.maxPerStep, buckets ? buckets.available(d.tenantId, now()) : Infinity),
            ),
        });
        if (step.fired.length > 0) {
          buckets?.consume(d.tenantId, step.fired.length, now());
          this.events.onFired?.(step.fired, d.backfillId);
        }
        if (step.status !== null && step.status !== 'RUNNING' && step.status !== 'PENDING')
          this.events.onFinished?.(d.backfillId, step.status);
      }
    } catch (e) {
      this.events.onError(e as Error);
    }
  }
}
