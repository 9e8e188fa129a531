/**
 * The fire loop: each tick, claim what is due in the shards this instance holds (claim +
 * outbox + advance commit together), publish the fires, then mark them enqueued. A crash
 * between commit and publish leaves outbox rows that the shard's next owner re-publishes.
 */
import {
  claimBuilderOf,
  fairShares,
  systemClock,
  type ClaimBuilder,
  type ClaimedFire,
  type ClaimPlanner,
  type Clock,
  type ClockTimer,
  type DueProbe,
  type TenantTokenBuckets,
} from '@tickwork/domain';
import type { FirePublisher } from './fire-publisher';
import { OnTimeRelease } from './on-time-release';
import type { ClaimStore, FireOutbox } from './ports';
import { probeOfShards, SharedDueProbe } from './shared-due-probe';
import type { ShardOwnership } from './shard-ownership';

export interface FireLoopOptions {
  readonly owner: string;
  readonly tickMs: number;
  readonly batchSize: number;
  /**
   * Occurrences due within this many ms are claimed now, and each is published when its scheduled
   * time comes (by this process's clock): the claim's database work is done before the herd is due.
   */
  readonly lookaheadMs: number;
  /**
   * With lookahead: while the instance holds this many fires for their time (shared by its lanes,
   * so it may hold up to a batch per lane more), a lane claims only what is due now. A herd due at
   * once is then claimed before it is due up to this bound, not a few batches, and memory stays
   * bounded. Default 100,000.
   */
  readonly maxHeldFires?: number;
  /** Outbox rows older than this are assumed orphaned by a dead claimer and re-published. */
  readonly relayAgeMs: number;
  /** Per-tenant fire-rate caps (this instance's share); absent = no caps. */
  readonly buckets?: TenantTokenBuckets;
  /**
   * This loop claims only the held shards with `shard % lane.count === lane.index`, so several
   * loops of one instance claim in parallel without contending for the same rows.
   */
  readonly lane?: { readonly index: number; readonly count: number };
  /** The instance's probe, shared by its lanes; absent = this loop probes for itself. */
  readonly dueProbe?: SharedDueProbe;
  /** Where fires claimed early wait for their time, shared by the lanes; absent = this loop's own. */
  readonly release?: OnTimeRelease;
  /** The loop's time and timers (tick pacing, relay cadence, rate caps); default the system clock. */
  readonly clock?: Clock;
}

export interface FireLoopEvents {
  onClaimed?(fires: readonly ClaimedFire[], skipped: number, dbNow: Date): void;
  /** `ackedAtMs`, when given: when Kafka acknowledged each fire (fires held for their time). */
  onEnqueued?(fires: readonly ClaimedFire[], relayed: boolean, ackedAtMs?: readonly number[]): void;
  onFencedOut?(shards: readonly number[]): void;
  /** Tenants whose rate cap held back due work this tick. */
  onDeferred?(tenantIds: readonly string[]): void;
  onError?(error: Error): void;
}

const DEFAULT_MAX_HELD_FIRES = 100_000;
/** A held fire may wait this much past its time, so fires due a few ms apart share one send. */
const RELEASE_GRACE_MS = 10;

export class FireLoop {
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private lastRelay = 0;
  /**
   * Batches being published while the next is claimed: at most one without lookahead; with it,
   * every batch held for its time (bounded by `maxHeldFires`).
   */
  private readonly publishing = new Set<Promise<void>>();
  /**
   * The outbox batches of `publishing`. The relay leaves them alone: a batch held for its time, or
   * slow to be acknowledged in a herd, outlives the relay age without being orphaned, and relaying
   * it would publish every fire of it twice.
   */
  private readonly publishingBatches = new Set<number>();
  /** This lane's claimed fires on their way to the release (being encoded), not yet in its count. */
  private awaitingHold = 0;
  /**
   * Fires this lane claimed whose publish failed (Kafka down), whole batches in claim order. They
   * are sent again before the lane claims anything new: after an outage the backlog goes out
   * oldest first and at once, not after the relay age, and a lane that cannot publish stops
   * claiming instead of filling the outbox. Their batches stay in `publishingBatches`.
   */
  private unsent: ClaimedFire[] = [];
  /** The last claim filled its batch: claim again at once, probing only this lane's shards. */
  private followUp = false;
  private readonly dueProbe: SharedDueProbe;
  private readonly release: OnTimeRelease;
  private readonly clock: Clock;
  /** The domain's claim builder over the planner: what each claim writes. */
  private readonly build: ClaimBuilder;

  constructor(
    private readonly fires: ClaimStore,
    private readonly outbox: FireOutbox,
    private readonly ownership: Pick<ShardOwnership, 'claimable'>,
    private readonly publisher: FirePublisher,
    planner: ClaimPlanner,
    private readonly opts: FireLoopOptions,
    private readonly events: FireLoopEvents = {},
  ) {
    this.clock = opts.clock ?? systemClock;
    this.build = claimBuilderOf(planner);
    this.dueProbe =
      opts.dueProbe ??
      new SharedDueProbe(fires, ownership, {
        owner: opts.owner,
        lookaheadMs: opts.lookaheadMs,
        relayAgeMs: opts.relayAgeMs,
        maxAgeMs: opts.tickMs / 2,
        clock: this.clock,
      });
    this.release = opts.release ?? releaseThrough(publisher, this.clock);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Finishes the tick in hand and stops. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    // Fires claimed early still go out at their time: stopping waits at most the lookahead.
    await Promise.all(this.publishing);
  }

  private async run(): Promise<void> {
    while (this.running) {
      const started = this.clock.now();
      let claimed = 0;
      try {
        claimed = await this.tick();
      } catch (e) {
        this.events.onError?.(e as Error);
      }
      // A full batch means more is due: go again at once. Otherwise wait for the next tick
      // boundary: every lane of the instance wakes on the same one and shares one probe.
      this.followUp = claimed >= this.opts.batchSize;
      if (!this.followUp) {
        const tick = this.opts.tickMs;
        const now = this.clock.now();
        await this.sleep(now - started >= tick ? 0 : tick - (now % tick));
      }
    }
  }

  /**
   * One tick: probe (shared with the other lanes), relay orphaned outbox batches if the probe
   * saw any, claim a batch, publish it, confirm it. A follow-up tick after a full batch skips
   * the shared probe (it is stale by then) and relays only now and then.
   */
  async tick(): Promise<number> {
    const lane = this.opts.lane;
    const shards = this.ownership.claimable().filter((s) => !lane || s.shard % lane.count === lane.index);
    if (this.unsent.length > 0) await this.sendUnsent(new Set(shards.map((s) => s.shard)));
    if (shards.length === 0) return 0;
    let probe: DueProbe | undefined;
    if (!this.followUp) {
      const all = await this.dueProbe.probe();
      if (!all) return 0;
      probe = probeOfShards(all, new Set(shards.map((s) => s.shard)));
      const fencedOut = shards.map((s) => s.shard).filter((s) => !probe!.held.includes(s));
      if (fencedOut.length > 0) this.events.onFencedOut?.(fencedOut);
    }
    const relayNow = probe
      ? probe.relay.length > 0
      : this.clock.now() - this.lastRelay >= Math.max(this.opts.tickMs, 1_000);
    if (relayNow) {
      this.lastRelay = this.clock.now();
      const orphaned = await this.outbox.pendingFires({
        owner: this.opts.owner,
        shards,
        minAgeMs: this.opts.relayAgeMs,
        limit: this.opts.batchSize,
        exclude: [...this.publishingBatches],
      });
      if (orphaned.length > 0) await this.enqueue(orphaned, true);
    }
    const buckets = this.opts.buckets;
    const deferred: string[] = [];
    const tenantCaps = (tenants: readonly string[]) => {
      const nowMs = this.clock.now();
      const shares = fairShares(
        tenants,
        this.opts.batchSize,
        (t) => buckets?.available(t, nowMs) ?? Number.POSITIVE_INFINITY,
      );
      for (const s of shares) if (s.deferredByQuota) deferred.push(s.tenantId);
      return new Map(shares.map((s) => [s.tenantId, s.cap]));
    };
    if (probe && probe.due.length === 0) return 0;
    // Enough is held for its time: claim only what is due now, until some of it has gone out.
    const held = this.release.size + this.awaitingHold;
    const lookaheadMs =
      held >= (this.opts.maxHeldFires ?? DEFAULT_MAX_HELD_FIRES) ? 0 : this.opts.lookaheadMs;
    const result = await this.fires.claimDueJobs(
      {
        owner: this.opts.owner,
        shards: probe ? shards.filter((s) => probe.held.includes(s.shard)) : shards,
        limit: this.opts.batchSize,
        lookaheadMs,
        tenantCaps,
        ...(probe ? { probe } : {}),
      },
      this.build,
    );
    if (buckets && result.fires.length > 0) {
      const perTenant = new Map<string, number>();
      for (const f of result.fires)
        perTenant.set(f.event.tenantId, (perTenant.get(f.event.tenantId) ?? 0) + 1);
      const nowMs = this.clock.now();
      for (const [t, n] of perTenant) buckets.consume(t, n, nowMs);
    }
    if (deferred.length > 0) this.events.onDeferred?.(deferred);
    if (result.fencedOut.length > 0) this.events.onFencedOut?.(result.fencedOut);
    if (result.fires.length > 0 || result.skipped > 0)
      this.events.onClaimed?.(result.fires, result.skipped, result.now);
    if (result.fires.length > 0) {
      // Publishing overlaps the next claim: the database and Kafka work at the same time. Without
      // lookahead one batch is in flight; with it, every batch held for its time (bounded by
      // maxHeldFires above), so one due later never holds back one due sooner. A failed publish
      // leaves its fires in the outbox for the relay.
      if (this.opts.lookaheadMs === 0) while (this.publishing.size >= 1) await Promise.race(this.publishing);
      const batches = new Set(result.fires.map((f) => f.batchId));
      for (const b of batches) this.publishingBatches.add(b);
      // The batch before failed meanwhile: this one goes out after it, with the next tick's resend.
      if (this.unsent.length > 0) {
        this.unsent.push(...result.fires);
        return result.saturated ? this.opts.batchSize : result.scanned;
      }
      const publishing: Promise<void> = this.enqueue(result.fires, false)
        .then(
          () => {
            for (const b of batches) this.publishingBatches.delete(b);
          },
          (e: unknown) => {
            // Kept, with their batches still excluded from the relay, for the next tick to send.
            this.unsent.push(...result.fires);
            this.events.onError?.(e as Error);
          },
        )
        .finally(() => this.publishing.delete(publishing));
      this.publishing.add(publishing);
    }
    return result.saturated ? this.opts.batchSize : result.scanned;
  }

  /**
   * Sends the fires whose publish failed, in due order, and returns once they are out; throws
   * (the tick ends) while Kafka still refuses them. Batches with a shard this lane no longer holds
   * are dropped whole (a batch is confirmed whole): the shard's new owner relays them.
   */
  private async sendUnsent(held: ReadonlySet<number>): Promise<void> {
    // Publishes in flight that fail now join the list: wait for them, so nothing overtakes them.
    await Promise.all(this.publishing);
    const lost = new Set(this.unsent.filter((f) => !held.has(f.shard)).map((f) => f.batchId));
    const keep = this.unsent.filter((f) => !lost.has(f.batchId));
    for (const b of lost) this.publishingBatches.delete(b);
    this.unsent = keep;
    if (keep.length === 0) return;
    const sorted = [...keep].sort((a, b) => dueTime(a) - dueTime(b));
    await this.enqueue(sorted, false);
    this.unsent = [];
    for (const b of new Set(keep.map((f) => f.batchId))) this.publishingBatches.delete(b);
  }

  private async enqueue(fires: readonly ClaimedFire[], relayed: boolean): Promise<void> {
    // A relayed batch is older than the relay age, which is at least the lookahead: all due.
    if (relayed || this.opts.lookaheadMs === 0) {
      await this.publisher.publish(fires.map((f) => f.event));
      await this.confirm(fires, relayed);
      return;
    }
    // Held for their time: sent in the order they come due.
    const sorted = [...fires].sort((a, b) => a.event.scheduledFor.getTime() - b.event.scheduledFor.getTime());
    const events = sorted.map((f) => f.event);
    // Counted against maxHeldFires while being encoded, before the release holds them.
    this.awaitingHold += events.length;
    let encoded: Awaited<ReturnType<FirePublisher['encodeAhead']>>;
    try {
      encoded = await this.publisher.encodeAhead(events);
    } finally {
      this.awaitingHold -= events.length;
    }
    const ackedAt = await this.release.hold(events, encoded);
    await this.confirm(sorted, relayed, ackedAt);
  }

  private async confirm(
    fires: readonly ClaimedFire[],
    relayed: boolean,
    ackedAtMs?: readonly number[],
  ): Promise<void> {
    // Every fire of these batches was acknowledged: a claim or a relay publishes whole batches.
    await this.outbox.markEnqueued(fires.map((f) => f.batchId));
    this.events.onEnqueued?.(fires, relayed, ackedAtMs);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t: ClockTimer = this.clock.setTimeout(resolve, ms);
      this.wake = () => {
        this.clock.clearTimeout(t);
        resolve();
      };
    });
  }
}

/** The release of fires claimed early, sent through `publisher` (shared by an instance's lanes). */
export function releaseThrough(publisher: FirePublisher, clock: Clock = systemClock): OnTimeRelease {
  return new OnTimeRelease(
    {
      send: (events, encoded) => (encoded ? publisher.sendEncoded(encoded) : publisher.publish(events)),
    },
    RELEASE_GRACE_MS,
    () => clock.now(),
  );
}

/** When a claimed fire came due: a coalesced fire since its first missed occurrence. */
function dueTime(f: ClaimedFire): number {
  return (f.event.dueSince ?? f.event.scheduledFor).getTime();
}
