import { ConfigError, loadConfig, parseDuration } from './index';

describe('loadConfig', () => {
  it('works with no environment at all (laptop defaults)', () => {
    const c = loadConfig({});
    expect(c.kafka.brokers).toEqual(['127.0.0.1:9092']);
    expect(c.databaseUrl).toBe('postgres://postgres@127.0.0.1:5432/tickwork');
    expect(c.topics.fires).toBe('tickwork.fires');
    expect(c.topics.retryTiers.map((t) => t.topic)).toEqual([
      'tickwork.fires.retry.5s',
      'tickwork.fires.retry.1m',
      'tickwork.fires.retry.10m',
    ]);
    expect(Object.isFrozen(c.scheduler)).toBe(true);
  });

  it('derives every topic and group from the prefix', () => {
    const c = loadConfig({ TICKWORK_TOPIC_PREFIX: 't1' });
    expect(c.topics.commands).toBe('t1.commands');
    expect(c.scheduler.groupId).toBe('t1.scheduler');
    expect(c.executor.groupId).toBe('t1.executor');
  });

  it('names every bad variable at once', () => {
    let error: unknown;
    try {
      loadConfig({
        TICKWORK_SHARDS: 'many',
        DATABASE_URL: 'mysql://x',
        KAFKA_BROKERS: 'nohostport',
        TICKWORK_RETRY_TIERS: '5s,soon',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('TICKWORK_SHARDS="many"');
    expect(message).toContain('DATABASE_URL');
    expect(message).toContain('KAFKA_BROKERS');
    expect(message).toContain('TICKWORK_RETRY_TIERS has "soon"');
  });

  it('requires SASL credentials when a mechanism is set', () => {
    expect(() => loadConfig({ KAFKA_SASL_MECHANISM: 'plain' })).toThrow(/KAFKA_SASL_USERNAME is required/);
  });

  it('takes a lookahead longer than the outbox relay age (the relay waits for the release time of a batch)', () => {
    const c = loadConfig({ TICKWORK_LOOKAHEAD_MS: '10000', TICKWORK_OUTBOX_RELAY_AGE_MS: '5000' });
    expect([c.scheduler.lookaheadMs, c.scheduler.outboxRelayAgeMs]).toEqual([10_000, 5_000]);
    expect(() => loadConfig({ TICKWORK_LOOKAHEAD_MS: '60001' })).toThrow(/TICKWORK_LOOKAHEAD_MS/);
  });

  it('sets the idle-in-transaction timeout of database sessions, within bounds', () => {
    expect(loadConfig({}).dbIdleInTransactionTimeoutMs).toBe(10_000);
    expect(
      loadConfig({ TICKWORK_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: '1000' }).dbIdleInTransactionTimeoutMs,
    ).toBe(1_000);
    expect(() => loadConfig({ TICKWORK_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: '0' })).toThrow(
      /TICKWORK_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS="0" must be an integer between 100 and 3600000/,
    );
  });

  it('reads the fire SLO defaults, and refuses a missed-after shorter than the tolerance', () => {
    expect(loadConfig({}).slo).toEqual({
      toleranceMs: 60_000,
      missedAfterMs: 86_400_000,
      sweepMs: 5_000,
      maxMetricJobs: 1_000,
    });
    expect(loadConfig({ TICKWORK_SLO_TOLERANCE_MS: '0' }).slo.toleranceMs).toBe(0);
    expect(() => loadConfig({ TICKWORK_SLO_TOLERANCE_MS: '-1' })).toThrow(/TICKWORK_SLO_TOLERANCE_MS="-1"/);
    expect(() => loadConfig({ TICKWORK_SLO_SWEEP_MS: 'soon' })).toThrow(/TICKWORK_SLO_SWEEP_MS="soon"/);
    expect(() =>
      loadConfig({ TICKWORK_SLO_TOLERANCE_MS: '7200000', TICKWORK_SLO_MISSED_AFTER_MS: '3600000' }),
    ).toThrow(/TICKWORK_SLO_MISSED_AFTER_MS must be at least TICKWORK_SLO_TOLERANCE_MS/);
  });

  it('keeps a payload small enough for its fire event to fit in a Kafka message', () => {
    expect(loadConfig({ TICKWORK_MAX_PAYLOAD_BYTES: '786432' }).api.maxPayloadBytes).toBe(786_432);
    expect(() => loadConfig({ TICKWORK_MAX_PAYLOAD_BYTES: '1048576' })).toThrow(
      /TICKWORK_MAX_PAYLOAD_BYTES="1048576" must be an integer between 1 and 786432/,
    );
  });

  it('parses durations', () => {
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('5s')).toBe(5_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('42')).toBe(42);
    expect(parseDuration('soon')).toBeUndefined();
  });
});

describe('topic replication settings', () => {
  it('defaults to RF 1 / min ISR 1 (one broker), and min ISR 2 once replicated', () => {
    const laptop = loadConfig({});
    expect([laptop.topicReplicationFactor, laptop.topicMinInsyncReplicas]).toEqual([1, 1]);
    const cluster = loadConfig({ TICKWORK_TOPIC_REPLICATION: '3' });
    expect([cluster.topicReplicationFactor, cluster.topicMinInsyncReplicas]).toEqual([3, 2]);
    expect(
      loadConfig({ TICKWORK_TOPIC_REPLICATION: '3', TICKWORK_TOPIC_MIN_ISR: '3' }).topicMinInsyncReplicas,
    ).toBe(3);
  });

  it.each([
    [
      { TICKWORK_TOPIC_REPLICATION: '3', TICKWORK_TOPIC_MIN_ISR: '1' },
      'TICKWORK_TOPIC_MIN_ISR=1 with TICKWORK_TOPIC_REPLICATION=3',
    ],
    [
      { TICKWORK_TOPIC_REPLICATION: '2', TICKWORK_TOPIC_MIN_ISR: '3' },
      'TICKWORK_TOPIC_MIN_ISR=3 is more than TICKWORK_TOPIC_REPLICATION=2',
    ],
    [{ TICKWORK_TOPIC_MIN_ISR: '0' }, 'TICKWORK_TOPIC_MIN_ISR="0" must be an integer'],
  ])('refuses %j naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
