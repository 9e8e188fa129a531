/** The calls and waits of deliveries in flight, cut short together when the executor stops. */
import type { Clock } from '@tickwork/domain';

/** Something `stopping` cuts short. */
export interface Abortable {
  abort(): void;
}

/**
 * Calls are tracked in a set per `stopping` signal (one listener each) rather than each adding a
 * listener to it: with a thousand calls in flight, per-call listeners make every removal a linear scan.
 */
export class InFlight {
  private readonly bySignal = new Map<AbortSignal, Set<Abortable>>();

  constructor(private readonly clock: Clock) {}

  /** Registers a call to be aborted when `stopping` fires; returns the unregistration. */
  track(stopping: AbortSignal, call: Abortable): () => void {
    if (stopping.aborted) {
      call.abort();
      return () => undefined;
    }
    let calls = this.bySignal.get(stopping);
    if (!calls) {
      const set = new Set<Abortable>();
      calls = set;
      this.bySignal.set(stopping, set);
      stopping.addEventListener('abort', () => set.forEach((c) => c.abort()), { once: true });
    }
    calls.add(call);
    return () => calls.delete(call);
  }

  /**
   * Waits for `work` (produces: they cannot be recalled), or until `stopping` fires: then
   * undefined. Tracked like a leased call, but without an AbortController per produce: creating
   * one costs more than the rest of a produce's bookkeeping.
   */
  async untilStopped<T>(work: Promise<T>, stopping: AbortSignal): Promise<T | undefined> {
    let stop!: () => void;
    const stopped = new Promise<undefined>((resolve) => (stop = () => resolve(undefined)));
    const untrack = this.track(stopping, { abort: stop });
    try {
      return await Promise.race([work, stopped]);
    } finally {
      untrack();
    }
  }

  /** Waits `ms` of the clock's time, or until `stopping` fires. */
  pause(ms: number, stopping: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let untrack: () => void = () => undefined;
      const wake = () => {
        this.clock.clearTimeout(timer);
        untrack();
        resolve();
      };
      const timer = this.clock.setTimeout(wake, ms);
      untrack = this.track(stopping, { abort: wake });
    });
  }
}
