/**
 * Run-history retention: every interval, delete finished runs older than the retention in small
 * batches (each its own short statement, skipping rows that are locked), pausing between batches
 * so the purge never competes with the hot path for long. Several executors may purge at once.
 */
import { sleepOn, systemClock, type Clock, type ClockTimer } from '@tickwork/domain';

export interface RunPurgeStore {
  purgeFinishedRuns(retentionMs: number, batchSize: number): Promise<number>;
}

export interface RunPurgerOptions {
  readonly retentionMs: number;
  readonly intervalMs: number;
  readonly batchSize: number;
  /** Pause between batches of one pass. */
  readonly pauseMs?: number;
  readonly onPurged?: (deleted: number) => void;
  readonly onError?: (e: Error) => void;
  /** Default the system clock. */
  readonly clock?: Clock;
}

export class RunPurger {
  private timer: ClockTimer | undefined;
  private stopped = false;
  private pass: Promise<number> | undefined;
  private readonly clock: Clock;

  constructor(
    private readonly store: RunPurgeStore,
    private readonly opts: RunPurgerOptions,
  ) {
    this.clock = opts.clock ?? systemClock;
  }

  /** Starts the periodic purge. */
  start(): void {
    this.stopped = false;
    const tick = () => {
      this.pass = this.purgeOnce()
        .catch((e: unknown) => {
          this.opts.onError?.(e as Error);
          return 0;
        })
        .finally(() => {
          if (!this.stopped) this.timer = this.clock.setTimeout(tick, this.opts.intervalMs);
        });
    };
    this.timer = this.clock.setTimeout(tick, this.opts.intervalMs);
  }

  /** One full pass: batches until a batch comes back short; returns the rows deleted. */
  async purgeOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await this.store.purgeFinishedRuns(this.opts.retentionMs, this.opts.batchSize);
      total += deleted;
      if (deleted < this.opts.batchSize || this.stopped) break;
      await sleepOn(this.clock, this.opts.pauseMs ?? 50);
    }
    if (total > 0) this.opts.onPurged?.(total);
    return total;
  }

  /** Stops after the batch in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) this.clock.clearTimeout(this.timer);
    await this.pass?.catch(() => undefined);
  }
}
