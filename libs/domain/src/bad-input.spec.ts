import { DEFAULT_JOB_LIMITS, MAX_PAYLOAD_DEPTH, parseJobDefinition, payloadProblems } from './job-wire';
import {
  isSecretHeaderName,
  maskTargetSecrets,
  restoreMaskedSecrets,
  SECRET_HEADER_MASK,
} from './secret-headers';
import { storableText, unstorableTextProblem } from './validation';

const ctx = { now: new Date('2026-12-01T00:00:00Z'), limits: DEFAULT_JOB_LIMITS, newJobId: () => 'job-1' };
const schedule = { kind: 'interval', every_ms: 60_000 };
const webhook = { type: 'webhook', url: 'https://example.com/h' };
const fieldsOf = (body: unknown) => {
  const parsed = parseJobDefinition(body, ctx);
  return parsed.ok ? [] : parsed.violations.map((v) => v.field);
};
const nested = (depth: number): unknown => {
  let v: unknown = 0;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
};

describe('text PostgreSQL cannot store', () => {
  it('finds NUL and unpaired surrogates, and accepts surrogate pairs', () => {
    expect(unstorableTextProblem('a\u0000')).toMatch(/U\+0000/);
    expect(unstorableTextProblem('a\ud800')).toMatch(/unpaired/);
    expect(unstorableTextProblem('\udc00a')).toMatch(/unpaired/);
    expect(unstorableTextProblem('emoji 😀 é')).toBeUndefined();
    expect(storableText('a\u0000b\ud800')).toBe('a\ufffdb\ufffd');
  });

  it('names the field of every place a job carries text', () => {
    expect(
      fieldsOf({
        schedule,
        target: { ...webhook, headers: { 'X-A': 'a\u0000' } },
        payload: { list: ['ok', 'a\ud800'], ['k\u0000']: 1 },
        labels: { team: 'a\u0000' },
      }),
    ).toEqual(
      expect.arrayContaining(['target.headers.X-A', 'payload.list[1]', 'payload.k\u0000', 'labels.team']),
    );
  });
});

describe('payload nesting', () => {
  it(`accepts ${MAX_PAYLOAD_DEPTH} levels and refuses one more, and 100,000, without recursion`, () => {
    expect(payloadProblems(nested(MAX_PAYLOAD_DEPTH), 'payload')).toEqual([]);
    expect(payloadProblems(nested(MAX_PAYLOAD_DEPTH + 1), 'payload').map((v) => v.field)).toEqual([
      'payload',
    ]);
    expect(payloadProblems(nested(100_000), 'payload')).toHaveLength(1);
  });
});

describe('shapes', () => {
  it('refuses unknown keys in retry and success_status, __proto__ labels, and header injection', () => {
    expect(fieldsOf({ schedule, target: webhook, policies: { retry: { max_attempt: 3 } } })).toEqual([
      'policies.retry.max_attempt',
    ]);
    expect(fieldsOf({ schedule, target: webhook, policies: { retry: 5 } })).toEqual(['policies.retry']);
    expect(
      fieldsOf({ schedule, target: { ...webhook, success_status: { min: 200, max: 299, x: 1 } } }),
    ).toEqual(['target.success_status.x']);
    expect(fieldsOf({ schedule, target: webhook, labels: JSON.parse('{"__proto__": "x"}') })).toEqual([
      'labels.__proto__',
    ]);
    expect(fieldsOf({ schedule, target: { ...webhook, headers: { 'X-A\r\nB': 'v' } } })).toEqual([
      'target.headers.X-A\r\nB',
    ]);
    expect(fieldsOf({ schedule, target: { ...webhook, headers: { 'X-A': 'v\r\nB: 1' } } })).toEqual([
      'target.headers.X-A',
    ]);
    expect(fieldsOf({ schedule, target: { ...webhook, headers: { 'X-A': 'tab\tis fine' } } })).toEqual([]);
  });
});

describe('secret headers', () => {
  it('are chosen by name', () => {
    for (const n of [
      'Authorization',
      'proxy-authorization',
      'Cookie',
      'X-Api-Key',
      'X-Auth-Token',
      'client_secret',
    ])
      expect(isSecretHeaderName(n)).toBe(true);
    for (const n of ['content-type', 'x-source', 'traceparent']) expect(isSecretHeaderName(n)).toBe(false);
  });

  it('are masked on read and restored from the stored job when the mask comes back', () => {
    const stored = {
      type: 'webhook' as const,
      url: 'https://example.com/h',
      method: 'POST' as const,
      headers: { Authorization: 'Bearer s', 'X-Plain': 'p' },
      timeoutMs: 10_000,
      successStatus: { min: 200, max: 299 },
    };
    expect(maskTargetSecrets({ type: 'webhook', headers: stored.headers }).headers).toEqual({
      Authorization: SECRET_HEADER_MASK,
      'X-Plain': 'p',
    });
    const back = restoreMaskedSecrets(
      { type: 'webhook', headers: { authorization: SECRET_HEADER_MASK, 'X-Plain': 'q' } },
      stored,
    );
    expect(back).toEqual({
      target: { type: 'webhook', headers: { authorization: 'Bearer s', 'X-Plain': 'q' } },
      violations: [],
    });
    expect(
      restoreMaskedSecrets(
        { type: 'webhook', headers: { 'X-Api-Key': SECRET_HEADER_MASK } },
        stored,
      ).violations.map((v) => v.field),
    ).toEqual(['target.headers.X-Api-Key']);
  });
});
