/**
 * FireLoop's pacing on a ManualClock, against scripted claims (the real claim runs in
 * test/integration): an idle loop ticks on the tick boundaries, a slow tick waits only for the next
 * boundary, a full batch claims again at once, the outbox relay runs when the probe saw orphans and
 * otherwise at most once a second on follow-up claims, and stop() wakes a sleeping loop.
 */
import {
  ManualClock,
  sleepOn,
  type ClaimPlanner,
  type ClaimRequest,
  type ClaimResult,
  type ClaimedFire,
  type DueProbe,
  type FireEvent,
  type ShardEpoch,
} from '@tickwork/domain';
import type { FirePublisher } from './fire-publisher';
import { FireLoop } from './fire-loop';
import type { ClaimStore, FireOutbox } from './ports';
import type { ShardOwnership } from './shard-ownership';

const TICK_MS = 1_000;
const BATCH = 10;
const HELD: readonly ShardEpoch[] = [{ shard: 0, epoch: 1 }];

function fireOf(i: number): ClaimedFire {
  const at = new Date(0);
  const event: FireEvent = {
    jobId: `job-${i}`,
    tenantId: 't',
    fenceToken: i,
    fireId: `job-${i}:${i}`,
    scheduledFor: at,
    nominalTime: at,
    attempt: 1,
    target: { type: 'kafka', topic: 'out', key: null, headers: {} },
    payload: null,
  };
  return { shard: 0, batchId: i, event };
}

/** The claim side in memory: each claim answers the next scripted batch size (then nothing). */
class Fires {
  readonly probes: number[] = [];
  readonly claims: number[] = [];
  readonly relays: number[] = [];
  readonly enqueued: number[] = [];
  /** Fires per claim, in order; a claim past the end finds nothing due. */
  batches: number[] = [];
  /** Shards the probe reports as having orphaned outbox batches. */
  relay: number[] = [];
  /** How long (clock time) a probe takes. */
  probeMs = 0;
  private next = 1;

  constructor(private readonly clock: ManualClock) {}

  async probeDue(): Promise<DueProbe> {
    this.probes.push(this.clock.now());
    if (this.probeMs > 0) await sleepOn(this.clock, this.probeMs);
    const due = this.batches.length > 0 ? [{ shard: 0, tenant_id: 't' }] : [];
    return { now: new Date(this.clock.now()), held: [0], due, relay: this.relay };
  }

  async claimDueJobs(_req: ClaimRequest): Promise<ClaimResult> {
    this.claims.push(this.clock.now());
    const n = this.batches.shift() ?? 0;
    const fires = Array.from({ length: n }, () => fireOf(this.next++));
    return {
      now: new Date(this.clock.now()),
      fencedOut: [],
      fires,
      skipped: 0,
      scanned: n,
      parked: [],
      saturated: false,
      skips: [],
    };
  }

  async pendingFires(): Promise<ClaimedFire[]> {
    this.relays.push(this.clock.now());
    return [];
  }

  async markEnqueued(batchIds: readonly number[]): Promise<void> {
    this.enqueued.push(...batchIds);
  }
}

function setup(start = 10_000) {
  const clock = new ManualClock(start);
  const fires = new Fires(clock);
  const published: FireEvent[] = [];
  const publisher = {
    publish: async (events: readonly FireEvent[]) => void published.push(...events),
  } as unknown as FirePublisher;
  const ownership = { claimable: () => HELD } as unknown as ShardOwnership;
  const loop = new FireLoop(
    fires as unknown as ClaimStore,
    fires as unknown as FireOutbox,
    ownership,
    publisher,
    (() => {
      throw new Error('not planned here');
    }) as unknown as ClaimPlanner,
    { owner: 'sched-a', tickMs: TICK_MS, batchSize: BATCH, lookaheadMs: 0, relayAgeMs: 5_000, clock },
  );
  return { clock, fires, published, loop };
}

describe('FireLoop (ManualClock)', () => {
  it('an idle loop probes once per tick, on the tick boundaries', async () => {
    const { clock, fires, loop } = setup(10_250);
    loop.start();
    await clock.advance(0);
    expect(fires.probes).toEqual([10_250]);
    await clock.advance(749);
    expect(fires.probes).toEqual([10_250]);
    await clock.advance(1);
    await clock.advance(2_000);
    expect(fires.probes).toEqual([10_250, 11_000, 12_000, 13_000]);
    expect(fires.claims).toEqual([]); // nothing was due
    await stopped(loop, clock);
  });

  it('a slow tick waits only for the next boundary; one longer than a tick goes again at once', async () => {
    const { clock, fires, loop } = setup(10_000);
    fires.probeMs = 300;
    loop.start();
    await clock.advance(999);
    expect(fires.probes).toEqual([10_000]); // done at 10 300, it sleeps until 11 000
    fires.probeMs = 1_200;
    await clock.advance(1);
    await clock.advance(1_200); // the tick from 11 000 ends at 12 200, past its tick: the next starts then
    expect(fires.probes).toEqual([10_000, 11_000, 12_200]);
    fires.probeMs = 0;
    await stopped(loop, clock);
  });

  it('claims again at once after a full batch, and waits for the next tick after a partial one', async () => {
    const { clock, fires, published, loop } = setup(10_000);
    fires.batches = [BATCH, BATCH, 3];
    loop.start();
    await clock.advance(0);
    expect(fires.claims).toEqual([10_000, 10_000, 10_000]);
    // Follow-up claims skip the shared probe.
    expect(fires.probes).toEqual([10_000]);
    expect(published).toHaveLength(2 * BATCH + 3);
    await clock.advance(TICK_MS);
    expect(fires.probes).toEqual([10_000, 11_000]);
    await stopped(loop, clock);
    expect(fires.enqueued).toHaveLength(2 * BATCH + 3);
  });

  it('relays when the probe saw orphaned batches, and on follow-up claims at most once a second', async () => {
    const { clock, fires, loop } = setup(10_000);
    fires.relay = [0];
    fires.batches = [BATCH, BATCH, BATCH, BATCH, 1];
    // Each claim takes 600 ms of the clock, so the follow-ups come at 600 ms steps.
    const claim = fires.claimDueJobs.bind(fires);
    fires.claimDueJobs = async (req) => {
      const r = await claim(req);
      await sleepOn(clock, 600);
      return r;
    };
    loop.start();
    await clock.advance(3_000);
    expect(fires.claims).toEqual([10_000, 10_600, 11_200, 11_800, 12_400]);
    // The probe's relay at 10 000; then follow-ups relay only once 1 s has passed since.
    expect(fires.relays).toEqual([10_000, 11_200, 12_400]);
    await stopped(loop, clock);
  });

  it('stop() wakes a sleeping loop and returns', async () => {
    const { clock, fires, loop } = setup(10_000);
    loop.start();
    await clock.advance(0);
    await loop.stop();
    await clock.advance(5_000);
    expect(fires.probes).toEqual([10_000]);
  });
});

/** Stops the loop (its sleep woken by stop). */
async function stopped(loop: FireLoop, clock: ManualClock): Promise<void> {
  const stopping = loop.stop();
  await clock.advance(5_000); // the tick in hand finishes
  await stopping;
}
