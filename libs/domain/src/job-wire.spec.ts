import { DEFAULT_JOB_LIMITS, parseJobDefinition, TARGET_LIMITS } from './job-wire';

const ctx = { now: new Date('2026-12-01T00:00:00Z'), limits: DEFAULT_JOB_LIMITS, newJobId: () => 'job-1' };
const schedule = { kind: 'interval', every_ms: 60_000 };
const violationsOf = (body: unknown) => {
  const parsed = parseJobDefinition(body, ctx);
  return parsed.ok ? [] : parsed.violations.map((v) => `${v.field} ${v.message}`);
};

describe('a job definition stays small enough to fire', () => {
  it('accepts a webhook and a Kafka target at their limits', () => {
    const headers = { 'x-big': 'h'.repeat(TARGET_LIMITS.headersBytes - 'x-big'.length) };
    const url = `https://example.com/${'u'.repeat(TARGET_LIMITS.urlChars - 'https://example.com/'.length)}`;
    expect(violationsOf({ schedule, target: { type: 'webhook', url, headers } })).toEqual([]);
    expect(
      violationsOf({
        schedule,
        target: { type: 'kafka', topic: 'orders', key: 'k'.repeat(TARGET_LIMITS.keyChars), headers },
      }),
    ).toEqual([]);
  });

  it('refuses target headers over 16 KiB, naming the field and the size', () => {
    const headers = { a: 'x'.repeat(10_000), b: 'é'.repeat(4_000) };
    expect(violationsOf({ schedule, target: { type: 'kafka', topic: 'orders', headers } })).toEqual([
      'target.headers are 18002 bytes; the limit is 16384',
    ]);
  });

  it('refuses a URL or a Kafka key past its length, naming the field', () => {
    const url = `https://example.com/${'u'.repeat(TARGET_LIMITS.urlChars)}`;
    expect(violationsOf({ schedule, target: { type: 'webhook', url } })).toEqual([
      'target.url must be at most 8192 characters',
    ]);
    expect(
      violationsOf({ schedule, target: { type: 'kafka', topic: 'orders', key: 'k'.repeat(4_097) } }),
    ).toEqual(['target.key must be at most 4096 characters']);
  });

  it('refuses a payload over the configured limit', () => {
    const payload = { data: 'p'.repeat(DEFAULT_JOB_LIMITS.maxPayloadBytes) };
    expect(violationsOf({ schedule, target: { type: 'kafka', topic: 'orders' }, payload })).toEqual([
      `payload is ${DEFAULT_JOB_LIMITS.maxPayloadBytes + 11} bytes; the limit is ${DEFAULT_JOB_LIMITS.maxPayloadBytes}`,
    ]);
  });
});

describe('a target names only what a fire may reach', () => {
  it('refuses credentials in a webhook URL, which every read would show', () => {
    for (const url of [
      'https://user:pw@example.com/h',
      'https://token@example.com/h',
      'http://:pw@example.com/',
    ])
      expect(violationsOf({ schedule, target: { type: 'webhook', url } })).toEqual([
        'target.url must not carry credentials (user:password@); put them in a secret header such as Authorization',
      ]);
    expect(
      violationsOf({ schedule, target: { type: 'webhook', url: 'https://example.com/h?x=a@b' } }),
    ).toEqual([]);
  });

  it("refuses Kafka's internal topics and Tickwork's own, but not a name that merely looks alike", () => {
    const limits = { ...DEFAULT_JOB_LIMITS, reservedTopics: ['tickwork.fires', 'tickwork.commands'] };
    const refused = (topic: string) => {
      const parsed = parseJobDefinition({ schedule, target: { type: 'kafka', topic } }, { ...ctx, limits });
      return parsed.ok ? [] : parsed.violations.map((v) => v.field);
    };
    for (const topic of [
      '__consumer_offsets',
      '__transaction_state',
      '_schemas',
      'tickwork.fires',
      'tickwork.commands',
    ])
      expect([topic, refused(topic)]).toEqual([topic, ['target.topic']]);
    for (const topic of ['_private', 'tickwork.fires.audit', 'orders'])
      expect([topic, refused(topic)]).toEqual([topic, []]);
  });
});
