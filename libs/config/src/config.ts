/** Tickwork's configuration: read from the environment once at start-up, validated, typed and frozen. */
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { ConfigError, EnvReader, parseDuration } from './env';
import { readStoreShardMap, type StoreShardMap } from './store-shards';

export interface KafkaConfig {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly ssl: boolean;
  readonly sasl: {
    readonly mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512';
    readonly username: string;
    readonly password: string;
  } | null;
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

/** Every topic Tickwork itself reads or writes: no job's Kafka target may name one (it could forge fires or commands). */
export function ownTopics(topics: TopicNames): string[] {
  return [
    topics.commands,
    topics.commandsRejected,
    topics.fires,
    topics.fireResults,
    topics.deadLetters,
    ...topics.retryTiers.map((t) => t.topic),
  ];
}

export interface TickworkConfig {
  readonly instanceId: string;
  readonly databaseUrl: string;
  /**
   * Which database holds each shard's jobs, fires, leases and runs (TICKWORK_STORE_SHARDS); by
   * default every shard is in DATABASE_URL, which always holds the tenant-wide tables.
   */
  readonly storeShards: StoreShardMap;
  /**
   * PostgreSQL ends a session left idle inside a transaction this long (a frozen process's locks
   * are dropped); the process sees the session as lost and goes on with a new one.
   */
  readonly dbIdleInTransactionTimeoutMs: number;
  readonly kafka: KafkaConfig;
  readonly schemaRegistryUrl: string;
  readonly topicPrefix: string;
  readonly topics: TopicNames;
  readonly shardCount: number;
  readonly firesPartitions: number;
  readonly topicReplicationFactor: number;
  /**
   * min.insync.replicas of every topic: with acks=all, the brokers that hold an acknowledged fire.
   * 2 or more whenever the replication factor is above 1 (libs/messaging replication.ts).
   */
  readonly topicMinInsyncReplicas: number;
  readonly api: {
    readonly host: string;
    readonly port: number;
    readonly maxPayloadBytes: number;
    readonly minIntervalMs: number;
  };
  readonly scheduler: {
    readonly groupId: string;
    readonly tickMs: number;
    readonly claimBatchSize: number;
    /** Fire loops per instance, each claiming a disjoint subset of the held shards in parallel. */
    readonly claimLanes: number;
    readonly lookaheadMs: number;
    /** Most fires an instance holds claimed ahead of their time; at this many, its lanes claim only what is due now. */
    readonly lookaheadMaxFires: number;
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
    /**
     * An executor process silent (no liveness beat) this long, while another beat without a
     * break, is taken for dead: its leased runs are taken over before their leases expire (a
     * lease shorter than this expires first, and this has no effect).
     */
    readonly deadAfterMs: number;
    /** Hosts or CIDRs a webhook may reach even though they are private or loopback. */
    readonly webhookAllowList: readonly string[];
    /** Standard Webhooks signing secrets (`whsec_…`) per tenant id; `*` applies to all other tenants. */
    readonly webhookSecrets: Readonly<Record<string, readonly string[]>>;
    /** Kafka session timeout of the executor's consumers: how soon a dead executor's partitions move. */
    readonly sessionTimeoutMs: number;
    /**
     * This executor's name in its consumer groups (Kafka static membership), stable across its
     * restarts: restarted within the session timeout it takes its partitions back without stopping
     * the other executors. Unset = a dynamic member (every join and death rebalances the group).
     */
    readonly memberName: string | undefined;
    /** Bytes fetched per partition at a time. */
    readonly fetchBytesPerPartition: number;
    /**
     * Bytes of fetched messages a partition may hold from its oldest unfinished one on: fetching
     * ahead past slow fires stops there (the memory bound per assigned partition).
     */
    readonly heldBytesPerPartition: number;
    /**
     * After an assignment, how long overdue fires wait for the other assigned partitions that have
     * fires waiting, so that a backlog starts in due order across partitions; 0 = no wait.
     */
    readonly backlogSettleMs: number;
    /** On shutdown, how long running fires get to finish before they are aborted and their leases released. */
    readonly drainMs: number;
    /** Finished runs older than this are purged from job_runs; fires older than this are refused. */
    readonly runRetentionMs: number;
    /** How often an executor purges expired runs; 0 = never (let other executors do it). */
    readonly runPurgeIntervalMs: number;
    readonly runPurgeBatchSize: number;
  };
  /** Fire SLOs (LATE / MISSED in the occurrence ledger), judged by the scheduler owning each shard. */
  readonly slo: {
    /** Tolerance of a job without its own `tolerance_ms`: started later than this after its nominal time is LATE. */
    readonly toleranceMs: number;
    /** An occurrence not started by its next occurrence, and at most this long after its nominal time, is MISSED. */
    readonly missedAfterMs: number;
    /** How often a scheduler judges the occurrences of the shards it holds. */
    readonly sweepMs: number;
    /** Most opted-in jobs (policies.slo_metrics) a scheduler exports per-job series for. */
    readonly maxMetricJobs: number;
  };
  readonly http: { readonly schedulerPort: number; readonly executorPort: number };
}

/** Reads and validates the configuration; throws ConfigError naming every bad variable. */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): TickworkConfig {
  const r = new EnvReader(env);
  const prefix = r.string('TICKWORK_TOPIC_PREFIX', 'tickwork');
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(prefix))
    r.problem(`TICKWORK_TOPIC_PREFIX=${JSON.stringify(prefix)} must be letters, digits, . _ -`);

  const brokers = r.list('KAFKA_BROKERS', ['127.0.0.1:9092']);
  for (const b of brokers)
    if (!/^[^:\s]+:\d{1,5}$/.test(b))
      r.problem(`KAFKA_BROKERS has ${JSON.stringify(b)}: each entry must be host:port`);
  const saslMechanism = r.optionalString('KAFKA_SASL_MECHANISM');
  let sasl: KafkaConfig['sasl'] = null;
  if (saslMechanism !== undefined) {
    if (saslMechanism !== 'plain' && saslMechanism !== 'scram-sha-256' && saslMechanism !== 'scram-sha-512') {
      r.problem(
        `KAFKA_SASL_MECHANISM=${JSON.stringify(saslMechanism)} must be plain, scram-sha-256 or scram-sha-512`,
      );
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
  const replication = r.int('TICKWORK_TOPIC_REPLICATION', 1, 1, 10);
  const minIsr = r.int('TICKWORK_TOPIC_MIN_ISR', Math.min(2, replication), 1, 10);
  if (minIsr > replication)
    r.problem(
      `TICKWORK_TOPIC_MIN_ISR=${minIsr} is more than TICKWORK_TOPIC_REPLICATION=${replication}: no fire could ever be acknowledged`,
    );
  else if (replication > 1 && minIsr < 2)
    r.problem(
      `TICKWORK_TOPIC_MIN_ISR=${minIsr} with TICKWORK_TOPIC_REPLICATION=${replication} acknowledges a fire held by one broker only, which that broker's loss loses: use 2 or more`,
    );
  const databaseUrl = r.url('DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/tickwork', [
    'postgres:',
    'postgresql:',
  ]);
  const config: TickworkConfig = {
    instanceId: r.string('TICKWORK_INSTANCE_ID', `${hostname()}-${process.pid}`),
    databaseUrl,
    storeShards: readStoreShardMap(r, shardCount, databaseUrl),
    dbIdleInTransactionTimeoutMs: r.int('TICKWORK_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', 10_000, 100, 3_600_000),
    kafka: {
      brokers,
      clientId: r.string('KAFKA_CLIENT_ID', 'tickwork'),
      ssl: r.bool('KAFKA_SSL', false),
      sasl,
    },
    schemaRegistryUrl: r.url('SCHEMA_REGISTRY_URL', 'http://127.0.0.1:8081/apis/ccompat/v7', [
      'http:',
      'https:',
    ]),
    topicPrefix: prefix,
    topics: {
      commands: `${prefix}.commands`,
      commandsRejected: `${prefix}.commands.rejected`,
      fires: `${prefix}.fires`,
      fireResults: `${prefix}.fire-results`,
      deadLetters: `${prefix}.fires.dlq`,
      retryTiers: tiers
        .map((t) => ({ topic: `${prefix}.fires.retry.${t.label}`, delayMs: t.ms }))
        .sort((a, b) => a.delayMs - b.delayMs),
    },
    shardCount,
    firesPartitions: r.int('TICKWORK_FIRES_PARTITIONS', 12, 1, 10_000),
    topicReplicationFactor: replication,
    topicMinInsyncReplicas: minIsr,
    api: {
      host: r.string('TICKWORK_API_HOST', '127.0.0.1'),
      port: r.int('TICKWORK_API_PORT', 3000, 0, 65_535),
      // A fire event carries its job's payload, and Kafka refuses a message over its default
      // message.max.bytes (1 MiB): a larger payload could be stored but never fired.
      maxPayloadBytes: r.int('TICKWORK_MAX_PAYLOAD_BYTES', 256 * 1024, 1, 768 * 1024),
      minIntervalMs: r.int('TICKWORK_MIN_INTERVAL_MS', 1_000, 1),
    },
    scheduler: {
      groupId: r.string('TICKWORK_SCHEDULER_GROUP', `${prefix}.scheduler`),
      tickMs: r.int('TICKWORK_TICK_MS', 200, 10, 60_000),
      claimBatchSize: r.int('TICKWORK_CLAIM_BATCH', 2_000, 1, 100_000),
      claimLanes: r.int('TICKWORK_CLAIM_LANES', 4, 1, 64),
      lookaheadMs: r.int('TICKWORK_LOOKAHEAD_MS', 0, 0, 60_000),
      lookaheadMaxFires: r.int('TICKWORK_LOOKAHEAD_MAX_FIRES', 100_000, 1, 10_000_000),
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
      deadAfterMs: r.int('TICKWORK_EXECUTOR_DEAD_AFTER_MS', 5_000, 2_000, 3_600_000),
      webhookAllowList: allowList(r),
      webhookSecrets: webhookSecrets(r),
      sessionTimeoutMs: r.int('TICKWORK_EXECUTOR_SESSION_TIMEOUT_MS', 6_000, 6_000, 300_000),
      memberName: memberName(r, 'TICKWORK_EXECUTOR_MEMBER_NAME'),
      fetchBytesPerPartition: r.int('TICKWORK_EXECUTOR_FETCH_BYTES', 256 * 1024, 1_024, 64 * 1024 * 1024),
      heldBytesPerPartition: r.int('TICKWORK_EXECUTOR_HELD_BYTES', 2 * 1024 * 1024, 1_024, 1024 ** 3),
      backlogSettleMs: r.int('TICKWORK_EXECUTOR_BACKLOG_SETTLE_MS', 1_500, 0, 30_000),
      drainMs: r.int('TICKWORK_EXECUTOR_DRAIN_MS', 10_000, 0, 600_000),
      runRetentionMs: duration(r, 'TICKWORK_RUN_RETENTION', '30d', 60_000),
      runPurgeIntervalMs: duration(r, 'TICKWORK_RUN_PURGE_INTERVAL', '1m', 0),
      runPurgeBatchSize: r.int('TICKWORK_RUN_PURGE_BATCH', 1_000, 1, 100_000),
    },
    slo: {
      toleranceMs: r.int('TICKWORK_SLO_TOLERANCE_MS', 60_000, 0, 366 * 86_400_000),
      missedAfterMs: r.int('TICKWORK_SLO_MISSED_AFTER_MS', 86_400_000, 1_000, 366 * 86_400_000),
      sweepMs: r.int('TICKWORK_SLO_SWEEP_MS', 5_000, 100, 600_000),
      maxMetricJobs: r.int('TICKWORK_SLO_METRICS_MAX_JOBS', 1_000, 0, 100_000),
    },
    http: {
      schedulerPort: r.int('TICKWORK_SCHEDULER_PORT', 3001, 0, 65_535),
      executorPort: r.int('TICKWORK_EXECUTOR_PORT', 3002, 0, 65_535),
    },
  };
  if (config.executor.heldBytesPerPartition < config.executor.fetchBytesPerPartition) {
    r.problem(
      'TICKWORK_EXECUTOR_HELD_BYTES must be at least TICKWORK_EXECUTOR_FETCH_BYTES (a partition holds at least one fetch)',
    );
  }
  if (config.executor.heartbeatMs >= config.executor.runLeaseMs) {
    r.problem('TICKWORK_RUN_HEARTBEAT_MS must be shorter than TICKWORK_RUN_LEASE_MS');
  }
  if (config.slo.missedAfterMs < config.slo.toleranceMs) {
    r.problem(
      'TICKWORK_SLO_MISSED_AFTER_MS must be at least TICKWORK_SLO_TOLERANCE_MS (an occurrence is LATE before it is MISSED)',
    );
  }
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return deepFreeze(config);
}

/** A duration variable (`30d`, `1m`, `500ms` or bare ms) of at least `minMs`. */
function duration(r: EnvReader, name: string, fallback: string, minMs: number): number {
  const raw = r.optionalString(name) ?? fallback;
  const ms = parseDuration(raw);
  if (ms === undefined || ms < minMs || (ms === 0 && minMs > 0)) {
    r.problem(
      `${name}=${JSON.stringify(raw)} must be a duration like 30d, 12h, 1m or 500ms${minMs > 0 ? ` of at least ${minMs} ms` : ''}`,
    );
    return parseDuration(fallback) ?? 0;
  }
  return ms;
}

const HOST_NAME = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i;

/** TICKWORK_WEBHOOK_ALLOW: host names, *.domain, IP addresses or CIDRs. */
function allowList(r: EnvReader): string[] {
  const entries = r.list('TICKWORK_WEBHOOK_ALLOW', []);
  for (const e of entries) {
    const [addr, prefix, ...extra] = e.split('/');
    const version = isIP((addr ?? '').replace(/^\[|\]$/g, ''));
    const max = version === 4 ? 32 : 128;
    const ok =
      extra.length === 0 &&
      (version !== 0
        ? prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= max)
        : prefix === undefined && HOST_NAME.test(e));
    if (!ok)
      r.problem(
        `TICKWORK_WEBHOOK_ALLOW has ${JSON.stringify(e)}: each entry must be a host name, *.domain, an IP address or a CIDR`,
      );
  }
  return entries;
}

/**
 * TICKWORK_WEBHOOK_SECRETS: a JSON object of tenant id (or "*") → a secret or a list of secrets,
 * each `whsec_` + base64 of 24..64 random bytes (the Standard Webhooks format). Two secrets for a
 * tenant mean two signatures per call, which is how a secret is rotated. Secrets are never echoed.
 */
function webhookSecrets(r: EnvReader): Record<string, string[]> {
  const raw = r.optionalString('TICKWORK_WEBHOOK_SECRETS');
  if (raw === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    r.problem('TICKWORK_WEBHOOK_SECRETS must be JSON: {"<tenant id or *>": ["whsec_…", …]}');
    return {};
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    r.problem('TICKWORK_WEBHOOK_SECRETS must be a JSON object: {"<tenant id or *>": ["whsec_…", …]}');
    return {};
  }
  const out: Record<string, string[]> = {};
  for (const [tenant, value] of Object.entries(parsed as Record<string, unknown>)) {
    const list = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(list) || list.length === 0 || list.length > 5) {
      r.problem(
        `TICKWORK_WEBHOOK_SECRETS[${JSON.stringify(tenant)}] must be a secret or a list of 1 to 5 secrets`,
      );
      continue;
    }
    list.forEach((secret: unknown, i) => {
      const b64 = typeof secret === 'string' && secret.startsWith('whsec_') ? secret.slice(6) : undefined;
      const bytes =
        b64 !== undefined && /^[A-Za-z0-9+/]+={0,2}$/.test(b64) ? Buffer.from(b64, 'base64').length : 0;
      if (bytes < 24 || bytes > 64) {
        r.problem(
          `TICKWORK_WEBHOOK_SECRETS[${JSON.stringify(tenant)}][${i}] must be "whsec_" followed by the base64 of 24 to 64 random bytes`,
        );
      }
    });
    out[tenant] = list as string[];
  }
  return out;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

/** A Kafka group.instance.id: up to 249 of the characters Kafka allows in names. */
function memberName(r: EnvReader, name: string): string | undefined {
  const v = r.optionalString(name);
  if (v !== undefined && !/^[a-zA-Z0-9._-]{1,249}$/.test(v)) {
    r.problems.push(`${name} must be 1-249 characters of a-z, A-Z, 0-9, '.', '_' and '-' (got "${v}")`);
    return undefined;
  }
  return v;
}
