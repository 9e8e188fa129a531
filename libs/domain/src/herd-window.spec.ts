import { initialOccurrence, occurrenceAt, planDueOccurrences } from './claim-planner';
import type { Job } from './job';
import { parseJobDefinition, DEFAULT_JOB_LIMITS, spreadProblem } from './job-wire';
import { DEFAULT_POLICIES } from './policies';
import { spreadOffsetMs } from './schedule';
import type { Schedule } from './schedule';

const HOUR = 3_600_000;
const hourly: Schedule = {
  kind: 'cron',
  expression: '0 * * * *',
  timeZone: 'UTC',
  dstGap: 'AUTO',
  dstRepeat: 'AUTO',
};
const nominal = new Date('2026-06-01T10:00:00Z');
const job = (over: Partial<Job> = {}): Job => ({
  jobId: 'report-42',
  tenantId: 't',
  schedule: hourly,
  target: { type: 'kafka', topic: 'x', key: null, headers: {} },
  payload: null,
  policies: { ...DEFAULT_POLICIES, spreadMs: 300_000 },
  labels: {},
  shard: 0,
  status: 'SCHEDULED',
  nextRunAt: nominal,
  nextNominalAt: nominal,
  fenceToken: 0,
  firesCount: 0,
  version: 1,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  ...over,
});
const opts = { maxCatchUp: 10, herdJitterMs: 0 };

describe('spreadOffsetMs', () => {
  it('is a stable offset inside [0, spread) per (job, occurrence)', () => {
    const a = spreadOffsetMs('report-42', nominal, 300_000);
    expect(a).toBeGreaterThanOrEqual(0);
    expect(a).toBeLessThan(300_000);
    expect(spreadOffsetMs('report-42', new Date(nominal.getTime()), 300_000)).toBe(a);
    // Another occurrence of the same job lands elsewhere (almost surely), and so does another job.
    expect(spreadOffsetMs('report-42', new Date(nominal.getTime() + HOUR), 300_000)).not.toBe(a);
    expect(spreadOffsetMs('report-43', nominal, 300_000)).not.toBe(a);
    expect(spreadOffsetMs('report-42', nominal, 0)).toBe(0);
  });

  it('tells apart two occurrences at one instant (dst_gap SHIFT) by their shift', () => {
    expect(spreadOffsetMs('j', nominal, 300_000, HOUR)).not.toBe(spreadOffsetMs('j', nominal, 300_000, 0));
  });

  it('spreads 100,000 hourly jobs evenly over a 5-minute window', () => {
    const perSecond = new Array<number>(300).fill(0);
    for (let i = 0; i < 100_000; i++)
      perSecond[Math.floor(spreadOffsetMs(`job-${i}`, nominal, 300_000) / 1000)]!++;
    const mean = 100_000 / 300;
    expect(Math.max(...perSecond)).toBeLessThan(mean * 1.3);
    expect(Math.min(...perSecond)).toBeGreaterThan(mean * 0.7);
  });

  it('is not the jitter offset of the same window (hashed apart)', () => {
    const j = job({ policies: { ...DEFAULT_POLICIES, jitterMs: 300_000 } });
    const jittered = occurrenceAt(j.jobId, hourly, j.policies, nominal, 0);
    const spread = occurrenceAt(j.jobId, hourly, { jitterMs: 0, spreadMs: 300_000 }, nominal, 0);
    expect(jittered.scheduledFor).not.toEqual(spread.scheduledFor);
    expect(jittered.spreadOffsetMs).toBeUndefined();
  });
});

describe('planning a job with a herd window', () => {
  const offset = spreadOffsetMs('report-42', nominal, 300_000);
  const slot = new Date(nominal.getTime() + offset);

  it('fires each occurrence at its slot, keeping the nominal time and recording the offset', () => {
    const first = initialOccurrence(
      'report-42',
      hourly,
      { jitterMs: 0, spreadMs: 300_000 },
      new Date('2026-06-01T09:30:00Z'),
      0,
    );
    expect(first).toEqual({ nominalTime: nominal, scheduledFor: slot, spreadOffsetMs: offset });
    const p = planDueOccurrences(job({ nextRunAt: slot }), nominal, new Date(slot.getTime() + 150), opts);
    expect(p.fires).toEqual([{ nominalTime: nominal, scheduledFor: slot, spreadOffsetMs: offset }]);
    expect(p.skips).toEqual([]);
    const next = new Date(nominal.getTime() + HOUR);
    expect(p.next).toEqual({
      nominalTime: next,
      scheduledFor: new Date(next.getTime() + spreadOffsetMs('report-42', next, 300_000)),
      spreadOffsetMs: spreadOffsetMs('report-42', next, 300_000),
    });
  });

  it('a fire claimed at its slot minutes after the nominal time is on time, not a misfire', () => {
    // Under SKIP a missed occurrence is skipped: a slot 4 minutes into the window is not missed.
    const lateSlotJob = 'job-late-slot';
    let at = nominal;
    let off = 0;
    for (let i = 0; off < 200_000; i++) {
      at = new Date(nominal.getTime() + i * HOUR);
      off = spreadOffsetMs(lateSlotJob, at, 300_000);
    }
    const j = job({
      jobId: lateSlotJob,
      policies: { ...DEFAULT_POLICIES, spreadMs: 300_000, misfire: 'SKIP' },
    });
    const p = planDueOccurrences(j, at, new Date(at.getTime() + off + 500), opts);
    expect(p.fires.map((f) => f.nominalTime)).toEqual([at]);
    expect(p.skips).toEqual([]);
  });

  it('still treats an occurrence older than its window as missed', () => {
    const j = job({ policies: { ...DEFAULT_POLICIES, spreadMs: 300_000, misfire: 'SKIP' } });
    const p = planDueOccurrences(j, nominal, new Date(nominal.getTime() + 20 * 60_000), opts);
    expect(p.fires).toEqual([]);
    expect(p.skips.map((s) => s.reason)).toEqual(['MISFIRE_SKIP']);
  });

  it('gives a job with a window no cluster herd jitter', () => {
    const p = planDueOccurrences(job({ nextRunAt: slot }), nominal, slot, { ...opts, herdJitterMs: 30_000 });
    expect(p.fires[0]!.scheduledFor).toEqual(slot);
  });

  it('jitter keeps its meaning, and a jittered fire claimed late in its window is on time too', () => {
    const j = job({ policies: { ...DEFAULT_POLICIES, jitterMs: 300_000, misfire: 'SKIP' } });
    const o = occurrenceAt(j.jobId, hourly, j.policies, nominal, 0);
    const p = planDueOccurrences(j, nominal, o.scheduledFor, opts);
    expect(p.fires).toEqual([{ nominalTime: nominal, scheduledFor: o.scheduledFor }]);
  });
});

describe('spread_ms validation', () => {
  const parse = (schedule: unknown, policies: unknown) =>
    parseJobDefinition(
      { job_id: 'j', schedule, target: { type: 'kafka', topic: 't' }, policies },
      { now: new Date('2026-06-01T00:00:00Z'), limits: DEFAULT_JOB_LIMITS, newJobId: () => 'x' },
    );
  const cron = (expression: string) => ({ kind: 'cron', expression });
  const violations = (r: ReturnType<typeof parse>) => (r.ok ? [] : r.violations);

  it('accepts a window up to the cron smallest gap or the interval', () => {
    expect(parse(cron('0 * * * *'), { spread_ms: 300_000 })).toMatchObject({
      ok: true,
      value: { policies: { spreadMs: 300_000 } },
    });
    expect(parse(cron('0 * * * *'), { spread_ms: HOUR }).ok).toBe(true);
    expect(parse({ kind: 'interval', every_ms: 60_000 }, { spread_ms: 60_000 }).ok).toBe(true);
    expect(parse(cron('H * * * *'), { spread_ms: HOUR }).ok).toBe(true);
  });

  it('refuses a window wider than the schedule spacing, naming policies.spread_ms', () => {
    expect(violations(parse(cron('0 * * * *'), { spread_ms: HOUR + 1 }))).toEqual([
      { field: 'policies.spread_ms', message: expect.stringContaining('at most 3600000 ms') },
    ]);
    expect(violations(parse(cron('*/15 * * * *'), { spread_ms: 900_001 }))).toEqual([
      { field: 'policies.spread_ms', message: expect.stringContaining("cron's smallest gap") },
    ]);
    expect(violations(parse({ kind: 'interval', every_ms: 60_000 }, { spread_ms: 60_001 }))).toEqual([
      { field: 'policies.spread_ms', message: expect.stringContaining('schedule.every_ms') },
    ]);
  });

  it('refuses a window with jitter, on a one-shot, and a value that is not a whole number', () => {
    expect(violations(parse(cron('0 * * * *'), { spread_ms: 1000, jitter_ms: 1000 }))).toEqual([
      { field: 'policies.spread_ms', message: expect.stringContaining('jitter_ms') },
    ]);
    expect(violations(parse({ kind: 'once', at: '2026-07-01T00:00:00Z' }, { spread_ms: 1000 }))).toEqual([
      { field: 'policies.spread_ms', message: expect.stringContaining('recurring') },
    ]);
    expect(violations(parse(cron('0 * * * *'), { spread_ms: -1 }))[0]?.field).toBe('policies.spread_ms');
    expect(violations(parse(cron('0 * * * *'), { spread_ms: 1.5 }))[0]?.field).toBe('policies.spread_ms');
    expect(violations(parse(cron('0 * * * *'), { spread_ms: '300000' }))[0]?.field).toBe(
      'policies.spread_ms',
    );
  });

  it('is a no-op at 0 and defaults to 0', () => {
    expect(spreadProblem(hourly, DEFAULT_POLICIES)).toBeUndefined();
    expect(parse(cron('0 * * * *'), {})).toMatchObject({ ok: true, value: { policies: { spreadMs: 0 } } });
  });
});
