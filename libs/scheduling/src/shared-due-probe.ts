/**
 * One due-probe per tick for all the claim lanes of an instance. The lanes wake on the same tick
 * boundary; the first to ask probes every claimable shard and the others share its answer, so an
 * idle instance costs one statement per tick whatever its lane count.
 */
import { systemClock, type Clock, type DueProbe } from '@tickwork/domain';
import type { ClaimStore } from './ports';
import type { ShardOwnership } from './shard-ownership';

export interface SharedDueProbeOptions {
  readonly owner: string;
  readonly lookaheadMs: number;
  readonly relayAgeMs: number;
  /** An answer younger than this is shared; older ones are probed again. */
  readonly maxAgeMs: number;
  /** Default the system clock. */
  readonly clock?: Clock;
}

export class SharedDueProbe {
  private latest:
    | {
        readonly at: number;
        readonly shards: ReturnType<ShardOwnership['claimable']>;
        readonly probe: Promise<DueProbe>;
      }
    | undefined;

  constructor(
    private readonly fires: Pick<ClaimStore, 'probeDue'>,
    private readonly ownership: Pick<ShardOwnership, 'claimable'>,
    private readonly opts: SharedDueProbeOptions,
  ) {}

  /** A probe of the instance's claimable shards no older than `maxAgeMs`; undefined if it holds none. */
  probe(): Promise<DueProbe> | undefined {
    const shards = this.ownership.claimable();
    if (shards.length === 0) return undefined;
    const now = (this.opts.clock ?? systemClock).now();
    // The ownership replaces its array on every change, so a new one means new shards or epochs.
    const latest = this.latest;
    if (latest && latest.shards === shards && now - latest.at < this.opts.maxAgeMs) return latest.probe;
    const probe = this.fires.probeDue({
      owner: this.opts.owner,
      shards,
      lookaheadMs: this.opts.lookaheadMs,
      relayAgeMs: this.opts.relayAgeMs,
    });
    this.latest = { at: now, shards, probe };
    // A failed probe is not shared: the next lane to ask tries again.
    probe.catch(() => {
      if (this.latest?.probe === probe) this.latest = undefined;
    });
    return probe;
  }
}

/** The part of a probe that concerns `shards` (a lane's share of an instance-wide probe). */
export function probeOfShards(probe: DueProbe, shards: ReadonlySet<number>): DueProbe {
  return {
    now: probe.now,
    held: probe.held.filter((s) => shards.has(s)),
    due: probe.due.filter((d) => shards.has(d.shard)),
    relay: probe.relay.filter((s) => shards.has(s)),
  };
}
