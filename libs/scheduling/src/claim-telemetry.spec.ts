/**
 * The claim's decorators over the ClaimStore port, against a scripted store: the traced claim gives
 * each fire the trace context to store (the scheduling request's, for the first occurrence after
 * it) on every build, a retried one too; the metered claim counts skips and parked jobs.
 */
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  claimBuilderOf,
  type ClaimBatch,
  type ClaimBuilder,
  type ClaimRequest,
  type ClaimResult,
  type ClaimableJob,
  type DueJob,
  DEFAULT_POLICIES,
} from '@tickwork/domain';
import { MeteredClaimStore, TracedClaimStore } from './claim-telemetry';
import type { ClaimStore } from './ports';

// The SDK installs the W3C propagator at boot; without it no stored context is readable.
beforeAll(() => propagation.setGlobalPropagator(new W3CTraceContextPropagator()));
afterAll(() => propagation.disable());

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const job: ClaimableJob = {
  jobId: 'j1',
  tenantId: 'acme',
  schedule: { kind: 'once', at: new Date('2026-01-01T00:00:00Z') },
  target: { type: 'kafka', topic: 'out', key: null, headers: {} },
  payload: null,
  policies: DEFAULT_POLICIES,
  shard: 0,
  status: 'SCHEDULED',
  nextRunAt: new Date('2026-01-01T00:00:00Z'),
  nextNominalAt: new Date('2026-01-01T00:00:00Z'),
  nextDstShiftMs: 0,
  fenceToken: 4,
  firesCount: 4,
};
const due: DueJob[] = [
  { job, previousFireInFlight: false, traceOrigin: { traceparent: TRACEPARENT, fence_token: 4 } },
  { job: { ...job, jobId: 'j2' }, previousFireInFlight: false },
];
const build = claimBuilderOf(({ job: j }) => ({
  fires: [{ nominalTime: j.nextNominalAt!, scheduledFor: j.nextRunAt! }],
  skips: [
    { reason: 'COALESCED', firstNominal: j.nextNominalAt!, lastNominal: j.nextNominalAt!, occurrences: 2 },
  ],
  next: null,
}));
const req: ClaimRequest = { owner: 'o', shards: [{ shard: 0, epoch: 1 }], limit: 10, lookaheadMs: 0 };

/** A store that builds `attempts` times (a claim retried job by job builds again) and keeps what it got. */
function scripted(attempts = 1, result: Partial<ClaimResult> = {}) {
  const built: ClaimBatch[] = [];
  const store: ClaimStore = {
    probeDue: () => Promise.reject(new Error('not probed here')),
    claimDueJobs: (_req: ClaimRequest, b: ClaimBuilder) => {
      for (let i = 0; i < attempts; i++) built.push(b(due, new Date('2026-01-01T00:00:00.100Z')));
      const fires = built.at(-1)!.jobs.flatMap((j) => j.fires);
      return Promise.resolve({
        now: new Date(),
        fencedOut: [],
        fires,
        skipped: 0,
        scanned: due.length,
        parked: [],
        saturated: false,
        skips: [],
        ...result,
      });
    },
  };
  return { store, built };
}

describe('TracedClaimStore', () => {
  it('stores with each fire the context its occurrence carries: the request’s for the first after it', async () => {
    const { store, built } = scripted();
    await new TracedClaimStore(store).claimDueJobs(req, build);
    expect(built[0]!.jobs.map((j) => j.traces)).toEqual([
      [JSON.stringify({ traceparent: TRACEPARENT })],
      [null],
    ]);
  });

  it('gives every build its contexts, a retried claim’s too, and leaves the planned writes as they were', async () => {
    const { store, built } = scripted(2);
    const result = await new TracedClaimStore(store).claimDueJobs(req, build);
    expect(built).toHaveLength(2);
    expect(built[1]!.jobs[0]!.traces).toEqual([JSON.stringify({ traceparent: TRACEPARENT })]);
    expect(result.fires.map((f) => f.event.fireId)).toEqual(['j1:5', 'j2:5']);
  });

  it('passes a failed claim on', async () => {
    const store: ClaimStore = {
      probeDue: () => Promise.reject(new Error('not probed here')),
      claimDueJobs: (_r, b) => {
        b(due, new Date());
        return Promise.reject(new Error('connection lost'));
      },
    };
    await expect(new TracedClaimStore(store).claimDueJobs(req, build)).rejects.toThrow('connection lost');
  });
});

describe('MeteredClaimStore', () => {
  it('counts the skipped occurrences and parked jobs of each claim and reports the parked ones', async () => {
    const skips = [{ tenantId: 'acme', reason: 'COALESCED', occurrences: 2 }];
    const { store } = scripted(1, { skips, parked: ['bad'] });
    const recorded: unknown[] = [];
    const parked: string[][] = [];
    const metered = new MeteredClaimStore(
      store,
      { skipped: (s) => recorded.push(['skipped', s]), parked: (n) => recorded.push(['parked', n]) },
      (ids) => parked.push([...ids]),
    );
    await metered.claimDueJobs(req, build);
    expect(recorded).toEqual([
      ['skipped', skips],
      ['parked', 1],
    ]);
    expect(parked).toEqual([['bad']]);
  });
});
