/**
 * A counting semaphore for in-flight fires, shared by every partition and consumer of one executor.
 *
 * Waiters are served by rank, lowest first (FIFO among equal ranks): a partition waits with the due
 * time of the fire it would start, so when slots are scarce (a backlog after an outage) the most
 * overdue fire of any partition starts first, not the partition that asked first.
 */
export class Slots {
  private free: number;
  /** A binary min-heap of waiters by (rank, arrival). */
  private readonly waiters: Waiter[] = [];
  private arrivals = 0;

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Takes a slot if one is free. */
  tryAcquire(): boolean {
    if (this.free === 0) return false;
    this.free--;
    return true;
  }

  /**
   * Calls `grant` with a slot already taken for it as soon as one frees up: waiters of a lower
   * `rank` first, first come first served within a rank (default rank 0).
   */
  whenFree(grant: () => void, rank = 0): void {
    if (this.tryAcquire()) grant();
    else this.push({ grant, rank, arrival: this.arrivals++ });
  }

  /** Resolves with a slot taken for the caller (first come, first served at rank 0). */
  acquire(): Promise<void> {
    return new Promise((resolve) => this.whenFree(resolve));
  }

  /** Returns a slot, handing it straight to the first waiter if there is one. */
  release(): void {
    const next = this.pop();
    if (next) next.grant();
    else this.free++;
  }

  /** Slots taken. */
  inUse(): number {
    return this.size - this.free;
  }

  /** Callers waiting for a slot. */
  waiting(): number {
    return this.waiters.length;
  }

  private push(w: Waiter): void {
    const h = this.waiters;
    h.push(w);
    for (let i = h.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  private pop(): Waiter | undefined {
    const h = this.waiters;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l]!, h[m]!)) m = l;
        if (r < h.length && before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

interface Waiter {
  readonly grant: () => void;
  readonly rank: number;
  readonly arrival: number;
}

function before(a: Waiter, b: Waiter): boolean {
  return a.rank < b.rank || (a.rank === b.rank && a.arrival < b.arrival);
}
