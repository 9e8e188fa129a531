/** A counting semaphore for in-flight fires, shared by every partition and consumer of one executor. */
export class Slots {
  private free: number;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Takes a slot if one is free. */
  tryAcquire(): boolean {
    if (this.free === 0) return false;
    this.free--;
    return true;
  }

  /** Calls `grant` with a slot already taken for it as soon as one frees up (first come, first served). */
  whenFree(grant: () => void): void {
    if (this.tryAcquire()) grant();
    else this.waiters.push(grant);
  }

  /** Resolves with a slot taken for the caller (first come, first served). */
  acquire(): Promise<void> {
    return new Promise((resolve) => this.whenFree(resolve));
  }

  /** Returns a slot, handing it straight to the longest waiter if there is one. */
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
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
}
