/**
 * Shard ownership over a schedule store sharded across databases: one ShardOwnership per database,
 * each over the leases in its own database. A database that cannot be reached fences only its own
 * shards (their renewal fails there); the shards of the other databases stay held and claimed.
 */
import { systemClock, type Clock, type ShardEpoch } from '@tickwork/domain';
import type { ShardLeases } from './ports';
import { ShardOwnership, type OwnershipEvents } from './shard-ownership';

/** What the scheduler asks of its shard ownership, one database or several. */
export type ShardOwner = Pick<
  ShardOwnership,
  'claimable' | 'isActive' | 'start' | 'verifyNow' | 'assign' | 'rebalancing' | 'suspend' | 'stop'
>;

/** A database of the store: its shards and the leases stored in it. */
export interface LeaseDatabase {
  readonly shards: readonly number[];
  readonly leases: ShardLeases;
}

export class ShardOwnershipByDatabase implements ShardOwner {
  private readonly members: { readonly shards: ReadonlySet<number>; readonly ownership: ShardOwnership }[];
  // claimable() answers the same array until a member's changes (the due probes key on identity).
  private parts: (readonly ShardEpoch[])[] = [];
  private joined: readonly ShardEpoch[] = [];

  constructor(
    databases: readonly LeaseDatabase[],
    owner: string,
    leaseMs: number,
    events: OwnershipEvents = {},
    clock: Clock = systemClock,
  ) {
    this.members = databases.map((d) => ({
      shards: new Set(d.shards),
      ownership: new ShardOwnership(
        d.leases,
        owner,
        leaseMs,
        { ...events, onChange: () => events.onChange?.(this.claimable()) },
        clock,
      ),
    }));
  }

  /** The ownership of database `index` (in the order given): its fire loops and sweeps claim from it. */
  of(index: number): ShardOwnership {
    return this.members[index]!.ownership;
  }

  /** The claimable shards of every database, by shard. */
  claimable(): readonly ShardEpoch[] {
    const parts = this.members.map((m) => m.ownership.claimable());
    if (parts.length !== this.parts.length || parts.some((p, i) => p !== this.parts[i])) {
      this.parts = parts;
      this.joined = parts.flat().sort((a, b) => a.shard - b.shard);
    }
    return this.joined;
  }

  isActive(): boolean {
    return this.members.some((m) => m.ownership.isActive());
  }

  start(): void {
    for (const m of this.members) m.ownership.start();
  }

  async verifyNow(): Promise<void> {
    await Promise.all(this.members.map((m) => m.ownership.verifyNow()));
  }

  /** Each database takes its part of the assignment on its own: one that cannot be reached retries without holding the others back. */
  async assign(shards: readonly number[]): Promise<void> {
    await Promise.all(this.members.map((m) => m.ownership.assign(shards.filter((s) => m.shards.has(s)))));
  }

  rebalancing(): void {
    for (const m of this.members) m.ownership.rebalancing();
  }

  suspend(): void {
    for (const m of this.members) m.ownership.suspend();
  }

  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => m.ownership.stop()));
  }
}
