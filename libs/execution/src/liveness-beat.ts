/**
 * The executor's liveness beat: once a second it tells the ledger it is alive, so a run leased by
 * a process that died is taken over seconds after the death (by the restarted process, or by the
 * executor the partitions moved to) instead of when the run's lease expires. The ledger judges
 * death only against another process's unbroken beats, so a database outage kills no one.
 */
import { systemClock, type Clock, type ClockTimer } from '@tickwork/domain';

/** The liveness operations of the ledger (ExecutorLivenessRepository implements them). */
export interface LivenessStore {
  beat(issuer: string, instanceId: string, continuityMs: number): Promise<void>;
  retire(issuer: string): Promise<void>;
  forgetSilent(olderThanMs: number): Promise<number>;
}

export interface LivenessBeatOptions {
  /** The lease-token issuer of this process (FireExecutor.leaseIssuer). */
  readonly issuer: string;
  /** The executor's instance id, for operators reading the table. */
  readonly instanceId: string;
  /** Time between beats (default 1 s). */
  readonly intervalMs?: number;
  /** A beat later than this after the previous one starts a new unbroken run (default 2.5 beats). */
  readonly continuityMs?: number;
  /** Rows of processes silent this long are removed now and then (default 1 hour). */
  readonly forgetAfterMs?: number;
  readonly onError?: (e: Error) => void;
  /** Default the system clock. */
  readonly clock?: Clock;
}

/** Beats between two clean-ups of long-dead processes' rows. */
const FORGET_EVERY_BEATS = 600;

export class LivenessBeat {
  private timer: ClockTimer | undefined;
  private stopped = false;
  private inFlight: Promise<void> | undefined;
  private beats = 0;
  private readonly intervalMs: number;
  private readonly continuityMs: number;

  constructor(
    private readonly store: LivenessStore,
    private readonly opts: LivenessBeatOptions,
  ) {
    this.intervalMs = opts.intervalMs ?? 1_000;
    this.continuityMs = opts.continuityMs ?? Math.round(this.intervalMs * 2.5);
  }

  /** Beats once, then every interval until stopped; a failed beat is reported and the next one tried. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.beatOnce().catch((e: unknown) => this.opts.onError?.(e as Error));
    this.schedule();
  }

  /** One beat, with the occasional clean-up of long-dead rows. */
  async beatOnce(): Promise<void> {
    await this.store.beat(this.opts.issuer, this.opts.instanceId, this.continuityMs);
    if (this.beats++ % FORGET_EVERY_BEATS === 0)
      await this.store.forgetSilent(this.opts.forgetAfterMs ?? 3_600_000);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = (this.opts.clock ?? systemClock).setTimeout(() => {
      this.inFlight = this.beatOnce()
        .catch((e: unknown) => this.opts.onError?.(e as Error))
        .finally(() => this.schedule());
    }, this.intervalMs);
  }

  /**
   * Stops beating. `retire`: the process is done with its leases (finished or released), so its
   * row goes; otherwise the row stays and ages, as a dead process's would.
   */
  async stop(retire: boolean): Promise<void> {
    this.stopped = true;
    if (this.timer) (this.opts.clock ?? systemClock).clearTimeout(this.timer);
    await this.inFlight?.catch(() => undefined);
    if (retire)
      await this.store.retire(this.opts.issuer).catch((e: unknown) => this.opts.onError?.(e as Error));
  }
}
