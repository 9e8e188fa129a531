/** The fault suite's oracle and workload arithmetic: pure functions, no I/O. */
import { figuresOf, quantile, recoveryMs, type Verdict } from './oracle';
import type { ReceivedCall } from './receiver';
import { Workload } from './workload';

const T = Date.parse('2026-12-02T12:00:00Z');

function call(over: Partial<ReceivedCall> = {}): ReceivedCall {
  return {
    webhookId: 'j:1',
    jobId: 'j',
    fenceToken: 1,
    attempt: 1,
    scheduledFor: T,
    receivedAt: T + 100,
    status: 200,
    delayMs: 0,
    outcome: 'answered',
    ...over,
  };
}

/** A verdict due at `s` whose first attempt arrived at `a` (undefined: never). */
function verdict(s: number, a: number | undefined, over: Partial<Verdict> = {}): Verdict {
  const calls = a === undefined ? [] : [call({ scheduledFor: s, receivedAt: a })];
  return {
    occ: { jobId: `j${s}`, tenantId: 't', shard: 0, nominal: s },
    partition: 0,
    fenceToken: 1,
    scheduled: s,
    claimedBy: 'scheduler-1',
    skippedReason: undefined,
    runStatus: 'SUCCEEDED',
    runOwner: 'executor-1',
    runFinishedAt: a,
    calls,
    firstArrival: a,
    effects: a === undefined ? 0 : 1,
    early: false,
    delivered: a !== undefined,
    missing: a === undefined ? 'claimed, never called' : undefined,
    ...over,
  };
}

/** One occurrence every 100 ms from `from` to `to`, each `late(s)` ms late. */
function stream(from: number, to: number, late: (s: number) => number | undefined): Verdict[] {
  const out: Verdict[] = [];
  for (let s = from; s < to; s += 100) {
    const l = late(s);
    out.push(verdict(s, l === undefined ? undefined : s + l));
  }
  return out;
}

describe('quantile', () => {
  it('is the nearest rank', () => {
    expect(quantile([5, 1, 4, 2, 3], 0.5)).toBe(3);
    expect(
      quantile(
        Array.from({ length: 100 }, (_, i) => i + 1),
        0.99,
      ),
    ).toBe(99);
    expect(quantile([], 0.99)).toBe(0);
  });
});

describe('recoveryMs', () => {
  const opts = { thresholdMs: 1_000, holdMs: 3_000, spareShare: 0.05 };

  it('is 0 when nothing was late', () => {
    const vs = stream(T, T + 20_000, () => 200);
    expect(recoveryMs(vs, T + 5_000, T + 4_000, T + 20_000, opts)).toBe(0);
  });

  it('waits for the backlog of the fault: the last late arrival, minus the threshold', () => {
    // Down from T+5 s to T+10 s: everything due then arrives at T+12 s; on time again after.
    const vs = stream(T, T + 30_000, (s) => (s >= T + 5_000 && s < T + 10_000 ? T + 12_000 - s : 200));
    expect(recoveryMs(vs, T + 10_000, T + 4_000, T + 30_000, opts)).toBe(1_000);
  });

  it('waits until new fires are on time again', () => {
    // After the fault's end at T+10 s, fires due before T+15 s are 2 s late.
    const vs = stream(T, T + 30_000, (s) => (s >= T + 10_000 && s < T + 15_000 ? 2_000 : 200));
    // The last late one (due T+14.9 s) arrives at T+16.9 s: on time again from T+15.9 s.
    expect(recoveryMs(vs, T + 10_000, T + 4_000, T + 30_000, opts)).toBe(5_900);
  });

  it('lets one fire in twenty be slow without moving the point', () => {
    const vs = stream(T, T + 30_000, (s) => ((s - T) % 4_000 === 0 ? 1_500 : 200));
    expect(recoveryMs(vs, T + 10_000, T + 4_000, T + 30_000, opts)).toBe(0);
  });

  it('never recovers past a missing occurrence', () => {
    const vs = stream(T, T + 30_000, (s) => (s === T + 12_000 ? undefined : 200));
    expect(recoveryMs(vs, T + 10_000, T + 4_000, T + 30_000, opts)).toBeUndefined();
  });

  it('does not wait for occurrences skipped by their misfire policy', () => {
    const vs = stream(T, T + 30_000, () => 200).map((v) =>
      v.scheduled === T + 12_000
        ? {
            ...v,
            delivered: false,
            effects: 0,
            firstArrival: undefined,
            calls: [],
            skippedReason: 'COALESCED',
          }
        : v,
    );
    expect(recoveryMs(vs, T + 10_000, T + 4_000, T + 30_000, opts)).toBe(0);
  });

  it('is undefined when the window ends before a hold period of on-time fires', () => {
    const vs = stream(T, T + 12_000, (s) => (s < T + 11_000 ? 5_000 : 200));
    expect(recoveryMs(vs, T + 10_000, T + 4_000, T + 12_000, opts)).toBeUndefined();
  });
});

describe('figuresOf', () => {
  it('counts missing, early, duplicate effects (not cut calls) and first-attempt lateness', () => {
    const dup = verdict(T, T + 300, {
      calls: [
        call({ receivedAt: T + 300 }),
        call({ receivedAt: T + 5_000, outcome: 'cut' }),
        call({ receivedAt: T + 9_000 }),
      ],
      effects: 2,
    });
    const retried = verdict(T, T + 100, {
      calls: [call({ status: 500, receivedAt: T + 100 }), call({ attempt: 2, receivedAt: T + 4_000 })],
    });
    const f = figuresOf([dup, retried, verdict(T, undefined), verdict(T, T - 50, { early: true })]);
    expect(f).toMatchObject({
      expected: 4,
      delivered: 3,
      missing: 1,
      missingReasons: { 'claimed, never called': 1 },
      duplicateEffects: 1,
      duplicateSameAttempt: 1,
      early: 1,
    });
    expect(f.lateness.max).toBe(300);
  });
});

describe('Workload', () => {
  it('expects every occurrence of its definitions in a window, by plain arithmetic', () => {
    const start = T + 1_234;
    const w = Workload.plan(
      {
        prefix: 'w',
        tenants: ['a', 'b'],
        intervalJobs: 4,
        intervalMs: 5_000,
        cronJobs: 2,
        cronEverySec: 10,
        oneShotsPerSec: 2,
        start,
        oneShotsUntil: start + 2_000,
      },
      12,
    );
    expect(w.ratePerSec).toBeCloseTo(4 / 5 + 2 / 10 + 2);
    const exp = w.expected(T + 10_000, T + 29_999);
    // Interval anchors are spread over the period: 0, 1.25, 2.5, 3.75 s past each 5 s boundary.
    const iv0 = exp.filter((o) => o.jobId === 'w-iv-1').map((o) => o.nominal - T);
    expect(iv0).toEqual([11_250, 16_250, 21_250, 26_250]);
    expect(exp.filter((o) => o.jobId === 'w-cron-0').map((o) => o.nominal - T)).toEqual([10_000, 20_000]);
    // One-shots are all before the window.
    expect(exp.filter((o) => o.jobId.startsWith('w-once'))).toEqual([]);
    expect(w.expected(start, start + 2_000).filter((o) => o.jobId.startsWith('w-once'))).toHaveLength(5);
    expect(new Set(w.jobs.map((j) => j.tenantId))).toEqual(new Set(['a', 'b']));
  });
});
