import { occurrenceAt, planDueOccurrences } from './claim-planner';
import { EARLIEST_INSTANT_MS, instantRangeProblem, isInstantInRange, LATEST_INSTANT_MS } from './instant';
import type { ClaimableJob } from './job';
import {
  DEFAULT_JOB_LIMITS,
  parseJobDefinition,
  storedScheduleProblem,
  storedTargetProblem,
} from './job-wire';
import { DEFAULT_POLICIES } from './policies';
import { parseInstant } from './validation';
import {
  nextFireAfter,
  OccurrenceCursor,
  parseSchedule,
  previewFires,
  SearchBudgetExceeded,
  type Schedule,
} from './schedule';

const now = new Date('2026-12-02T00:00:00Z');
const parse = (raw: unknown) => parseSchedule(raw, { minIntervalMs: 1_000, now });
const violations = (raw: unknown) => {
  const r = parse(raw);
  return r.ok ? [] : r.violations.map((v) => `${v.field}: ${v.message}`);
};

describe('the instant range', () => {
  it('is 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, both included', () => {
    expect(new Date(EARLIEST_INSTANT_MS).toISOString()).toBe('1970-01-01T00:00:00.000Z');
    expect(new Date(LATEST_INSTANT_MS).toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(isInstantInRange(EARLIEST_INSTANT_MS)).toBe(true);
    expect(isInstantInRange(LATEST_INSTANT_MS)).toBe(true);
    expect(isInstantInRange(EARLIEST_INSTANT_MS - 1)).toBe(false);
    expect(isInstantInRange(LATEST_INSTANT_MS + 1)).toBe(false);
    expect(isInstantInRange(Number.NaN)).toBe(false);
    expect(instantRangeProblem(new Date(Number.NaN))).toMatch(/got an invalid date/);
  });

  it('refuses a one-shot at 0000-01-01T00:00:00Z (the poison of issue 24), naming the field', () => {
    expect(violations({ kind: 'once', at: '0000-01-01T00:00:00Z' })).toEqual([
      'schedule.at: must be within 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z; got 0000-01-01T00:00:00.000Z',
    ]);
    expect(violations({ kind: 'once', at: '1969-12-31T23:59:59.999Z' })[0]).toMatch(
      /^schedule\.at: must be within/,
    );
  });

  it('refuses an instant past the end, also when an offset carries it there or it has six year digits', () => {
    expect(violations({ kind: 'once', at: '9999-12-31T23:30:00-01:00' })[0]).toMatch(
      /^schedule\.at: must be within .*; got \+010000-01-01T00:30:00\.000Z$/,
    );
    expect(violations({ kind: 'once', at: '+010000-01-01T00:00:00Z' })[0]).toMatch(
      /^schedule\.at: must be within .*; got \+010000-01-01T00:00:00\.000Z$/,
    );
    expect(parse({ kind: 'once', at: '9999-12-31T23:59:59.999Z' }).ok).toBe(true);
  });

  it('checks anchor, start_at and end_at of recurring schedules alike', () => {
    expect(
      violations({
        kind: 'interval',
        every_ms: 60_000,
        anchor: '0001-01-01T00:00:00Z',
        start_at: '1900-01-01T00:00:00Z',
        end_at: '+020000-01-01T00:00:00Z',
      }).map((v) => v.split(':')[0]),
    ).toEqual(['schedule.start_at', 'schedule.end_at', 'schedule.anchor']);
    expect(
      violations({ kind: 'cron', expression: '0 9 * * *', start_at: '0000-06-01T00:00:00Z' })[0],
    ).toMatch(/^schedule\.start_at: must be within/);
  });

  it('a schedule whose occurrences all fall after the range is refused, naming start_at', () => {
    expect(violations({ kind: 'cron', expression: '0 0 29 2 *', start_at: '9999-03-01T00:00:00Z' })).toEqual([
      'schedule.start_at: leaves no occurrence before the end of the instant range (1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z)',
    ]);
  });
});

describe('instants as text', () => {
  it('refuses a day its month does not have, instead of moving it into the next month', () => {
    for (const raw of [
      '2026-02-29T09:00:00Z',
      '2026-02-30T09:00:00Z',
      '2026-04-31T00:00:00+02:00',
      '2100-02-29T00:00:00Z',
    ])
      expect([raw, parseInstant(raw)]).toEqual([raw, undefined]);
    expect(parseInstant('2028-02-29T09:00:00Z')?.toISOString()).toBe('2028-02-29T09:00:00.000Z');
    expect(parseInstant('2000-02-29T23:30:00-01:00')?.toISOString()).toBe('2000-03-01T00:30:00.000Z');
    expect(parseInstant('2026-12-31T23:59:59.999Z')?.toISOString()).toBe('2026-12-31T23:59:59.999Z');
    expect(violations({ kind: 'once', at: '2026-02-30T09:00:00Z' })).toEqual([
      expect.stringMatching(/^schedule.at: .*got "2026-02-30T09:00:00Z"$/),
    ]);
  });
});

describe('schedules end at the end of the instant range', () => {
  it('an interval whose next occurrence would pass 9999-12-31 is over (no arithmetic past the range)', () => {
    const s: Schedule = { kind: 'interval', everyMs: 86_400_000, anchor: new Date('9999-12-30T12:00:00Z') };
    expect(nextFireAfter(s, new Date('9999-12-30T00:00:00Z'))?.toISOString()).toBe(
      '9999-12-30T12:00:00.000Z',
    );
    expect(nextFireAfter(s, new Date('9999-12-30T12:00:00Z'))?.toISOString()).toBe(
      '9999-12-31T12:00:00.000Z',
    );
    expect(nextFireAfter(s, new Date('9999-12-31T12:00:00Z'))).toBeNull();
  });

  it('a cron whose next local midnight is in year 10000 UTC is over', () => {
    const s: Schedule = {
      kind: 'cron',
      expression: '0 0 * * *',
      timeZone: 'Pacific/Honolulu',
      dstGap: 'AUTO',
      dstRepeat: 'AUTO',
    };
    expect(nextFireAfter(s, new Date('9999-12-31T00:00:00Z'))?.toISOString()).toBe(
      '9999-12-31T10:00:00.000Z',
    );
    expect(nextFireAfter(s, new Date('9999-12-31T10:00:00Z'))).toBeNull();
    expect(previewFires(s, new Date('9999-12-29T00:00:00Z'), 10)).toHaveLength(3);
  });

  it('the claim completes such a job instead of planning an unstorable instant', () => {
    const at = new Date('9999-12-31T12:00:00Z');
    const job: ClaimableJob = {
      jobId: 'end-of-time',
      tenantId: 't',
      shard: 0,
      schedule: { kind: 'interval', everyMs: 86_400_000, anchor: at },
      status: 'SCHEDULED',
      nextRunAt: at,
      nextNominalAt: at,
      fenceToken: 0,
      firesCount: 0,
      target: { type: 'kafka', topic: 'x', key: null, headers: {} },
      payload: null,
      policies: { ...DEFAULT_POLICIES, jitterMs: 3_600_000 },
    };
    const plan = planDueOccurrences(job, at, new Date(at.getTime() + 1), { maxCatchUp: 10, herdJitterMs: 0 });
    expect(plan.fires).toHaveLength(1);
    expect(plan.fires[0]!.scheduledFor.getTime()).toBeLessThanOrEqual(LATEST_INSTANT_MS);
    expect(plan.next).toBeNull();
  });

  it('jitter never pushes a fire past the end of the range', () => {
    const nominal = new Date(LATEST_INSTANT_MS - 10);
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f']) {
      const o = occurrenceAt(id, { kind: 'once', at: nominal }, 3_600_000, nominal, 0);
      expect(o.scheduledFor.getTime()).toBeLessThanOrEqual(LATEST_INSTANT_MS);
    }
  });
});

describe('bounded searches', () => {
  const rare: Schedule = {
    kind: 'cron',
    expression: '0 0 29 2 *',
    timeZone: 'Europe/Vilnius',
    dstGap: 'AUTO',
    dstRepeat: 'AUTO',
  };

  it('a cursor stops at its horizon', () => {
    const cursor = new OccurrenceCursor(rare, now, 0, Date.UTC(2036, 0, 1));
    const found: string[] = [];
    for (let at = cursor.next(); at !== null; at = cursor.next())
      found.push(at.nominal.toISOString().slice(0, 10));
    expect(found).toEqual(['2028-02-28', '2032-02-28']);
  });

  it('a search out of budget throws, and the cursor resumes where it stood', () => {
    const cursor = new OccurrenceCursor(rare, now, 0, Date.UTC(2036, 0, 1));
    expect(() => cursor.next(() => true)).toThrow(SearchBudgetExceeded);
    expect(cursor.next()?.nominal.toISOString()).toBe('2028-02-28T22:00:00.000Z');
  });
});

describe('policy numbers are bounded', () => {
  const job = (policies: unknown) =>
    parseJobDefinition(
      {
        schedule: { kind: 'once', at: '2027-01-01T00:00:00Z' },
        target: { type: 'kafka', topic: 't' },
        policies,
      },
      { now, limits: DEFAULT_JOB_LIMITS, newJobId: () => 'j' },
    );
  const fields = (policies: unknown) => {
    const r = job(policies);
    return r.ok ? [] : r.violations.map((v) => v.field);
  };

  it('refuses durations that would carry instants out of range, naming each field', () => {
    expect(
      fields({
        catch_up_window_ms: 9e15,
        jitter_ms: 9e15,
        retry: { initial_backoff_ms: 9e15, max_backoff_ms: 9e15, max_event_age_ms: 9e15, multiplier: 1e9 },
      }),
    ).toEqual([
      'policies.retry.initial_backoff_ms',
      'policies.retry.multiplier',
      'policies.retry.max_backoff_ms',
      'policies.retry.max_event_age_ms',
      'policies.jitter_ms',
      'policies.catch_up_window_ms',
    ]);
    expect(fields({ catch_up_window_ms: 86_400_000, retry: { max_backoff_ms: 3_600_000 } })).toEqual([]);
  });
});

describe('storedScheduleProblem', () => {
  it('names what no arithmetic can work with in a stored schedule', () => {
    expect(storedScheduleProblem({ kind: 'once', at: new Date('0000-01-01T00:00:00Z') })).toMatch(
      /^schedule\.at must be within/,
    );
    expect(storedScheduleProblem({ kind: 'interval', everyMs: 0, anchor: now })).toMatch(
      /^schedule\.every_ms 0/,
    );
    expect(storedScheduleProblem({ kind: 'interval', everyMs: 1_000, anchor: new Date(Number.NaN) })).toMatch(
      /^schedule\.anchor must be within .*an invalid date/,
    );
    expect(storedScheduleProblem({ kind: 'interval', everyMs: 1_000, anchor: now, maxFires: -1 })).toMatch(
      /max_fires/,
    );
    expect(storedScheduleProblem({ kind: 'once', at: now })).toBeUndefined();
  });
});

describe('storedTargetProblem', () => {
  it('names what the fire event cannot carry (a publish of its whole batch would fail on it)', () => {
    const kafka = { type: 'kafka' as const, topic: 't', key: null, headers: {} };
    expect(storedTargetProblem(kafka)).toBeUndefined();
    expect(storedTargetProblem({ ...kafka, headers: { n: 1 as unknown as string } })).toMatch(/headers/);
    expect(storedTargetProblem({ ...kafka, key: 7 as unknown as string })).toMatch(/target\.key/);
    const webhook = {
      type: 'webhook' as const,
      url: 'https://example.com',
      method: 'POST' as const,
      headers: {},
      timeoutMs: 1_000,
      successStatus: { min: 200, max: 299 },
    };
    expect(storedTargetProblem(webhook)).toBeUndefined();
    expect(storedTargetProblem({ ...webhook, method: 'BREW' as 'POST' })).toMatch(/target\.method/);
    expect(storedTargetProblem({ ...webhook, timeoutMs: undefined as unknown as number })).toMatch(
      /timeout_ms/,
    );
  });
});
