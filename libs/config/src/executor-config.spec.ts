import { ConfigError, loadConfig } from './index';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const SECRET2 = `whsec_${Buffer.alloc(24, 2).toString('base64')}`;

function problems(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('executor configuration', () => {
  it('has working defaults', () => {
    const x = loadConfig({}).executor;
    expect(x.webhookAllowList).toEqual([]);
    expect(x.webhookSecrets).toEqual({});
    expect(x.sessionTimeoutMs).toBe(6_000);
    expect(x.runRetentionMs).toBe(30 * 86_400_000);
    expect(x.runPurgeIntervalMs).toBe(60_000);
    expect(x.drainMs).toBe(10_000);
    expect(x.heldBytesPerPartition).toBe(2 * 1024 * 1024);
    expect(x.memberName).toBeUndefined();
    expect(x.deadAfterMs).toBe(5_000);
  });

  it('takes a dead-holder limit of at least 2 s, naming the variable otherwise', () => {
    expect(loadConfig({ TICKWORK_EXECUTOR_DEAD_AFTER_MS: '8000' }).executor.deadAfterMs).toBe(8_000);
    expect(problems({ TICKWORK_EXECUTOR_DEAD_AFTER_MS: '500' })).toContain('TICKWORK_EXECUTOR_DEAD_AFTER_MS');
  });

  it('takes a static member name Kafka accepts, and refuses one it would not', () => {
    expect(loadConfig({ TICKWORK_EXECUTOR_MEMBER_NAME: 'executor-0.prod_eu' }).executor.memberName).toBe(
      'executor-0.prod_eu',
    );
    expect(problems({ TICKWORK_EXECUTOR_MEMBER_NAME: 'exec 1' })).toContain('TICKWORK_EXECUTOR_MEMBER_NAME');
    expect(problems({ TICKWORK_EXECUTOR_MEMBER_NAME: 'x'.repeat(250) })).toContain('1-249 characters');
  });

  it('wants a partition to hold at least one fetch', () => {
    const m = problems({ TICKWORK_EXECUTOR_FETCH_BYTES: '1048576', TICKWORK_EXECUTOR_HELD_BYTES: '524288' });
    expect(m).toContain('TICKWORK_EXECUTOR_HELD_BYTES must be at least TICKWORK_EXECUTOR_FETCH_BYTES');
    expect(loadConfig({ TICKWORK_EXECUTOR_HELD_BYTES: '262144' }).executor.heldBytesPerPartition).toBe(
      262_144,
    );
  });

  it('reads the allow-list: hosts, *.domains, addresses and CIDRs', () => {
    const x = loadConfig({
      TICKWORK_WEBHOOK_ALLOW: 'localhost, *.svc.local,127.0.0.1,10.0.0.0/8,fd00::/8',
    }).executor;
    expect(x.webhookAllowList).toEqual(['localhost', '*.svc.local', '127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
  });

  it('names bad allow-list entries', () => {
    const m = problems({ TICKWORK_WEBHOOK_ALLOW: '10.0.0.0/40,bad host,ok.example' });
    expect(m).toContain('TICKWORK_WEBHOOK_ALLOW has "10.0.0.0/40"');
    expect(m).toContain('TICKWORK_WEBHOOK_ALLOW has "bad host"');
    expect(m).not.toContain('ok.example');
  });

  it('reads per-tenant secrets, one or several', () => {
    const x = loadConfig({
      TICKWORK_WEBHOOK_SECRETS: JSON.stringify({ acme: [SECRET, SECRET2], '*': SECRET }),
    }).executor;
    expect(x.webhookSecrets).toEqual({ acme: [SECRET, SECRET2], '*': [SECRET] });
    expect(Object.isFrozen(x.webhookSecrets.acme)).toBe(true);
  });

  it('names bad secrets without printing them', () => {
    const m = problems({
      TICKWORK_WEBHOOK_SECRETS: JSON.stringify({
        acme: ['whsec_c2hvcnQ='],
        globex: 'plaintext-secret',
        x: [],
      }),
    });
    expect(m).toContain('TICKWORK_WEBHOOK_SECRETS["acme"][0]');
    expect(m).toContain('TICKWORK_WEBHOOK_SECRETS["globex"][0]');
    expect(m).toContain('TICKWORK_WEBHOOK_SECRETS["x"]');
    expect(m).not.toContain('c2hvcnQ');
    expect(m).not.toContain('plaintext-secret');
    expect(problems({ TICKWORK_WEBHOOK_SECRETS: '{not json' })).toContain(
      'TICKWORK_WEBHOOK_SECRETS must be JSON',
    );
  });

  it('reads retention and purge durations and refuses nonsense', () => {
    const x = loadConfig({ TICKWORK_RUN_RETENTION: '7d', TICKWORK_RUN_PURGE_INTERVAL: '0' }).executor;
    expect(x.runRetentionMs).toBe(7 * 86_400_000);
    expect(x.runPurgeIntervalMs).toBe(0);
    expect(problems({ TICKWORK_RUN_RETENTION: 'forever' })).toContain('TICKWORK_RUN_RETENTION="forever"');
    expect(problems({ TICKWORK_RUN_RETENTION: '1s' })).toContain('at least 60000 ms');
    expect(problems({ TICKWORK_EXECUTOR_SESSION_TIMEOUT_MS: '1000' })).toContain(
      'TICKWORK_EXECUTOR_SESSION_TIMEOUT_MS',
    );
  });
});
