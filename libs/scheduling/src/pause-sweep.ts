/**
 * Resumes jobs paused "until" an instant once it has come ("pause until 09:00 Monday"). It runs
 * in the scheduler: the pause's end is a time-driven event on a job's shard, which the shard's
 * owner already watches, and a resumed job only fires where a scheduler runs. The state is the
 * job row's paused_until, so any restart (or a new owner of the shard) still resumes it; two
 * owners overlapping in a rebalance cannot both resume a job (the rows are locked SKIP LOCKED and
 * re-checked).
 */
export interface PauseSweepOptions {
  /** How often to look (ms); a pause ends at most about this late. */
  readonly everyMs: number;
  /** Jobs resumed per statement; the sweep repeats while a statement fills it. */
  readonly batchSize: number;
  /** The shards this instance holds now. */
  readonly shards: () => readonly number[];
  /** Resumes up to `limit` due jobs of `shards`; returns how many it resumed (or refused). */
  readonly resume: (shards: readonly number[], limit: number) => Promise<number>;
  readonly onResumed?: (count: number) => void;
  readonly onError: (e: Error) => void;
}

/** The timer that calls the store's pause-expiry sweep over the held shards. */
export class PauseSweep {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly opts: PauseSweepOptions) {}

  /** Sweeps now, then every `everyMs` (a sweep still running is not overlapped). */
  start(): void {
    const tick = () => {
      this.running ??= this.sweep().finally(() => (this.running = undefined));
    };
    tick();
    this.timer = setInterval(tick, this.opts.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** One sweep: repeats while a batch comes back full, so a thousand expiring pauses take a few statements. */
  async sweep(): Promise<void> {
    try {
      for (let rounds = 0; rounds < 100 && !this.stopped; rounds++) {
        const shards = this.opts.shards();
        if (shards.length === 0) return;
        const n = await this.opts.resume(shards, this.opts.batchSize);
        if (n > 0) this.opts.onResumed?.(n);
        if (n < this.opts.batchSize) return;
      }
    } catch (e) {
      this.opts.onError(e as Error);
    }
  }
}
