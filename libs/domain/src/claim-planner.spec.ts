import { initialOccurrence, planDueOccurrences } from './claim-planner';
import type { Job } from './job';
import { DEFAULT_POLICIES } from './policies';

const base: Job = {
  jobId: 'j1',
  tenantId: 't',
  schedule: { kind: 'interval', everyMs: 1_000, anchor: new Date('2026-01-01T00:00:00Z'), maxFires: 3 },
  target: { type: 'kafka', topic: 'x', key: null, headers: {} },
  payload: null,
  policies: DEFAULT_POLICIES,
  labels: {},
  shard: 0,
  status: 'SCHEDULED',
  nextRunAt: new Date('2026-01-01T00:00:01Z'),
  nextNominalAt: new Date('2026-01-01T00:00:01Z'),
  fenceToken: 1,
  firesCount: 1,
  version: 1,
  createdAt: new Date(0),
  updatedAt: new Date(0),
};
const opts = { maxCatchUp: 10, herdJitterMs: 0 };

describe('planDueOccurrences', () => {
  it('fires the due occurrence and plans the next one', () => {
    const p = planDueOccurrences(base, base.nextNominalAt!, new Date('2026-01-01T00:00:01.100Z'), opts);
    expect(p.fires.map((f) => f.nominalTime.toISOString())).toEqual(['2026-01-01T00:00:01.000Z']);
    expect(p.next?.nominalTime.toISOString()).toBe('2026-01-01T00:00:02.000Z');
  });

  it('skips with OVERLAP while the previous fire is in flight, without spending max_fires', () => {
    const job: Job = { ...base, policies: { ...DEFAULT_POLICIES, overlap: 'FORBID' } };
    const p = planDueOccurrences(job, job.nextNominalAt!, new Date('2026-01-01T00:00:01.100Z'), opts, true);
    expect(p.fires).toEqual([]);
    expect(p.skips).toEqual([
      {
        reason: 'OVERLAP',
        firstNominal: new Date('2026-01-01T00:00:01Z'),
        lastNominal: new Date('2026-01-01T00:00:01Z'),
        occurrences: 1,
      },
    ]);
    // Two fires are still left of max_fires = 3 (one done): the schedule goes on.
    expect(p.next?.nominalTime.toISOString()).toBe('2026-01-01T00:00:02.000Z');
  });

  it('ignores the in-flight flag for ALLOW jobs', () => {
    const p = planDueOccurrences(base, base.nextNominalAt!, new Date('2026-01-01T00:00:01.100Z'), opts, true);
    expect(p.fires).toHaveLength(1);
  });

  it('plans an occurrence due within the lookahead, at its own time', () => {
    const early = new Date('2026-01-01T00:00:00.400Z');
    expect(planDueOccurrences(base, base.nextNominalAt!, early, opts).fires).toEqual([]);
    const p = planDueOccurrences(base, base.nextNominalAt!, early, { ...opts, lookaheadMs: 1_000 });
    expect(p.fires.map((f) => f.scheduledFor.toISOString())).toEqual(['2026-01-01T00:00:01.000Z']);
    expect(p.next?.nominalTime.toISOString()).toBe('2026-01-01T00:00:02.000Z');
  });

  it('coalesces only what was missed before now: occurrences within the lookahead fire on their own', () => {
    const everySecond: Job = {
      ...base,
      schedule: { kind: 'interval', everyMs: 1_000, anchor: new Date('2026-01-01T00:00:00Z') },
      policies: { ...DEFAULT_POLICIES, misfire: 'FIRE_ONCE' },
    };
    // Down since 00:00:01; now 00:00:10.500; looking 2 s ahead.
    const now = new Date('2026-01-01T00:00:10.500Z');
    const p = planDueOccurrences(everySecond, everySecond.nextNominalAt!, now, {
      ...opts,
      lookaheadMs: 2_000,
    });
    expect(p.fires.map((f) => f.nominalTime.toISOString())).toEqual([
      '2026-01-01T00:00:10.000Z',
      '2026-01-01T00:00:11.000Z',
      '2026-01-01T00:00:12.000Z',
    ]);
    expect(p.skips.map((s) => [s.reason, s.occurrences])).toEqual([['COALESCED', 9]]);
    expect(p.next?.nominalTime.toISOString()).toBe('2026-01-01T00:00:13.000Z');
  });

  it('does not look ahead for an overlap FORBID job', () => {
    const job: Job = { ...base, policies: { ...DEFAULT_POLICIES, overlap: 'FORBID' } };
    const early = new Date('2026-01-01T00:00:00.400Z');
    const p = planDueOccurrences(job, job.nextNominalAt!, early, { ...opts, lookaheadMs: 1_000 });
    expect(p.fires).toEqual([]);
    expect(p.next?.nominalTime.toISOString()).toBe('2026-01-01T00:00:01.000Z');
  });

  it('counts lateness from now, not from the lookahead horizon', () => {
    // 1.5 s late is within the 2 s tolerance: a SKIP job still fires it, with or without lookahead.
    const job: Job = { ...base, policies: { ...DEFAULT_POLICIES, misfire: 'SKIP' } };
    const now = new Date('2026-01-01T00:00:02.500Z');
    const p = planDueOccurrences(job, job.nextNominalAt!, now, { ...opts, lookaheadMs: 1_000 });
    expect(p.skips).toEqual([]);
    expect(p.fires.map((f) => f.nominalTime.toISOString())).toEqual([
      '2026-01-01T00:00:01.000Z',
      '2026-01-01T00:00:02.000Z',
    ]);
  });

  it('spreads a job with jitter deterministically inside its window', () => {
    const job: Job = { ...base, policies: { ...DEFAULT_POLICIES, jitterMs: 500 } };
    const a = planDueOccurrences(job, job.nextNominalAt!, new Date('2026-01-01T00:00:01.100Z'), opts);
    const b = planDueOccurrences(job, job.nextNominalAt!, new Date('2026-01-01T00:00:01.300Z'), opts);
    const offset = a.fires[0]!.scheduledFor.getTime() - a.fires[0]!.nominalTime.getTime();
    expect(offset).toBeGreaterThanOrEqual(0);
    expect(offset).toBeLessThan(500);
    expect(b.fires[0]!.scheduledFor).toEqual(a.fires[0]!.scheduledFor);
  });
});

describe('initialOccurrence', () => {
  it('makes a one-shot in the past due now rather than missed', () => {
    const now = new Date('2026-06-01T12:00:00Z');
    const o = initialOccurrence('j', { kind: 'once', at: new Date('2026-05-01T00:00:00Z') }, 0, now, 0);
    expect(o).toEqual({ nominalTime: now, scheduledFor: now });
  });

  it('keeps a future one-shot at its instant', () => {
    const at = new Date('2026-07-01T00:00:00Z');
    expect(
      initialOccurrence('j', { kind: 'once', at }, 0, new Date('2026-06-01T00:00:00Z'), 0)?.nominalTime,
    ).toEqual(at);
  });
});
