/**
 * Start-up of the shared infrastructure every app needs: the database (created and migrated),
 * the Kafka bus with its topics provisioned, and the event codecs registered in the registry.
 */
import type { TickworkConfig } from '@tickwork/config';
import {
  createKafkaBus,
  EventCodecs,
  provisionTopics,
  tickworkTopicSpecs,
  type BusLogger,
  type MessageBus,
} from '@tickwork/messaging';
import { LogThrottle } from '@tickwork/telemetry';
import { createPool, ensureDatabase, migrate, type Pool, type PoolOptions } from '@tickwork/store';
import { observeKafkajsPatches } from './kafkajs-patch-metric';

/** Opens the database: creates it if missing and applies pending migrations. */
export async function openDatabase(config: TickworkConfig, opts: PoolOptions = {}): Promise<Pool> {
  await ensureDatabase(config.databaseUrl);
  const pool = createPool(config.databaseUrl, {
    applicationName: `tickwork-${config.instanceId}`,
    idleInTransactionTimeoutMs: config.dbIdleInTransactionTimeoutMs,
    ...opts,
  });
  await migrate(pool);
  return pool;
}

export interface Messaging {
  readonly bus: MessageBus;
  readonly codecs: EventCodecs;
}

/** Kafka client log lines with repeats within 10 s counted, not written: an outage logs every retry. */
function withoutRepeats(log: BusLogger): BusLogger {
  const throttle = new LogThrottle(10_000);
  return (level, message, extra) => {
    const { write, suppressed } = throttle.admit(`${level} ${LogThrottle.kindOf(message)}`);
    if (write) log(level, `${message}${throttle.note(suppressed)}`, extra);
  };
}

/** Connects to Kafka, provisions Tickwork's topics and registers the event schemas. */
export async function openMessaging(config: TickworkConfig, log?: BusLogger): Promise<Messaging> {
  const bus = createKafkaBus(config.kafka, log && withoutRepeats(log));
  observeKafkajsPatches();
  const admin = await bus.admin();
  try {
    const specs = tickworkTopicSpecs(config.topics, {
      shardCount: config.shardCount,
      firesPartitions: config.firesPartitions,
      replicationFactor: config.topicReplicationFactor,
      minInsyncReplicas: config.topicMinInsyncReplicas,
    });
    await provisionTopics(admin, specs, config.topics.commands, (m) => log?.('warn', m, {}));
  } finally {
    await admin.disconnect();
  }
  const t = config.topics;
  const codecs = await EventCodecs.connect(config.schemaRegistryUrl, {
    fireTopics: [t.fires, t.deadLetters, ...t.retryTiers.map((r) => r.topic)],
    resultTopics: [t.fireResults],
  });
  return { bus, codecs };
}

/** Resolves when `check` returns true, polling until `timeoutMs`; rejects with `what` otherwise. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  everyMs = 250,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`,
  );
}
