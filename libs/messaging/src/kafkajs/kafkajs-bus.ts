/**
 * The messaging port implemented with kafkajs. Nothing outside this folder imports kafkajs, and
 * this file loads it only in createKafkaBus, after installKafkajsPatches (patches.ts): the module
 * stand-ins must be in place before kafkajs's producer and consumer capture their modules.
 */
import { producerPartitionCounts } from './partition-grouping';
import type {
  Consumer,
  ConsumerRunConfig,
  IHeaders,
  Kafka,
  KafkaConfig as KafkajsConfig,
  LogEntry,
  Message,
  Producer,
  SASLOptions,
} from 'kafkajs';
import type {
  ConsumerHandlers,
  ConsumerOptions,
  Headers,
  MessageBus,
  MessageConsumer,
  MessageProducer,
  OutboundMessage,
  TopicAdmin,
  TopicDescription,
  TopicSpec,
} from '../ports';
import { javaCompatiblePartitioner } from './partitioner';
import { ProducerSession } from './producer-session';
import { installKafkajsPatches } from './patches';
import { chunkSend, MAX_REQUEST_RECORD_BYTES } from './send-chunks';
import { unwrittenMessages } from './send-coverage';
import { setPausedFetchWait } from './fetch-wait';
import { useStaticMembership } from './group-membership';

export interface KafkaConnection {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly ssl: boolean;
  readonly sasl: {
    readonly mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512';
    readonly username: string;
    readonly password: string;
  } | null;
}

export type BusLogger = (
  level: 'error' | 'warn' | 'info' | 'debug',
  message: string,
  extra: Record<string, unknown>,
) => void;

type KafkajsModule = typeof import('kafkajs');
let loaded: KafkajsModule | undefined;

/** kafkajs itself, loaded (once) only after its patches are installed. */
function loadKafkajs(log?: BusLogger): KafkajsModule {
  if (loaded) return loaded;
  installKafkajsPatches(log);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded here so the patches come first
  loaded = require('kafkajs') as KafkajsModule;
  return loaded;
}

/** kafkajs, which createKafkaBus loaded before it built anything that uses this. */
function kafkajs(): KafkajsModule {
  if (!loaded) throw new Error('kafkajs used before createKafkaBus loaded it');
  return loaded;
}

/** The longest pause between two retries of a Kafka request (producer, admin, consumer). */
const CLIENT_MAX_RETRY_MS = 1_000;
/**
 * Retries of a consumer's fetch and group join before kafkajs crashes and restarts the consumer
 * (~25 s at the 1 s cap): a restart delay is the last backoff, so it stays within the cap too.
 */
const CONSUMER_RETRIES = 30;

/** Whether `e` came from the Kafka client (a broker unreachable, a request refused), not from elsewhere. */
export function isBrokerError(e: unknown): boolean {
  const name = (e as { name?: unknown } | null)?.name;
  return typeof name === 'string' && name.startsWith('KafkaJS');
}

/** Opens a MessageBus over kafkajs. */
export function createKafkaBus(conn: KafkaConnection, log?: BusLogger): MessageBus {
  const { Kafka, logLevel } = loadKafkajs(log);
  const levelNames = {
    [logLevel.ERROR]: 'error',
    [logLevel.WARN]: 'warn',
    [logLevel.INFO]: 'info',
    [logLevel.DEBUG]: 'debug',
  } as const;
  const config: KafkajsConfig = {
    clientId: conn.clientId,
    brokers: [...conn.brokers],
    ssl: conn.ssl,
    ...(conn.sasl ? { sasl: { ...conn.sasl } as SASLOptions } : {}),
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...extra } = entry;
        const name = levelNames[level as keyof typeof levelNames] ?? 'info';
        if (log) log(name, `kafkajs: ${message}`, extra);
      },
    // kafkajs's default backoff doubles up to 30 s: a client that failed through a broker restart
    // then slept up to 30 s after the broker was back. Capped at 1 s, recovery follows the broker.
    retry: { initialRetryTime: 100, maxRetryTime: CLIENT_MAX_RETRY_MS, retries: 8 },
  };
  return new KafkajsBus(new Kafka(config), log);
}

class KafkajsBus implements MessageBus {
  constructor(
    private readonly kafka: Kafka,
    private readonly log?: BusLogger,
  ) {}

  async producer(opts: { idempotent?: boolean } = {}): Promise<MessageProducer> {
    const idempotent = opts.idempotent ?? true;
    const create = () =>
      this.kafka.producer({
        idempotent,
        maxInFlightRequests: idempotent ? 5 : undefined,
        allowAutoTopicCreation: false,
        createPartitioner: javaCompatiblePartitioner,
      });
    const producer = create();
    await producer.connect();
    return new KafkajsProducer(
      new ProducerSession(producer, create, (reason) =>
        this.log?.('warn', `producer session renewed after the broker lost it (${reason})`, {}),
      ),
      this.log,
    );
  }

  async consumer(opts: ConsumerOptions): Promise<MessageConsumer> {
    const consumer = this.kafka.consumer({
      groupId: opts.groupId,
      sessionTimeout: opts.sessionTimeoutMs ?? 30_000,
      heartbeatInterval: opts.heartbeatIntervalMs ?? 3_000,
      maxBytesPerPartition: opts.maxBytesPerPartition ?? 1_048_576,
      ...(opts.maxWaitTimeMs !== undefined ? { maxWaitTimeInMs: opts.maxWaitTimeMs } : {}),
      allowAutoTopicCreation: false,
      retry: { initialRetryTime: 100, maxRetryTime: CLIENT_MAX_RETRY_MS, retries: CONSUMER_RETRIES },
    });
    if (opts.pausedMaxWaitTimeMs !== undefined) setPausedFetchWait(opts.groupId, opts.pausedMaxWaitTimeMs);
    if (opts.staticMemberName !== undefined) useStaticMembership(opts.groupId, opts.staticMemberName);
    await consumer.connect();
    for (const topic of opts.topics)
      await consumer.subscribe({ topic, fromBeginning: opts.fromBeginning ?? true });
    return new KafkajsConsumer(consumer, opts.partitionsConsumedConcurrently ?? 1, opts.fetchAhead ?? false);
  }

  async admin(): Promise<TopicAdmin> {
    const admin = this.kafka.admin();
    await admin.connect();
    return new KafkajsAdmin(admin);
  }
}

/** Sends again of what a confirmed send did not write, before the send fails. */
const UNWRITTEN_RESENDS = 5;

class KafkajsProducer implements MessageProducer {
  constructor(
    private readonly session: ProducerSession<Producer>,
    private readonly log?: BusLogger,
  ) {}

  async send(batches: readonly { topic: string; messages: readonly OutboundMessage[] }[]): Promise<void> {
    // Our message shape is kafkajs's (string headers are valid IHeaders, and kafkajs only reads
    // them): passed as is, without a copy per message and header.
    // One request per chunk, each after the last was acknowledged: a chunk can then never pass
    // the broker's batch limit, and a failure leaves no later message of the send delivered.
    for (const chunk of chunkSend(batches, MAX_REQUEST_RECORD_BYTES)) {
      let pending = chunk.map((b) => ({ topic: b.topic, messages: b.messages as Message[] }));
      // kafkajs may confirm a send that skipped partitions whose leader moved (send-coverage.ts):
      // what the answer does not cover is sent again, a few times, then the send fails.
      for (let attempt = 1; pending.length > 0; attempt++) {
        const topicMessages = pending;
        const answered = await this.session.run((p) =>
          p.sendBatch({ topicMessages, acks: -1, compression: kafkajs().CompressionTypes.None }),
        );
        pending = unwrittenMessages(topicMessages, answered, (t) => producerPartitionCounts.get(t));
        if (pending.length === 0) break;
        const count = pending.reduce((n, b) => n + b.messages.length, 0);
        if (attempt >= UNWRITTEN_RESENDS)
          throw new Error(`Kafka's answer to a send left out ${count} message(s) ${UNWRITTEN_RESENDS} times`);
        this.log?.(
          'warn',
          `kafkajs confirmed a send without writing ${count} message(s); sending them again`,
          {},
        );
      }
    }
  }

  async disconnect(): Promise<void> {
    await this.session.close();
  }
}

function fromKafkajsHeaders(h: IHeaders | undefined): Headers {
  const out: Record<string, string> = {};
  if (!h) return out;
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    const first = Array.isArray(v) ? v[0] : v;
    if (first !== undefined) out[k] = Buffer.isBuffer(first) ? first.toString('utf8') : String(first);
  }
  return out;
}

/** One buffer holding copies of a batch's keys and values, handed out as views in order. */
class BatchArena {
  private readonly buffer: Buffer;
  private at = 0;

  constructor(messages: readonly { key?: Buffer | null; value: Buffer | null }[]) {
    let size = 0;
    for (const m of messages) size += (m.key?.length ?? 0) + (m.value?.length ?? 0);
    this.buffer = Buffer.allocUnsafe(size);
  }

  /** A copy of `bytes` in this arena (null stays null). */
  own(bytes: Buffer | null | undefined): Buffer | null {
    if (!bytes) return null;
    const start = this.at;
    this.at += bytes.copy(this.buffer, start);
    return this.buffer.subarray(start, this.at);
  }
}

/** What a fetch-ahead consumer knows of one partition's commits. */
interface PartitionCommits {
  readonly topic: string;
  readonly partition: number;
  /** Bumped whenever the partition is newly assigned or lost: marks from batches of before are ignored. */
  epoch: number;
  assigned: boolean;
  /** The last offset marked processed, and the last one committed (the commit names the next). */
  marked: string | undefined;
  committed: string | undefined;
}

type OffsetsToCommit = { topics: { topic: string; partitions: { partition: number; offset: string }[] }[] };

class KafkajsConsumer implements MessageConsumer {
  private stopping = false;
  /** The group's commit of resolved offsets, taken from the latest batch. */
  private commitResolved: (() => Promise<void>) | undefined;
  private commitTimer: NodeJS.Timeout | undefined;
  // Fetch-ahead mode (see ConsumerOptions.fetchAhead).
  private readonly partitions = new Map<string, PartitionCommits>();
  /**
   * kafkajs's commit of the offsets given, taken from the latest batch. It commits once, in the
   * group's current generation; unlike `consumer.commitOffsets` it is not retried, so a payload
   * built before a rebalance is never sent again after it.
   */
  private commitGiven: ((offsets: OffsetsToCommit) => Promise<void>) | undefined;
  private committing: Promise<void> | undefined;
  /** Between the start of a rebalance and the new assignment: no commit is sent. */
  private rebalancing = false;
  /** What `run` was given, for a restart after a crash kafkajs does not restart from. */
  private runConfig: ConsumerRunConfig | undefined;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly consumer: Consumer,
    private readonly concurrency: number,
    private readonly fetchAhead: boolean,
  ) {}

  async start(handlers: ConsumerHandlers): Promise<void> {
    const { GROUP_JOIN, REBALANCING, CRASH } = this.consumer.events;
    this.consumer.on(GROUP_JOIN, (e) => {
      const assignment = new Map<string, number[]>();
      for (const [topic, partitions] of Object.entries(e.payload.memberAssignment))
        assignment.set(
          topic,
          [...partitions].sort((a, b) => a - b),
        );
      if (this.fetchAhead) this.assign(assignment);
      void Promise.resolve(handlers.onAssignment?.(assignment)).catch((err: unknown) =>
        handlers.onCrash?.(err as Error),
      );
    });
    this.consumer.on(REBALANCING, () => {
      if (this.fetchAhead) {
        // Still a member of the generation that owns the partitions: commit what is done now,
        // so the next owners start from there; nothing more is sent until the new assignment.
        if (!this.committing) void this.commitMarked().catch(() => undefined);
        this.rebalancing = true;
      }
      handlers.onRebalance?.();
    });
    this.consumer.on(CRASH, (e) => {
      // kafkajs left the group before emitting this: every partition is gone.
      if (this.fetchAhead) this.assign(new Map());
      handlers.onCrash?.(e.payload.error);
      // kafkajs restarts a consumer only after an error it counts as retriable; one that crashed
      // while no broker answered (no group coordinator found) stayed stopped for good.
      if (!e.payload.restart) this.restartAfterCrash(handlers);
    });

    // kafkajs commits resolved offsets only when a new batch arrives; handlers that finish work
    // after their batch returned (the executor) would leave offsets uncommitted on a quiet
    // topic, so they are also committed on a timer.
    this.commitTimer = setInterval(() => {
      if (this.fetchAhead) {
        if (!this.committing) void this.commitMarked().catch(() => undefined);
      } else void this.commitResolved?.().catch(() => undefined);
    }, 1_000);
    this.commitTimer.unref();
    this.runConfig = {
      // Fetch-ahead: kafkajs resolves each batch as it is handed over (so the next fetch goes on
      // past it) and must not commit what it resolved: the offsets of unfinished messages.
      autoCommit: !this.fetchAhead,
      autoCommitInterval: 1_000,
      eachBatchAutoResolve: this.fetchAhead,
      partitionsConsumedConcurrently: this.concurrency,
      eachBatch: async ({
        batch,
        resolveOffset,
        heartbeat,
        isRunning,
        isStale,
        commitOffsetsIfNecessary,
        uncommittedOffsets,
      }) => {
        // Fetched keys and values are views of the whole fetch response. A fetch-ahead consumer
        // may hold a message long after its batch (a slow call), so its batch's keys and values
        // are copied into one buffer of their own: a held message then keeps its batch's bytes
        // alive, not every partition's response.
        const arena = this.fetchAhead ? new BatchArena(batch.messages) : undefined;
        const messages = batch.messages.map((m) => ({
          topic: batch.topic,
          partition: batch.partition,
          offset: m.offset,
          key: arena ? arena.own(m.key) : (m.key ?? null),
          value: arena ? arena.own(m.value) : (m.value ?? null),
          headers: fromKafkajsHeaders(m.headers),
          timestamp: Number(m.timestamp),
        }));
        const isActive = () => isRunning() && !isStale() && !this.stopping;
        if (this.fetchAhead) {
          this.commitGiven = commitOffsetsIfNecessary as (offsets: OffsetsToCommit) => Promise<void>;
          const p = this.partitions.get(keyOf(batch.topic, batch.partition));
          const epoch = p?.epoch;
          await handlers.onBatch({
            topic: batch.topic,
            partition: batch.partition,
            messages,
            markProcessed: (offset) => {
              if (p !== undefined && p.assigned && p.epoch === epoch) p.marked = offset;
            },
            heartbeat,
            isActive,
            commit: (opts) => (opts?.force ? this.commitNow() : Promise.resolve()),
          });
          return;
        }
        this.commitResolved = () => commitOffsetsIfNecessary();
        await handlers.onBatch({
          topic: batch.topic,
          partition: batch.partition,
          messages,
          markProcessed: (offset) => resolveOffset(offset),
          heartbeat,
          isActive,
          commit: (opts) =>
            opts?.force ? commitOffsetsIfNecessary(uncommittedOffsets()) : commitOffsetsIfNecessary(),
        });
      },
    };
    await this.consumer.run(this.runConfig);
  }

  /**
   * Starts the consumer again after a crash kafkajs will not restart from (it left the group and
   * disconnected), within the client's backoff cap, until it runs again or is stopped.
   */
  private restartAfterCrash(handlers: ConsumerHandlers): void {
    if (this.stopping || this.restartTimer !== undefined || this.runConfig === undefined) return;
    const config = this.runConfig;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      // A failed join inside run crashes again (and comes back here). A failed connect throws: the
      // consumer is still down, as reported, and tries again (kafkajs logs the connection error).
      void (async () => {
        await this.consumer.connect();
        await this.consumer.run(config);
      })().catch(() => this.restartAfterCrash(handlers));
    }, CLIENT_MAX_RETRY_MS);
  }

  pause(topic: string, partitions?: readonly number[]): void {
    this.consumer.pause([{ topic, ...(partitions ? { partitions: [...partitions] } : {}) }]);
  }

  resume(topic: string, partitions?: readonly number[]): void {
    this.consumer.resume([{ topic, ...(partitions ? { partitions: [...partitions] } : {}) }]);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer !== undefined) clearTimeout(this.restartTimer);
    if (this.commitTimer) clearInterval(this.commitTimer);
    if (this.fetchAhead) await this.commitNow().catch(() => undefined);
    await this.consumer.disconnect();
  }

  /**
   * The new assignment (fetch-ahead): partitions that left it forget their marks, so nothing of
   * theirs is committed in the new generation; newly assigned ones start with none.
   */
  private assign(assignment: ReadonlyMap<string, readonly number[]>): void {
    const keys = new Set<string>();
    for (const [topic, partitions] of assignment)
      for (const partition of partitions) {
        const key = keyOf(topic, partition);
        keys.add(key);
        let p = this.partitions.get(key);
        if (!p) {
          p = { topic, partition, epoch: 0, assigned: false, marked: undefined, committed: undefined };
          this.partitions.set(key, p);
        }
        if (!p.assigned) {
          p.assigned = true;
          p.epoch++;
          p.marked = p.committed = undefined;
        }
      }
    for (const [key, p] of this.partitions) {
      if (keys.has(key) || !p.assigned) continue;
      p.assigned = false;
      p.epoch++;
      p.marked = p.committed = undefined;
    }
    if (assignment.size === 0) this.commitGiven = undefined;
    this.rebalancing = false;
  }

  /**
   * Commits, once, the next offset after each assigned partition's mark that is not committed
   * yet. The payload is built and sent in the same turn, from the assignment of that moment.
   */
  private commitMarked(): Promise<void> {
    const commit = this.commitGiven;
    if (!commit || this.rebalancing) return Promise.resolve();
    const topics: OffsetsToCommit['topics'] = [];
    const sent: { p: PartitionCommits; marked: string; epoch: number }[] = [];
    for (const p of this.partitions.values()) {
      if (!p.assigned || p.marked === undefined || p.marked === p.committed) continue;
      let t = topics.find((x) => x.topic === p.topic);
      if (!t) topics.push((t = { topic: p.topic, partitions: [] }));
      t.partitions.push({ partition: p.partition, offset: (BigInt(p.marked) + 1n).toString() });
      sent.push({ p, marked: p.marked, epoch: p.epoch });
    }
    if (sent.length === 0) return Promise.resolve();
    const done = commit({ topics }).then(() => {
      for (const { p, marked, epoch } of sent) if (p.epoch === epoch) p.committed = marked;
    });
    const tracked = done.then(
      () => undefined,
      () => undefined,
    );
    this.committing = tracked;
    void tracked.then(() => {
      if (this.committing === tracked) this.committing = undefined;
    });
    return done;
  }

  /** Commits the marks now; after a commit in flight, from a new turn (never inside a rebalance's). */
  private commitNow(): Promise<void> {
    const inFlight = this.committing;
    if (!inFlight) return this.commitMarked();
    return inFlight.then(() => new Promise<void>((r) => setImmediate(r))).then(() => this.commitMarked());
  }
}

function keyOf(topic: string, partition: number): string {
  return `${topic}|${partition}`;
}

/** How long topic creation waits for every partition to have a leader. */
const LEADER_WAIT_MS = 30_000;

class KafkajsAdmin implements TopicAdmin {
  constructor(private readonly admin: ReturnType<Kafka['admin']>) {}

  async describeTopics(names: readonly string[], configKeys: readonly string[]): Promise<TopicDescription[]> {
    const existing = new Set(await this.admin.listTopics());
    const present = names.filter((n) => existing.has(n));
    if (present.length === 0) return [];
    const meta = await this.admin.fetchTopicMetadata({ topics: present });
    const configs = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: present.map((name) => ({
        type: kafkajs().ConfigResourceTypes.TOPIC,
        name,
        configNames: [...configKeys],
      })),
    });
    return meta.topics.map((t) => {
      const res = configs.resources.find((r) => r.resourceName === t.name);
      const cfg: Record<string, string> = {};
      for (const e of res?.configEntries ?? []) cfg[e.configName] = e.configValue;
      const replicationFactor = Math.min(...t.partitions.map((p) => p.replicas.length));
      return { name: t.name, partitions: t.partitions.length, replicationFactor, configs: cfg };
    });
  }

  async brokerCount(): Promise<number> {
    return (await this.admin.describeCluster()).brokers.length;
  }

  async createTopics(specs: readonly TopicSpec[]): Promise<void> {
    if (specs.length === 0) return;
    // kafkajs's own wait for leaders retries LEADER_NOT_AVAILABLE only; a broker that has not yet
    // propagated the new topic answers UNKNOWN_TOPIC_OR_PARTITION, which it throws
    // (tulios/kafkajs#1222; seen here right after a broker start). Create, then wait ourselves.
    await this.admin.createTopics({
      waitForLeaders: false,
      topics: specs.map((s) => ({
        topic: s.name,
        numPartitions: s.partitions,
        replicationFactor: s.replicationFactor,
        configEntries: Object.entries(s.configs).map(([name, value]) => ({ name, value })),
      })),
    });
    await this.waitForLeaders(
      specs.map((s) => s.name),
      LEADER_WAIT_MS,
    );
  }

  /** Resolves once every partition of `names` has a leader; retriable metadata errors are retried. */
  private async waitForLeaders(names: string[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = 'no metadata yet';
    for (let delayMs = 50; ; delayMs = Math.min(delayMs * 2, 1_000)) {
      try {
        const { topics } = await this.admin.fetchTopicMetadata({ topics: names });
        const led = (t: (typeof topics)[number]) =>
          t.partitions.length > 0 && t.partitions.every((p) => p.partitionErrorCode === 0 && p.leader >= 0);
        if (topics.length === names.length && topics.every(led)) return;
        const waiting = topics.filter((t) => !led(t)).map((t) => t.name);
        last = `no leader yet for ${waiting.join(', ') || 'some topics'}`;
      } catch (e) {
        if (!(e as { retriable?: boolean }).retriable) throw e;
        last = (e as Error).message;
      }
      if (Date.now() >= deadline)
        throw new Error(`topics ${names.join(', ')} not ready after ${timeoutMs} ms: ${last}`);
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }

  async alterTopicConfigs(name: string, configs: Readonly<Record<string, string>>): Promise<void> {
    await this.admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: kafkajs().ConfigResourceTypes.TOPIC,
          name,
          configEntries: Object.entries(configs).map(([n, value]) => ({ name: n, value })),
        },
      ],
    });
  }

  async groupLag(
    groupId: string,
    topic: string,
  ): Promise<{ partition: number; committed: string; end: string }[]> {
    const [committed, ends] = await Promise.all([
      this.admin.fetchOffsets({ groupId, topics: [topic] }),
      this.admin.fetchTopicOffsets(topic),
    ]);
    const byPartition = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
    return ends.map((e) => ({
      partition: e.partition,
      committed: byPartition.get(e.partition) ?? '-1',
      end: e.high,
    }));
  }

  async disconnect(): Promise<void> {
    await this.admin.disconnect();
  }
}
