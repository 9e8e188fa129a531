import type { ClaimPlanner, DueJob } from './claim';
import {
  buildClaim,
  claimBuilderOf,
  claimColumns,
  claimLanes,
  jobClaimOf,
  lanesSaturated,
} from './claim-builder';
import type { DueOccurrencePlan } from './claim-planner';
import { planDueOccurrences } from './claim-planner';
import { fireEventOfRow } from './fire-snapshot';
import { targetToWire } from './job-wire';
import type { ClaimableJob } from './job';
import { DEFAULT_POLICIES } from './policies';

const at = (iso: string) => new Date(iso);

const job: ClaimableJob = {
  jobId: 'j1',
  tenantId: 'acme',
  schedule: { kind: 'interval', everyMs: 60_000, anchor: at('2026-01-01T00:00:00Z') },
  target: { type: 'kafka', topic: 'out', key: null, headers: {} },
  payload: { n: 1 },
  policies: DEFAULT_POLICIES,
  shard: 7,
  status: 'SCHEDULED',
  nextRunAt: at('2026-01-01T00:01:00Z'),
  nextNominalAt: at('2026-01-01T00:01:00Z'),
  nextDstShiftMs: 0,
  fenceToken: 41,
  firesCount: 40,
};

const plan = (p: Partial<DueOccurrencePlan>): DueOccurrencePlan => ({
  fires: [],
  skips: [],
  next: null,
  ...p,
});
const once = (iso: string, extra: object = {}) => ({ nominalTime: at(iso), scheduledFor: at(iso), ...extra });

describe('jobClaimOf', () => {
  it('numbers the fires from the job fence token on, with fire ids job:token', () => {
    const w = jobClaimOf(
      job,
      plan({
        fires: [once('2026-01-01T00:01:00Z'), once('2026-01-01T00:02:00Z'), once('2026-01-01T00:03:00Z')],
        next: once('2026-01-01T00:04:00Z'),
      }),
    );
    expect(w.n).toBe(3);
    expect(w.fires.map((f) => [f.event.fenceToken, f.event.fireId, f.shard, f.batchId])).toEqual([
      [42, 'j1:42', 7, 0],
      [43, 'j1:43', 7, 0],
      [44, 'j1:44', 7, 0],
    ]);
    expect(w.fireRows.map((r) => r.token)).toEqual([42, 43, 44]);
    expect(w.fires[0]!.event).toMatchObject({
      attempt: 1,
      target: job.target,
      payload: job.payload,
      tenantId: 'acme',
    });
    expect(w).toMatchObject({ status: 'SCHEDULED', next: '2026-01-01T00:04:00.000Z', nextShift: 0 });
  });

  it('completes a one-shot job: no next occurrence', () => {
    const w = jobClaimOf(job, plan({ fires: [once('2026-01-01T00:01:00Z')] }));
    expect(w).toMatchObject({ status: 'COMPLETED', next: null, nextNominal: null, n: 1 });
  });

  it('carries the DST shift, herd slot and calendar shift of each fire and of the next occurrence', () => {
    const w = jobClaimOf(
      job,
      plan({
        fires: [
          {
            nominalTime: at('2026-03-08T07:45:00Z'),
            scheduledFor: at('2026-03-08T07:45:30Z'),
            dstShiftMs: 3_600_000,
            spreadOffsetMs: 30_000,
          },
          { ...once('2026-03-09T09:00:00Z'), calendarShiftMs: 86_400_000, calendar: 'us@3' },
        ],
        next: { ...once('2026-03-10T09:00:00Z'), dstShiftMs: 0, calendarShiftMs: 172_800_000 },
      }),
    );
    expect(w.fireRows).toEqual([
      {
        jobId: 'j1',
        token: 42,
        nominal: '2026-03-08T07:45:00.000Z',
        shift: 3_600_000,
        scheduled: '2026-03-08T07:45:30.000Z',
        spread: 30_000,
        calendarShift: 0,
        calendar: null,
      },
      {
        jobId: 'j1',
        token: 43,
        nominal: '2026-03-09T09:00:00.000Z',
        shift: 0,
        scheduled: '2026-03-09T09:00:00.000Z',
        spread: 0,
        calendarShift: 86_400_000,
        calendar: 'us@3',
      },
    ]);
    expect(w.fires[0]!.event.spreadOffsetMs).toBe(30_000);
    expect(w.fires[1]!.event.spreadOffsetMs).toBeUndefined();
    expect(w).toMatchObject({ nextShift: 0, nextCalendarShift: 172_800_000 });
  });

  it('records skips by reason, with the count and calendar, and adds them up', () => {
    const w = jobClaimOf(
      job,
      plan({
        skips: [
          {
            reason: 'MISFIRE_SKIP',
            firstNominal: at('2026-01-01T00:01:00Z'),
            lastNominal: at('2026-01-01T00:05:00Z'),
            occurrences: 5,
          },
          {
            reason: 'CALENDAR_SKIP',
            firstNominal: at('2026-01-01T00:06:00Z'),
            lastNominal: at('2026-01-01T00:06:00Z'),
            occurrences: 1,
            calendar: 'us@3',
          },
        ],
        next: once('2026-01-01T00:07:00Z'),
      }),
    );
    expect(w.n).toBe(0);
    expect(w.skipped).toBe(6);
    expect(w.skips).toEqual([
      { tenantId: 'acme', reason: 'MISFIRE_SKIP', occurrences: 5 },
      { tenantId: 'acme', reason: 'CALENDAR_SKIP', occurrences: 1 },
    ]);
    expect(w.skipRows[1]).toEqual({
      jobId: 'j1',
      tenantId: 'acme',
      reason: 'CALENDAR_SKIP',
      first: '2026-01-01T00:06:00.000Z',
      last: '2026-01-01T00:06:00.000Z',
      count: 1,
      calendar: 'us@3',
    });
  });

  it('marks the first fire of a job that waited past its due time as due since then', () => {
    const w = jobClaimOf(job, plan({ fires: [once('2026-01-01T00:03:00Z'), once('2026-01-01T00:04:00Z')] }));
    expect(w.fires[0]!.event.dueSince).toEqual(job.nextRunAt);
    expect(w.fires[1]!.event.dueSince).toBeUndefined();
  });

  it('refuses a plan the store could not hold: an instant out of range, a token past 2^53', () => {
    expect(() => jobClaimOf(job, plan({ fires: [once('+275760-09-13T00:00:00Z')] }))).toThrow(/planned/);
    expect(() =>
      jobClaimOf(
        { ...job, fenceToken: Number.MAX_SAFE_INTEGER - 1 },
        plan({ fires: [once('2026-01-01T00:01:00Z')] }),
      ),
    ).toThrow(/beyond what the claim can count/);
  });
});

describe('buildClaim', () => {
  it('plans each due job at the claim time; unplannable jobs are set apart with the reason, the rest go on', () => {
    const seen: [string, boolean, string][] = [];
    const planner: ClaimPlanner = (d, now) => {
      seen.push([d.job.jobId, d.previousFireInFlight, now.toISOString()]);
      if (d.job.jobId === 'bad') throw new Error('no plan');
      return plan({ fires: [once('2026-01-01T00:01:00Z')] });
    };
    const due: DueJob[] = [
      { job, previousFireInFlight: true },
      { job: { ...job, jobId: 'bad' }, previousFireInFlight: false },
      { job: { ...job, jobId: 'odd', nextNominalAt: new Date(Number.NaN) }, previousFireInFlight: false },
    ];
    const now = at('2026-01-01T00:01:00.250Z');
    const batch = buildClaim(due, now, planner);
    expect(batch.jobs.map((j) => j.jobId)).toEqual(['j1']);
    expect(batch.unplannable.map((u) => [u.jobId, u.error])).toEqual([
      ['bad', 'no plan'],
      ['odd', expect.stringContaining('next_nominal_at')],
    ]);
    // A job stored in a shape the claim cannot use is not even planned.
    expect(seen).toEqual([
      ['j1', true, now.toISOString()],
      ['bad', false, now.toISOString()],
    ]);
  });

  it('with the domain planner: a missed run of an interval job fires once per occurrence, tokens in order', () => {
    const build = claimBuilderOf(({ job: j, previousFireInFlight }, now) =>
      planDueOccurrences(j, j.nextNominalAt!, now, { maxCatchUp: 10, herdJitterMs: 0 }, previousFireInFlight),
    );
    const batch = build(
      [
        {
          job: { ...job, policies: { ...DEFAULT_POLICIES, misfire: 'FIRE_ALL' } },
          previousFireInFlight: false,
        },
      ],
      at('2026-01-01T00:03:00.500Z'),
    );
    const fires = batch.jobs[0]!.fires.map((f) => [f.event.fireId, f.event.nominalTime.toISOString()]);
    expect(fires).toEqual([
      ['j1:42', '2026-01-01T00:01:00.000Z'],
      ['j1:43', '2026-01-01T00:02:00.000Z'],
      ['j1:44', '2026-01-01T00:03:00.000Z'],
    ]);
    expect(batch.jobs[0]!.next).toBe('2026-01-01T00:04:00.000Z');
  });
});

describe('claimColumns', () => {
  it('lays a group out as one array per bound column, fires in job order, from which each event is rebuilt', () => {
    const a = jobClaimOf(
      job,
      plan({ fires: [once('2026-01-01T00:01:00Z')], next: once('2026-01-01T00:02:00Z') }),
    );
    const b = {
      ...jobClaimOf(
        { ...job, jobId: 'j2', shard: 3, fenceToken: 0 },
        plan({
          fires: [once('2026-01-01T00:01:00Z'), once('2026-01-01T00:02:00Z', { spreadOffsetMs: 5 })],
          skips: [
            {
              reason: 'COALESCED',
              firstNominal: at('2026-01-01T00:00:00Z'),
              lastNominal: at('2026-01-01T00:00:00Z'),
              occurrences: 1,
            },
          ],
        }),
      ),
      traces: ['{"traceparent":"00-a-b-01"}', null],
    };
    const c = claimColumns([a, b]);
    expect(c.jobs).toEqual({
      jobId: ['j1', 'j2'],
      n: [1, 2],
      next: ['2026-01-01T00:02:00.000Z', null],
      nextNominal: ['2026-01-01T00:02:00.000Z', null],
      status: ['SCHEDULED', 'COMPLETED'],
      nextShift: [0, 0],
      nextCalendarShift: [0, 0],
    });
    expect(c.fires.jobId).toEqual(['j1', 'j2', 'j2']);
    expect(c.fires.token).toEqual([42, 1, 2]);
    expect(c.fires.shard).toEqual([7, 3, 3]);
    expect(c.fires.spread).toEqual([0, 0, 5]);
    expect(c.fires.trace).toEqual([null, '{"traceparent":"00-a-b-01"}', null]);
    expect(c.skips.reason).toEqual(['COALESCED']);
    // A claimed fire stores no event: its columns and its job's target and payload rebuild the
    // very event the claim publishes (as the relay and a dead-letter replay read it back).
    const stored = c.fires.jobId.map((jobId, i) =>
      fireEventOfRow(
        {
          job_id: jobId,
          tenant_id: job.tenantId,
          fence_token: c.fires.token[i]!,
          scheduled_for: new Date(c.fires.scheduled[i]!),
          nominal_time: new Date(c.fires.nominal[i]!),
          spread_offset_ms: c.fires.spread[i]!,
        },
        null,
        { target: targetToWire(job.target), payload: job.payload },
      ),
    );
    expect(stored).toEqual([...a.fires, ...b.fires].map((f) => f.event));
    expect(stored.map((e) => e.fireId)).toEqual(['j1:42', 'j2:1', 'j2:2']);
  });
});

describe('claimLanes', () => {
  const due = [
    { shard: 1, tenant_id: 'a' },
    { shard: 2, tenant_id: 'a' },
    { shard: 1, tenant_id: 'b' },
  ];

  it('spreads a tenant cap over the shards where it has due work; no caps: the limit', () => {
    expect(
      claimLanes(
        due,
        new Map([
          ['a', 5],
          ['b', 0],
        ]),
        100,
      ),
    ).toEqual({
      shard: [1, 2],
      tenant: ['a', 'a'],
      cap: [3, 3],
    });
    expect(claimLanes(due, undefined, 10).cap).toEqual([5, 5, 10]);
  });

  it('is saturated once a lane took its cap', () => {
    const lanes = claimLanes(due, undefined, 10);
    expect(
      lanesSaturated(
        lanes,
        new Map([
          ['1|a', 4],
          ['1|b', 9],
        ]),
      ),
    ).toBe(false);
    expect(lanesSaturated(lanes, new Map([['1|b', 10]]))).toBe(true);
  });
});
