/**
 * Time as the executor and the scheduler's loops see it: the current instant and timers, injected
 * so their state machines can be driven by a ManualClock in unit tests.
 */

/** A pending timer of a Clock (cancel it with clearTimeout). */
export type ClockTimer = object;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once, `ms` from now. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer | undefined): void;
}

/** The process's clock and timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout> | undefined),
};

/** Resolves after `ms` of `clock`'s time. */
export function sleepOn(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/**
 * Calls `fn` every `ms` of `clock`'s time until the returned function is called. `unref`: the
 * timers do not keep the process alive (where the clock's timers support it).
 */
export function everyOn(
  clock: Clock,
  ms: number,
  fn: () => void,
  opts: { unref?: boolean } = {},
): () => void {
  let timer: ClockTimer | undefined;
  let stopped = false;
  const arm = () => {
    timer = clock.setTimeout(tick, ms);
    if (opts.unref) (timer as { unref?: () => void }).unref?.();
  };
  const tick = () => {
    if (stopped) return;
    arm();
    fn();
  };
  arm();
  return () => {
    stopped = true;
    clock.clearTimeout(timer);
  };
}

interface ManualTimer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
}

/**
 * A clock that moves only when told (`advance`), firing its due timers in time order: for unit
 * tests of the loops and state machines that take a Clock.
 */
export class ManualClock implements Clock {
  private timers: ManualTimer[] = [];
  private seq = 0;

  constructor(private ms = 0) {}

  now(): number {
    return this.ms;
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    const timer: ManualTimer = { at: this.ms + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return timer;
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    this.timers = this.timers.filter((t) => t !== timer);
  }

  /** How many timers are pending. */
  get pending(): number {
    return this.timers.length;
  }

  /**
   * Moves the clock `ms` forward, firing each timer due on the way at its own time; between
   * timers the promise jobs they started run (so awaited work settles as it would in real time).
   */
  async advance(ms: number): Promise<void> {
    const until = this.ms + ms;
    for (;;) {
      await settle();
      const next = this.timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.ms = Math.max(this.ms, next.at);
      next.fn();
    }
    this.ms = until;
    await settle();
  }
}

/** Lets pending promise jobs run (a few rounds: chains of awaits settle). */
async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}
