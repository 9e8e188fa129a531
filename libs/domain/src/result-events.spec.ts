import { DEFAULT_JOB_LIMITS, parseJobDefinition, policiesFromWire, policiesToWire } from './job-wire';
import { DEFAULT_POLICIES, shouldPublishResult, type ResultEventsPolicy } from './policies';
import type { FireOutcome } from './fire';

const ctx = { now: new Date('2026-12-01T00:00:00Z'), limits: DEFAULT_JOB_LIMITS, newJobId: () => 'job-1' };
const base = {
  schedule: { kind: 'interval', every_ms: 60_000 },
  target: { type: 'webhook', url: 'https://x.test/h' },
};
const parse = (policies: unknown) => parseJobDefinition({ ...base, policies }, ctx);

describe('policies.result_events', () => {
  it('defaults to ALL, stored as before (no key)', () => {
    const parsed = parse({});
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value.policies.resultEvents).toBeUndefined();
    expect(shouldPublishResult(parsed.value.policies.resultEvents, 'SUCCEEDED')).toBe(true);
    expect(policiesToWire(parsed.value.policies)).not.toHaveProperty('result_events');
    expect(policiesFromWire(policiesToWire(parsed.value.policies)).resultEvents).toBeUndefined();
  });

  it.each(['FAILURES', 'NONE'] as const)('accepts %s and round-trips it through the wire form', (value) => {
    const parsed = parse({ result_events: value });
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value.policies.resultEvents).toBe(value);
    const wire = policiesToWire(parsed.value.policies);
    expect(wire.result_events).toBe(value);
    expect(policiesFromWire(wire).resultEvents).toBe(value);
  });

  it('accepts an explicit ALL as the default', () => {
    const parsed = parse({ result_events: 'ALL' });
    expect(parsed.ok && parsed.value.policies.resultEvents).toBeUndefined();
  });

  it.each([['SOME'], ['all'], [3], [true], [['ALL']]])(
    'refuses %p, naming policies.result_events',
    (value) => {
      const parsed = parse({ result_events: value });
      expect(parsed.ok).toBe(false);
      if (parsed.ok) return;
      expect(parsed.violations).toEqual([
        { field: 'policies.result_events', message: 'must be one of ALL, FAILURES, NONE' },
      ]);
    },
  );

  it('reads unknown stored values as ALL (publishing is the safe side)', () => {
    expect(
      policiesFromWire({ ...policiesToWire(DEFAULT_POLICIES), result_events: 'bogus' }).resultEvents,
    ).toBe(undefined);
  });
});

describe('shouldPublishResult', () => {
  const outcomes: FireOutcome[] = ['SUCCEEDED', 'FAILED', 'RETRYING', 'DEAD_LETTERED', 'SKIPPED'];
  const published = (policy: ResultEventsPolicy | undefined) =>
    outcomes.filter((o) => shouldPublishResult(policy, o));

  it('ALL (and absent) publishes every outcome', () => {
    expect(published('ALL')).toEqual(outcomes);
    expect(published(undefined)).toEqual(outcomes);
  });

  it('FAILURES publishes everything but SUCCEEDED', () => {
    expect(published('FAILURES')).toEqual(['FAILED', 'RETRYING', 'DEAD_LETTERED', 'SKIPPED']);
  });

  it('NONE publishes nothing', () => {
    expect(published('NONE')).toEqual([]);
  });
});
