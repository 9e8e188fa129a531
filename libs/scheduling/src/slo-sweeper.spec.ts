import type { JobPolicies, Schedule } from '@tickwork/domain';
import { DEFAULT_POLICIES } from '@tickwork/domain';
import type { SloCandidate } from '@tickwork/domain';
import { deadManSample, judgeCandidate } from './slo-sweeper';

const t = (iso: string) => new Date(iso);
const defaults = { toleranceMs: 60_000, missedAfterMs: 86_400_000 };
const hourly: Schedule = { kind: 'interval', everyMs: 3_600_000, anchor: t('2026-01-01T00:00:00Z') };

function candidate(over: Partial<SloCandidate> & { policies?: JobPolicies | null } = {}): SloCandidate {
  return {
    jobId: 'j',
    fenceToken: 7,
    tenantId: 'acme',
    shard: 3,
    nominalTime: t('2026-12-01T10:00:00Z'),
    dstShiftMs: 0,
    firstStartedAt: null,
    schedule: hourly,
    policies: DEFAULT_POLICIES,
    watched: null,
    ...over,
  };
}

describe('judgeCandidate', () => {
  it("uses the job's own tolerance over the deployment's", () => {
    const c = candidate({
      firstStartedAt: t('2026-12-01T10:00:10Z'),
      policies: { ...DEFAULT_POLICIES, toleranceMs: 5_000 },
    });
    expect(judgeCandidate(c, t('2026-12-01T10:01:00Z'), defaults)).toEqual({
      verdict: 'LATE',
      latenessMs: 10_000,
      toleranceMs: 5_000,
      deadline: t('2026-12-01T11:00:00Z'),
    });
    expect(judgeCandidate({ ...c, policies: DEFAULT_POLICIES }, t('2026-12-01T10:01:00Z'), defaults)).toEqual(
      {
        verdict: 'ON_TIME',
      },
    );
  });

  it('puts an unstarted fire on the watch list with its deadline, then MISSED once it passed', () => {
    const c = candidate();
    const pending = judgeCandidate(c, t('2026-12-01T10:30:00Z'), defaults);
    expect(pending).toEqual({ verdict: 'PENDING', toleranceMs: 60_000, deadline: t('2026-12-01T11:00:00Z') });
    // Watched: the tolerance and deadline it was given then hold, even if the job changed since.
    const watched = candidate({
      watched: { toleranceMs: 60_000, deadline: t('2026-12-01T11:00:00Z') },
      schedule: null,
      policies: { ...DEFAULT_POLICIES, toleranceMs: 1 },
    });
    expect(judgeCandidate(watched, t('2026-12-01T11:00:00Z'), defaults)).toEqual({
      verdict: 'MISSED',
      latenessMs: null,
      toleranceMs: 60_000,
      deadline: t('2026-12-01T11:00:00Z'),
    });
  });

  it('does not judge a fire of a deleted job that nobody watched', () => {
    expect(
      judgeCandidate(candidate({ schedule: null, policies: null }), t('2026-12-02T00:00:00Z'), defaults),
    ).toEqual({ verdict: 'IGNORED' });
  });
});

describe('deadManSample', () => {
  it("is the last success's time, or the job's creation when it never succeeded, with its interval", () => {
    const job = {
      jobId: 'j',
      tenantId: 'acme',
      schedule: hourly,
      createdAt: t('2026-12-01T00:00:00Z'),
      lastSuccessAt: t('2026-12-01T09:00:01Z'),
    };
    expect(deadManSample(job, t('2026-12-01T10:00:00Z'))).toEqual({
      lastSuccessSeconds: Date.parse('2026-12-01T09:00:01Z') / 1000,
      intervalSeconds: 3_600,
    });
    expect(deadManSample({ ...job, lastSuccessAt: null }, t('2026-12-01T10:00:00Z')).lastSuccessSeconds).toBe(
      Date.parse('2026-12-01T00:00:00Z') / 1000,
    );
  });
});
