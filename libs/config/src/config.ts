/** Tickwork's configuration: read from the environment once at start-up, validated, typed and frozen. */
import { hostname } from 'node:os';
import { ConfigError, EnvReader } from './env';

export interface KafkaConfig {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly ssl: boolean;
  readonly sasl: { readonly mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; readonly username: string; readonly password: string } | null;
}

export interface TopicNames {
  readonly commands: string;
  readonly commandsRejected: string;
  readonly fires: string;
  readonly fireResults: string;
  readonly deadLetters: string;
  /** One retry topic per tier, shortest delay first. */
  readonly retryTiers: readonly { readonly topic: string; readonly delayMs: number }[];
}

export interface TickworkConfig {
  readonly instanceId: string;
  readonly databaseUrl: string;
  readonly kafka: KafkaConfig;
  readonly schemaRegistryUrl: string;
  readonly topicPrefix: string;
  readonly topics: TopicNames;
  readonly shardCount: number;
  readonly firesPartitions: number;
  readonly topicReplicationFactor: number;
  readonly api: { readonly host: string; readonly port: number; readonly maxPayloadBytes: number; readonly minIntervalMs: number };
  readonly scheduler: {
    readonly groupId: string;
    readonly tickMs: number;
    readonly claimBatchSize: number;
    readonly lookaheadMs: number;
    readonly shardLeaseMs: number;
    readonly outboxRelayAgeMs: number;
    readonly maxCatchUp: number;
    readonly herdJitterMs: number;
    /** Default cap on each tenant's fires per second across the cluster; 0 = none. */
    readonly tenantMaxFiresPerSec: number;
  };
  readonly executor: {
    readonly groupId: string;
    readonly concurrency: number;
    readonly runLeaseMs: number;
    readonly heartbeatMs: number;
    /** Hosts or CIDRs a webhook may reach even though they are private or loopback. */
    readonly webhookAllowList: readonly string[];
  };
  readonly http: { readonly schedulerPort: number; readonly executorPort: number };
}

/** Reads and validates the configuration; throws ConfigError naming every bad variable. */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): TickworkConfig {
  const r = new EnvReader(env);
  const prefix = r.string('TICKWORK_TOPIC_PREFIX', 'tickwork');
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(prefix)) r.problem(`TICKWORK_TOPIC_PREFIX=${JSON.stringify(prefix)} must be letters, digits, . _ -`);

  const brokers = r.list('KAFKA_BROKERS', ['127.0.0.1:9092']);
  for (const b of brokers) if (!/^[^:\s]+:\d{1,5}$/.test(b)) r.problem(`KAFKA_BROKERS has ${JSON.stringify(b)}: each entry must be host:port`);
  const saslMechanism = r.optionalString('KAFKA_SASL_MECHANISM');
  let sasl: KafkaConfig['sasl'] = null;
  if (saslMechanism !== undefined) {
    if (saslMechanism !== 'plain' && saslMechanism !== 'scram-sha-256' && saslMechanism !== 'scram-sha-512') {
      r.problem(`KAFKA_SASL_MECHANISM=${JSON.stringify(saslMechanism)} must be plain, scram-sha-256 or scram-sha-512`);
    } else {
      const username = r.optionalString('KAFKA_SASL_USERNAME');
      const password = r.optionalString('KAFKA_SASL_PASSWORD');
      if (!username) r.problem('KAFKA_SASL_USERNAME is required when KAFKA_SASL_MECHANISM is set');
      if (!password) r.problem('KAFKA_SASL_PASSWORD is required when KAFKA_SASL_MECHANISM is set');
      sasl = { mechanism: saslMechanism, username: username ?? '', password: password ?? '' };
    }
  }

  const tiers = r.durationList('TICKWORK_RETRY_TIERS', ['5s', '1m', '10m']);
  const shardCount = r.int('TICKWORK_SHARDS', 12, 1, 10_000);
  const config: TickworkConfig = {
    instanceId: r.string('TICKWORK_INSTANCE_ID', `${hostname()}-${process.pid}`),
    databaseUrl: r.url('DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/tickwork', ['postgres:', 'postgresql:']),
    kafka: { brokers, clientId: r.string('KAFKA_CLIENT_ID', 'tickwork'), ssl: r.bool('KAFKA_SSL', false), sasl },
    schemaRegistryUrl: r.url('SCHEMA_REGISTRY_URL', 'http://127.0.0.1:8081/apis/ccompat/v7', ['http:', 'https:']),
    topicPrefix: prefix,
    topics: {
      commands: `${prefix}.commands`,
      commandsRejected: `${prefix}.commands.rejected`,
      fires: `${prefix}.fires`,
      fireResults: `${prefix}.fire-results`,
      deadLetters: `${prefix}.fires.dlq`,
      retryTiers: tiers.map((t) => ({ topic: `${prefix}.fires.retry.${t.label}`, delayMs: t.ms })).sort((a, b) => a.delayMs - b.delayMs),
    },
    shardCount,
    firesPartitions: r.int('TICKWORK_FIRES_PARTITIONS', 12, 1, 10_000),
    topicReplicationFactor: r.int('TICKWORK_TOPIC_REPLICATION', 1, 1, 10),
    api: {
      host: r.string('TICKWORK_API_HOST', '127.0.0.1'),
      port: r.int('TICKWORK_API_PORT', 3000, 0, 65_535),
      maxPayloadBytes: r.int('TICKWORK_MAX_PAYLOAD_BYTES', 256 * 1024, 1, 16 * 1024 * 1024),
      minIntervalMs: r.int('TICKWORK_MIN_INTERVAL_MS', 1_000, 1),
    },
    scheduler: {
      groupId: r.string('TICKWORK_SCHEDULER_GROUP', `${prefix}.scheduler`),
      tickMs: r.int('TICKWORK_TICK_MS', 200, 10, 60_000),
      claimBatchSize: r.int('TICKWORK_CLAIM_BATCH', 2_000, 1, 100_000),
      lookaheadMs: r.int('TICKWORK_LOOKAHEAD_MS', 0, 0, 60_000),
      shardLeaseMs: r.int('TICKWORK_SHARD_LEASE_MS', 10_000, 1_000, 600_000),
      outboxRelayAgeMs: r.int('TICKWORK_OUTBOX_RELAY_AGE_MS', 5_000, 0, 600_000),
      maxCatchUp: r.int('TICKWORK_MAX_CATCH_UP', 100, 1, 100_000),
      herdJitterMs: r.int('TICKWORK_HERD_JITTER_MS', 0, 0, 3_600_000),
      tenantMaxFiresPerSec: r.int('TICKWORK_TENANT_MAX_FIRES_PER_SEC', 0, 0, 10_000_000),
    },
    executor: {
      groupId: r.string('TICKWORK_EXECUTOR_GROUP', `${prefix}.executor`),
      concurrency: r.int('TICKWORK_EXECUTOR_CONCURRENCY', 100, 1, 10_000),
      runLeaseMs: r.int('TICKWORK_RUN_LEASE_MS', 30_000, 1_000, 3_600_000),
      heartbeatMs: r.int('TICKWORK_RUN_HEARTBEAT_MS', 10_000, 100, 3_600_000),
      webhookAllowList: r.list('TICKWORK_WEBHOOK_ALLOW', []),
    },
    http: {
      schedulerPort: r.int('TICKWORK_SCHEDULER_PORT', 3001, 0, 65_535),
      executorPort: r.int('TICKWORK_EXECUTOR_PORT', 3002, 0, 65_535),
    },
  };
  if (config.executor.heartbeatMs >= config.executor.runLeaseMs) {
    r.problem('TICKWORK_RUN_HEARTBEAT_MS must be shorter than TICKWORK_RUN_LEASE_MS');
  }
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return deepFreeze(config);
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
