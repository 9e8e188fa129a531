/**
 * Shard ownership for one scheduler instance. Kafka's group assignment says which shards this
 * instance should own; PostgreSQL leases (with epochs) say which it does. Claims use only
 * shards whose lease is held; a failed renewal fences this instance at once.
 */
import { everyOn, sleepOn, systemClock, type Clock, type ShardEpoch } from '@tickwork/domain';
import type { ShardLeases } from './ports';

export interface OwnershipEvents {
  onChange?(held: readonly ShardEpoch[]): void;
  /** Leases this instance believed it held were gone at renewal: stop claiming them. */
  onSelfFence?(lost: readonly number[]): void;
  /** A new assignment found leases this instance thought it held taken by another (it was away). */
  onLostWhileAway?(shards: readonly number[]): void;
  onError?(error: Error): void;
}

export class ShardOwnership {
  private held: ShardEpoch[] = [];
  private suspended = true;
  /** A rebalance is under way: leases may move to their new owners before our assignment comes. */
  private moving = false;
  private stopped = false;
  /** Bumped by every assignment, so a retrying takeover yields to a newer one. */
  private generation = 0;
  private stopRenewing: (() => void) | undefined;
  private transition: Promise<void> = Promise.resolve();

  constructor(
    private readonly leases: ShardLeases,
    private readonly owner: string,
    private readonly leaseMs: number,
    private readonly events: OwnershipEvents = {},
    private readonly clock: Clock = systemClock,
  ) {}

  /** The shards (with epochs) this instance may claim from right now. */
  claimable(): readonly ShardEpoch[] {
    return this.suspended ? [] : this.held;
  }

  /** True once at least one assignment was taken and not suspended. */
  isActive(): boolean {
    return !this.suspended;
  }

  /** Starts renewing held leases every third of the lease time. */
  start(): void {
    const every = Math.max(200, Math.floor(this.leaseMs / 3));
    this.stopRenewing = everyOn(this.clock, every, () => void this.serialize(() => this.renew()), {
      unref: true,
    });
  }

  /**
   * Renews the held leases now instead of at the next interval: after a lost database session
   * (the process may have been frozen past its lease) a lost lease self-fences at once.
   */
  verifyNow(): Promise<void> {
    return this.serialize(() => this.renew());
  }

  /**
   * The group started a rebalance (or the consumer is rejoining): keep claiming the shards held.
   * Their leases fence every claim against a takeover, so claiming on is safe, and it keeps this
   * instance's fires on time while the group waits (up to a session timeout) for a dead member.
   * A lease taken meanwhile by the shard's new owner is dropped quietly, not a reason to fence.
   */
  rebalancing(): void {
    this.moving = true;
  }

  /** Stop claiming until the next assignment is in (self-fence, shutdown). */
  suspend(): void {
    this.suspended = true;
    this.events.onChange?.([]);
  }

  /** Kafka assigned these shards: acquire new ones, keep the ones still held, release the rest. */
  assign(shards: readonly number[]): Promise<void> {
    this.suspended = true;
    const generation = ++this.generation;
    return this.serialize(async () => {
      // A frozen previous owner may hold a lease row lock until PostgreSQL's timeouts end its
      // transaction: keep trying until the takeover succeeds or a newer assignment replaces this one.
      for (let attempt = 1; ; attempt++) {
        if (generation !== this.generation || this.stopped) return;
        try {
          await this.takeAssignment(shards);
          return;
        } catch (e) {
          this.events.onError?.(
            new Error(
              `taking shards [${shards.join(', ')}] failed (attempt ${attempt}): ${(e as Error).message}`,
            ),
          );
          await sleepOn(this.clock, Math.min(5_000, 250 * attempt));
        }
      }
    });
  }

  private async takeAssignment(shards: readonly number[]): Promise<void> {
    const keep = this.held.filter((h) => shards.includes(h.shard));
    const drop = this.held.filter((h) => !shards.includes(h.shard));
    await this.leases.release(drop, this.owner);
    // Renew what we keep: if someone took it in between, our epoch is stale and we re-acquire.
    const renewed = new Set(await this.leases.renew(keep, this.owner, this.leaseMs));
    const stillHeld = keep.filter((h) => renewed.has(h.shard));
    const lostWhileAway = keep.filter((h) => !renewed.has(h.shard)).map((h) => h.shard);
    if (lostWhileAway.length > 0) this.events.onLostWhileAway?.(lostWhileAway);
    const toAcquire = shards.filter((s) => !renewed.has(s));
    const acquired = await this.leases.acquire(toAcquire, this.owner, this.leaseMs);
    this.held = [...stillHeld, ...acquired].sort((a, b) => a.shard - b.shard);
    this.suspended = false;
    this.moving = false;
    this.events.onChange?.(this.held);
  }

  /** Releases everything (shutdown). */
  async stop(): Promise<void> {
    this.stopRenewing?.();
    this.suspended = true;
    this.stopped = true;
    this.generation++;
    await this.serialize(async () => {
      await this.leases.release(this.held, this.owner);
      this.held = [];
    });
  }

  private async renew(): Promise<void> {
    // Never re-acquire here: a woken zombie would steal shards Kafka gave to someone else.
    // Shards come back only through a new assignment (the app rejoins the group on self-fence).
    if (this.held.length === 0) return;
    let renewed: Set<number>;
    try {
      renewed = new Set(await this.leases.renew(this.held, this.owner, this.leaseMs));
    } catch (e) {
      // Cannot prove we still own anything: fence ourselves until a renewal succeeds.
      const lost = this.held.map((h) => h.shard);
      this.held = [];
      this.events.onSelfFence?.(lost);
      this.events.onError?.(e as Error);
      return;
    }
    const lost = this.held.filter((h) => !renewed.has(h.shard)).map((h) => h.shard);
    if (lost.length > 0) {
      this.held = this.held.filter((h) => renewed.has(h.shard));
      // In a rebalance a lost lease is a shard handed to its next owner, which took it first.
      if (!this.moving) this.events.onSelfFence?.(lost);
      this.events.onChange?.(this.held);
    }
  }

  /** Lease changes run one at a time, in order. */
  private serialize(work: () => Promise<void>): Promise<void> {
    const next = this.transition.then(work).catch((e: unknown) => this.events.onError?.(e as Error));
    this.transition = next;
    return next;
  }
}
