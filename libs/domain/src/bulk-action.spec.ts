import { parseBulkActionRequest, parseLabelSelector, resumeSkipReason } from './bulk-action';
import { planDueOccurrences } from './claim-planner';
import type { Job } from './job';
import { DEFAULT_POLICIES } from './policies';
import { ValidationError } from './validation';

const NOW = new Date('2026-12-03T12:00:00Z');
const fields = (f: () => unknown): string[] => {
  try {
    f();
  } catch (e) {
    if (e instanceof ValidationError) return e.violations.map((v) => v.field);
    throw e;
  }
  return [];
};

describe('parseLabelSelector', () => {
  it('reads equalities and inequalities, as ListJobs does', () => {
    expect(parseLabelSelector('team=payments, env!=prod,tier==gold')).toEqual({
      equal: { team: 'payments', tier: 'gold' },
      notEqual: { env: 'prod' },
    });
  });
  it('refuses a term that is not key=value, naming the field', () => {
    expect(fields(() => parseLabelSelector('team'))).toEqual(['label_selector']);
    expect(fields(() => parseLabelSelector('=x', 'selector'))).toEqual(['selector']);
    expect(fields(() => parseLabelSelector('a=\u0000'))).toEqual(['label_selector']);
  });
  it('keeps a __proto__ key as a label', () => {
    expect(Object.keys(parseLabelSelector('__proto__=x').equal)).toEqual(['__proto__']);
  });
});

describe('parseBulkActionRequest', () => {
  it('accepts each action with a selector', () => {
    for (const action of ['PAUSE', 'RESUME', 'TRIGGER', 'DELETE'])
      expect(parseBulkActionRequest({ action, label_selector: 'team=a' }, NOW)).toMatchObject({
        action,
        dryRun: false,
        selectorText: 'team=a',
      });
  });
  it('reads a resume choice with its window and bound (default bound 1000)', () => {
    const r = parseBulkActionRequest(
      { action: 'RESUME', label_selector: 'team=a', missed: 'FIRE_ALL', catch_up_window_ms: 60_000 },
      NOW,
    );
    expect(r.catchUp).toEqual({ missed: 'FIRE_ALL', windowMs: 60_000, limit: 1000 });
  });
  it('reads a pause until a future instant, with the choice for its resume', () => {
    const r = parseBulkActionRequest(
      { action: 'PAUSE', label_selector: 'team=a', until: '2026-12-07T09:00:00Z', missed: 'SKIP' },
      NOW,
    );
    expect(r.until?.toISOString()).toBe('2026-12-07T09:00:00.000Z');
    expect(r.catchUp?.missed).toBe('SKIP');
  });
  it('names every bad field', () => {
    expect(fields(() => parseBulkActionRequest([], NOW))).toEqual(['body']);
    expect(fields(() => parseBulkActionRequest({}, NOW))).toEqual(['action', 'label_selector']);
    expect(
      fields(() => parseBulkActionRequest({ action: 'PAUSE', label_selector: 'env!=prod' }, NOW)),
    ).toEqual(['label_selector']);
    expect(
      fields(() =>
        parseBulkActionRequest(
          { action: 'TRIGGER', label_selector: 'a=b', missed: 'SKIP', until: '2027-01-01T00:00:00Z', x: 1 },
          NOW,
        ),
      ).sort(),
    ).toEqual(['missed', 'until', 'x']);
    expect(
      fields(() =>
        parseBulkActionRequest(
          { action: 'PAUSE', label_selector: 'a=b', until: '2026-01-01T00:00:00Z' },
          NOW,
        ),
      ),
    ).toEqual(['until']);
    expect(
      fields(() =>
        parseBulkActionRequest(
          {
            action: 'RESUME',
            label_selector: 'a=b',
            missed: 'FIRE_ALL',
            catch_up_limit: 0,
            catch_up_window_ms: 1.5,
          },
          NOW,
        ),
      ).sort(),
    ).toEqual(['catch_up_limit', 'catch_up_window_ms']);
    expect(
      fields(() =>
        parseBulkActionRequest({ action: 'RESUME', label_selector: 'a=b', catch_up_limit: 3 }, NOW),
      ),
    ).toEqual(['catch_up_limit']);
    expect(
      fields(() => parseBulkActionRequest({ action: 'RESUME', label_selector: 'a=b', dry_run: 'yes' }, NOW)),
    ).toEqual(['dry_run']);
    expect(
      fields(() =>
        parseBulkActionRequest({ action: 'PAUSE', label_selector: 'a=b', until: '', missed: 'SKIP' }, NOW),
      ),
    ).toEqual(['missed']);
  });
});

describe('resuming with a catch-up choice (the misfire planner under it)', () => {
  // A per-second interval job paused from 00:00:01 and resumed (claimed) at 00:00:11.
  const job: Job = {
    jobId: 'j1',
    tenantId: 't',
    schedule: { kind: 'interval', everyMs: 1_000, anchor: new Date('2026-01-01T00:00:00Z') },
    target: { type: 'kafka', topic: 'x', key: null, headers: {} },
    payload: null,
    policies: DEFAULT_POLICIES, // FIRE_ONCE
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
  const now = new Date('2026-01-01T00:00:11.000Z');
  const opts = { maxCatchUp: 100, herdJitterMs: 0 };
  const plan = (resumeCatchUp: Job['resumeCatchUp']) =>
    planDueOccurrences({ ...job, resumeCatchUp }, job.nextNominalAt!, now, opts);

  it('SKIP records the missed occurrences PAUSED, whatever the job policy', () => {
    const p = plan({ missed: 'SKIP', windowMs: null, limit: 1000 });
    // 01..08 are missed (older than the 2 s late tolerance); 09..11 are on time.
    expect(p.skips).toEqual([
      {
        reason: 'PAUSED',
        firstNominal: new Date('2026-01-01T00:00:01Z'),
        lastNominal: new Date('2026-01-01T00:00:08Z'),
        occurrences: 8,
      },
    ]);
    expect(p.fires.map((f) => f.nominalTime.getUTCSeconds())).toEqual([9, 10, 11]);
  });

  it('FIRE_ALL fires the missed ones up to its bound, the rest CATCH_UP_LIMIT; older than the window PAUSED', () => {
    const p = plan({ missed: 'FIRE_ALL', windowMs: 6_000, limit: 2 });
    expect(p.skips.map((s) => [s.reason, s.occurrences])).toEqual([
      ['PAUSED', 4], // 01..04: older than now − 6 s
      ['CATCH_UP_LIMIT', 2], // 07, 08
    ]);
    expect(p.fires.map((f) => f.nominalTime.getUTCSeconds())).toEqual([5, 6, 9, 10, 11]);
  });

  it('the bound never exceeds the scheduler’s max catch-up', () => {
    const p = planDueOccurrences(
      { ...job, resumeCatchUp: { missed: 'FIRE_ALL', windowMs: null, limit: 1000 } },
      job.nextNominalAt!,
      now,
      { ...opts, maxCatchUp: 3 },
    );
    expect(p.fires.filter((f) => f.nominalTime.getTime() < now.getTime() - 2_000)).toHaveLength(3);
  });

  it('FIRE_ONCE coalesces them into one fire; without a choice the job policy applies as before', () => {
    expect(plan({ missed: 'FIRE_ONCE', windowMs: null, limit: 1000 }).skips.map((s) => s.reason)).toEqual([
      'COALESCED',
    ]);
    const untouched = planDueOccurrences(
      { ...job, policies: { ...DEFAULT_POLICIES, misfire: 'SKIP' } },
      job.nextNominalAt!,
      now,
      opts,
    );
    expect(untouched.skips.map((s) => s.reason)).toEqual(['MISFIRE_SKIP']);
  });

  it('maps only the choice-made skips to PAUSED', () => {
    expect(
      ['MISFIRE_SKIP', 'OUTSIDE_CATCH_UP_WINDOW', 'COALESCED', 'CATCH_UP_LIMIT', 'OVERLAP'].map(
        resumeSkipReason,
      ),
    ).toEqual(['PAUSED', 'PAUSED', 'COALESCED', 'CATCH_UP_LIMIT', 'OVERLAP']);
  });
});
