import { effectiveToleranceMs, judgeOccurrence, missedDeadline, nominalIntervalSeconds } from './fire-slo';
import { DEFAULT_JOB_LIMITS, parseJobDefinition, policiesFromWire, policiesToWire } from './job-wire';
import type { Schedule } from './schedule/schedule';

const t = (iso: string) => new Date(iso);
const hourly: Schedule = { kind: 'interval', everyMs: 3_600_000, anchor: t('2026-01-01T00:00:00Z') };
const cron = (expression: string, timeZone = 'UTC'): Schedule => ({
  kind: 'cron',
  expression,
  timeZone,
  dstGap: 'AUTO',
  dstRepeat: 'AUTO',
});

describe('judgeOccurrence', () => {
  const nominal = t('2026-12-01T10:00:00Z');
  const deadline = t('2026-12-01T11:00:00Z');
  const judge = (firstStartedAt: string | null, now = '2026-12-01T10:30:00Z') =>
    judgeOccurrence({
      nominal,
      firstStartedAt: firstStartedAt === null ? null : t(firstStartedAt),
      toleranceMs: 60_000,
      deadline,
      now: t(now),
    });

  it('is on time when the run started within the tolerance, including exactly at it', () => {
    expect(judge('2026-12-01T10:00:00.500Z')).toEqual({ verdict: 'ON_TIME' });
    expect(judge('2026-12-01T10:01:00Z')).toEqual({ verdict: 'ON_TIME' });
    // A run that started before its nominal time (clock skew) is on time, not negative lateness.
    expect(judge('2026-12-01T09:59:59Z')).toEqual({ verdict: 'ON_TIME' });
  });

  it('is LATE with its lateness when the run started past the tolerance but by the deadline', () => {
    expect(judge('2026-12-01T10:01:00.001Z')).toEqual({ verdict: 'LATE', latenessMs: 60_001 });
    expect(judge('2026-12-01T11:00:00Z', '2026-12-01T12:00:00Z')).toEqual({
      verdict: 'LATE',
      latenessMs: 3_600_000,
    });
  });

  it('is PENDING while nothing started and the deadline is ahead, even past the tolerance', () => {
    expect(judge(null, '2026-12-01T10:00:30Z')).toEqual({ verdict: 'PENDING' });
    expect(judge(null, '2026-12-01T10:59:59.999Z')).toEqual({ verdict: 'PENDING' });
  });

  it('is MISSED when nothing started by the deadline, or the run started after it', () => {
    expect(judge(null, '2026-12-01T11:00:00Z')).toEqual({ verdict: 'MISSED', latenessMs: null });
    expect(judge('2026-12-01T11:00:00.001Z', '2026-12-01T12:00:00Z')).toEqual({
      verdict: 'MISSED',
      latenessMs: 3_600_001,
    });
  });

  it('gives the same verdict whenever it is asked once the run started (a repeated sweep records the same)', () => {
    const started = '2026-12-01T10:05:00Z';
    const verdicts = ['2026-12-01T10:06:00Z', '2026-12-01T11:30:00Z', '2027-06-01T00:00:00Z'].map((now) =>
      judge(started, now),
    );
    expect(new Set(verdicts.map((v) => JSON.stringify(v))).size).toBe(1);
    expect(verdicts[0]).toEqual({ verdict: 'LATE', latenessMs: 300_000 });
  });
});

describe('missedDeadline', () => {
  const day = 86_400_000;

  it('is the next occurrence of an interval or cron job', () => {
    const nominal = t('2026-12-01T10:00:00Z');
    expect(missedDeadline(hourly, { nominal, dstShiftMs: 0 }, 60_000, day)).toEqual(
      t('2026-12-01T11:00:00Z'),
    );
    expect(missedDeadline(cron('*/15 * * * *'), { nominal, dstShiftMs: 0 }, 60_000, day)).toEqual(
      t('2026-12-01T10:15:00Z'),
    );
  });

  it('is capped by missed-after for a sparse schedule, and is that for a one-shot', () => {
    const nominal = t('2026-12-01T10:00:00Z');
    expect(missedDeadline(cron('0 10 1 1 *'), { nominal, dstShiftMs: 0 }, 60_000, day)).toEqual(
      t('2026-12-02T10:00:00Z'),
    );
    expect(missedDeadline({ kind: 'once', at: nominal }, { nominal, dstShiftMs: 0 }, 60_000, day)).toEqual(
      t('2026-12-02T10:00:00Z'),
    );
  });

  it('never comes before the tolerance has run out (a tolerance longer than the interval)', () => {
    const every10s: Schedule = { kind: 'interval', everyMs: 10_000, anchor: t('2026-01-01T00:00:00Z') };
    const nominal = t('2026-12-01T10:00:00Z');
    expect(missedDeadline(every10s, { nominal, dstShiftMs: 0 }, 60_000, day)).toEqual(
      t('2026-12-01T10:01:00Z'),
    );
  });

  it('follows the zone: across the night New York falls back, the next daily 01:30 is 25 hours later', () => {
    // 2026-11-01 01:30 EDT (05:30Z); with dst_repeat AUTO a daily 01:30 job fires once that night,
    // so its next occurrence is the next day's 01:30 EST (06:30Z).
    const nominal = t('2026-11-01T05:30:00Z');
    expect(
      missedDeadline(cron('30 1 * * *', 'America/New_York'), { nominal, dstShiftMs: 0 }, 60_000, 7 * day),
    ).toEqual(t('2026-11-02T06:30:00Z'));
  });
});

describe('tolerance defaults and the dead-man interval', () => {
  it('uses the job tolerance when set, else the deployment default', () => {
    const d = { toleranceMs: 60_000, missedAfterMs: 86_400_000 };
    expect(effectiveToleranceMs(5_000, d)).toBe(5_000);
    expect(effectiveToleranceMs(0, d)).toBe(0);
    expect(effectiveToleranceMs(null, d)).toBe(60_000);
    expect(effectiveToleranceMs(undefined, d)).toBe(60_000);
  });

  it('gives an hourly job an interval of 3600 s, a weekday-9am cron the gap to its next fire, a one-shot none', () => {
    expect(nominalIntervalSeconds(hourly, t('2026-12-01T10:20:00Z'))).toBe(3_600);
    expect(nominalIntervalSeconds(cron('0 * * * *'), t('2026-12-01T10:20:00Z'))).toBe(3_600);
    // Tuesday 2026-12-01: the next two weekday 09:00s are Wednesday and Thursday.
    expect(nominalIntervalSeconds(cron('0 9 * * MON-FRI'), t('2026-12-01T10:00:00Z'))).toBe(86_400);
    expect(
      nominalIntervalSeconds({ kind: 'once', at: t('2026-12-01T10:00:00Z') }, t('2026-12-01T00:00:00Z')),
    ).toBe(null);
  });
});

describe('policies.tolerance_ms and policies.slo_metrics on the wire', () => {
  const ctx = { now: t('2026-12-01T00:00:00Z'), limits: DEFAULT_JOB_LIMITS, newJobId: () => 'job-1' };
  const base = {
    schedule: { kind: 'interval', every_ms: 60_000 },
    target: { type: 'kafka', topic: 'orders' },
  };
  const parse = (policies: unknown) => parseJobDefinition({ ...base, policies }, ctx);
  const violations = (policies: unknown) => {
    const p = parse(policies);
    return p.ok ? [] : p.violations.map((v) => `${v.field} ${v.message}`);
  };

  it('accepts them and round-trips them through the stored form', () => {
    const p = parse({ tolerance_ms: 30_000, slo_metrics: true });
    if (!p.ok) throw new Error(JSON.stringify(p.violations));
    expect(p.value.policies.toleranceMs).toBe(30_000);
    expect(p.value.policies.sloMetrics).toBe(true);
    const wire = policiesToWire(p.value.policies);
    expect(wire).toMatchObject({ tolerance_ms: 30_000, slo_metrics: true });
    expect(policiesFromWire(wire)).toEqual(p.value.policies);
  });

  it('leaves them out of the stored form when not set (the deployment default applies)', () => {
    for (const policies of [{}, { tolerance_ms: null, slo_metrics: false }]) {
      const p = parse(policies);
      if (!p.ok) throw new Error(JSON.stringify(p.violations));
      const wire = policiesToWire(p.value.policies);
      expect(wire).not.toHaveProperty('tolerance_ms');
      expect(wire).not.toHaveProperty('slo_metrics');
    }
  });

  it('refuses bad values, naming the field', () => {
    expect(violations({ tolerance_ms: -1 })).toEqual(['policies.tolerance_ms must be >= 0']);
    expect(violations({ tolerance_ms: 1.5 })).toEqual(['policies.tolerance_ms must be an integer']);
    expect(violations({ tolerance_ms: '60s' })).toEqual(['policies.tolerance_ms must be an integer']);
    expect(violations({ tolerance_ms: 3_162_240_000_001 })).toEqual([
      'policies.tolerance_ms must be <= 3162240000000',
    ]);
    expect(violations({ slo_metrics: 'yes' })).toEqual(['policies.slo_metrics must be true or false']);
    expect(violations({ slo: true })).toEqual([expect.stringMatching(/^policies\.slo /)]);
  });
});
