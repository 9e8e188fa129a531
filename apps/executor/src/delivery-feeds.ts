/**
 * The executor's two feeds of deliveries: its membership of the executor group on the fires
 * topic and of the retry group on the retry tiers, each consumer with the PartitionFlow that
 * hands its fetched fires to the one bounded pool of in-flight deliveries.
 */
import type { Logger } from '@nestjs/common';
import type { TickworkConfig } from '@tickwork/config';
import { PartitionFlow, type FlowEvents, type MessageProcessor, type Slots } from '@tickwork/execution';
import type { MessageBus, MessageConsumer } from '@tickwork/messaging';
import type { LazyKafkaAdmin } from '@tickwork/runtime';
import { LogThrottle } from '@tickwork/telemetry';

// A fetch returns at once when there is data, so an idle executor long-polls (one round trip a
// second, not ten). While a partition is paused for flow control the short wait applies: it
// bounds how soon a resumed partition is fetched again.
const FETCH_MAX_WAIT_MS = 1_000;
const PAUSED_FETCH_MAX_WAIT_MS = 100;
const RETRY_FETCH_MAX_WAIT_MS = 1_000;

/** A consumer group membership and the flow it feeds. */
export interface DeliveryFeed {
  readonly consumer: MessageConsumer;
  readonly flow: PartitionFlow;
}

/** What both feeds are made of. */
export interface FeedParts {
  readonly bus: MessageBus;
  /** Deliveries taken from Kafka and not yet resolved, shared by both feeds. */
  readonly deliveries: Slots;
  readonly processor: MessageProcessor;
  readonly log: Logger;
}

/**
 * What a fire that failed reports. With the database down every fire in flight fails at once:
 * one line per kind of failure every 10 s, with the count of the others, instead of a line per fire.
 */
export function flowEventsOf(log: Logger): FlowEvents {
  const failures = new LogThrottle(10_000);
  return {
    onError: (e, m, count) => {
      const { write, suppressed } = failures.admit(LogThrottle.kindOf(e.message));
      if (write)
        log.error(
          `fire at ${m.topic}/${m.partition}/${m.offset} failed (${count}x), will be retried: ${e.message}${failures.note(suppressed)}`,
        );
    },
  };
}

/** The consumer options both groups share. */
function consumerOptionsOf(config: TickworkConfig) {
  const { executor } = config;
  return {
    sessionTimeoutMs: executor.sessionTimeoutMs,
    // A member learns of a rebalance only from a heartbeat's answer: every second, so the
    // survivors of a member that died or left rejoin within about a second of the rebalance.
    heartbeatIntervalMs: Math.min(1_000, Math.floor(executor.sessionTimeoutMs / 3)),
    maxBytesPerPartition: executor.fetchBytesPerPartition,
    maxWaitTimeMs: FETCH_MAX_WAIT_MS,
    pausedMaxWaitTimeMs: PAUSED_FETCH_MAX_WAIT_MS,
    // The handler only hands batches over, so one at a time is enough.
    partitionsConsumedConcurrently: 1,
    // Fetch on past slow fires; only what the flow marks done is committed (PartitionFlow).
    fetchAhead: true,
    // Static membership when named (docs/executor.md): a restart takes its partitions back
    // without a rebalance that would stop every other executor for the dead one's session.
    ...(executor.memberName !== undefined ? { staticMemberName: executor.memberName } : {}),
  };
}

/** The fires feed: the executor group on the fires topic (not yet joined). */
export async function openFiresFeed(
  config: TickworkConfig,
  { bus, deliveries, processor, log }: FeedParts,
  events: FlowEvents,
): Promise<DeliveryFeed> {
  const { executor } = config;
  const consumer = await startupRetry('joining the fires topic', log, () =>
    bus.consumer({ ...consumerOptionsOf(config), groupId: executor.groupId, topics: [config.topics.fires] }),
  );
  const flow = new PartitionFlow(consumer, deliveries, processor, events, {
    maxHeldBytes: executor.heldBytesPerPartition,
    backlogSettleMs: executor.backlogSettleMs,
  });
  return { consumer, flow };
}

/** The retry feed: the retry group on the retry tiers' topics (not yet joined). */
export async function openRetryFeed(
  config: TickworkConfig,
  { bus, deliveries, processor, log }: FeedParts,
  events: FlowEvents,
): Promise<DeliveryFeed> {
  const { executor } = config;
  const consumer = await startupRetry('joining the retry topics', log, () =>
    bus.consumer({
      ...consumerOptionsOf(config),
      // Retries wait seconds for their not-before anyway: polling an idle retry topic ten times
      // a second would be most of an idle executor's work. Paused or not: a retry parked until
      // its not-before keeps its partition paused for seconds.
      maxWaitTimeMs: RETRY_FETCH_MAX_WAIT_MS,
      pausedMaxWaitTimeMs: RETRY_FETCH_MAX_WAIT_MS,
      groupId: `${executor.groupId}.retry`,
      topics: config.topics.retryTiers.map((tier) => tier.topic),
    }),
  );
  const flow = new PartitionFlow(consumer, deliveries, processor, events, {
    maxHeldBytes: executor.heldBytesPerPartition,
  });
  return { consumer, flow };
}

/** Joins the executor group with the fires feed; `onJoined` once it has an assignment. */
export async function startFiresFeed(
  config: TickworkConfig,
  { consumer, flow }: DeliveryFeed,
  kafkaAdmin: LazyKafkaAdmin,
  log: Logger,
  onJoined: () => void,
): Promise<void> {
  const topic = config.topics.fires;
  await consumer.start({
    onBatch: (batch) => flow.onBatch(batch),
    onRebalance: () => flow.onRebalance(),
    onAssignment: (assignment) => {
      flow.onAssignment(assignment);
      onJoined();
      log.log(`assigned fires partitions [${(assignment.get(topic) ?? []).join(', ')}]`);
      if (flow.settling) void expectFiresBacklog(flow, kafkaAdmin, config.executor.groupId, topic, log);
    },
    onCrash: (e) => {
      log.error(`fires consumer crashed: ${e.message}`);
      // It left the group: its partitions are gone until it joins again.
      flow.onAssignment(new Map());
    },
  });
}

/** Joins the retry group with the retry feed; `onJoined` once it has an assignment. */
export async function startRetryFeed(
  { consumer, flow }: DeliveryFeed,
  log: Logger,
  onJoined: () => void,
): Promise<void> {
  await consumer.start({
    onBatch: (batch) => flow.onBatch(batch),
    onRebalance: () => flow.onRebalance(),
    onAssignment: (assignment) => {
      flow.onAssignment(assignment);
      onJoined();
      log.log(
        `assigned retry partitions ${[...assignment].map(([topic, partitions]) => `${topic}[${partitions.join(', ')}]`).join(' ')}`,
      );
    },
    onCrash: (e) => {
      log.error(`retry consumer crashed: ${e.message}`);
      flow.onAssignment(new Map());
    },
  });
}

/**
 * Tells the fires flow which of its new partitions have fires waiting (committed offset below
 * the end), so their backlogs start together in due order. Unknown (the lag could not be read):
 * nothing waits longer than the settle time.
 */
async function expectFiresBacklog(
  flow: PartitionFlow,
  kafkaAdmin: LazyKafkaAdmin,
  groupId: string,
  topic: string,
  log: Logger,
): Promise<void> {
  try {
    const lag = await kafkaAdmin.groupLag(groupId, topic);
    const waiting = lag
      .filter((p) => BigInt(p.committed) >= 0n && BigInt(p.end) > BigInt(p.committed))
      .map((p) => p.partition);
    flow.expectBacklog(new Map([[topic, waiting]]));
  } catch (e) {
    log.warn(`reading the fires backlog after an assignment failed: ${(e as Error).message}`);
  }
}

/** Topics created a moment ago may not have leaders yet: metadata errors at start-up are retried a few times. */
async function startupRetry<T>(what: string, log: Logger, attempt: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (e) {
      if (i >= 8) throw e;
      log.warn(`${what} failed (${(e as Error).message}); retrying`);
      await new Promise((r) => setTimeout(r, 500 * i));
    }
  }
}
