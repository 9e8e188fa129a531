/**
 * The messaging port: what Tickwork needs from a Kafka client, in its own terms. Only
 * ./kafkajs implements it, so another client can replace kafkajs without touching callers.
 */

export type Headers = Readonly<Record<string, string>>;

export interface OutboundMessage {
  readonly key: string | Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: Headers;
  readonly partition?: number;
}

export interface InboundMessage {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Headers;
  /** Broker or producer timestamp, epoch ms. */
  readonly timestamp: number;
}

/** One fetched batch of a single partition, and the controls to acknowledge it. */
export interface InboundBatch {
  readonly topic: string;
  readonly partition: number;
  readonly messages: readonly InboundMessage[];
  /**
   * Marks a message (and all before it in the partition) as processed; commits follow. With
   * `fetchAhead`, marks of one partition must not go backwards, across its batches.
   */
  markProcessed(offset: string): void;
  /** Keeps group membership alive during long work. */
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping or the partition was revoked: stop work on this batch. */
  isActive(): boolean;
  /**
   * Commits what was marked processed if the auto-commit interval has passed; with `force`,
   * commits it now whatever the interval (e.g. before leaving the group).
   */
  commit(opts?: { readonly force?: boolean }): Promise<void>;
}

export interface ConsumerHandlers {
  onBatch(batch: InboundBatch): Promise<void>;
  /** The group gave this member these partitions (the complete new assignment per topic). */
  onAssignment?(assignment: ReadonlyMap<string, readonly number[]>): Promise<void> | void;
  /** The group started a rebalance: assume every partition may be taken away. */
  onRebalance?(): void;
  /** The consumer crashed or left the group; it will rejoin if it can. */
  onCrash?(error: Error): void;
}

export interface ConsumerOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly fromBeginning?: boolean;
  readonly sessionTimeoutMs?: number;
  readonly heartbeatIntervalMs?: number;
  readonly maxBytesPerPartition?: number;
  /** How many partitions' batches are handled at once. */
  readonly partitionsConsumedConcurrently?: number;
  /**
   * Longest a fetch waits for data (default 5000 ms). The broker answers as soon as any fetched
   * partition has data, so a long wait only spares an idle consumer its round trips.
   */
  readonly maxWaitTimeMs?: number;
  /**
   * The wait used instead while any partition is paused (default: `maxWaitTimeMs`). A resumed
   * partition is fetched only once the fetch in flight returns, and kafkajs sleeps this long when
   * every partition is paused: a consumer that pauses partitions for flow control wants it short.
   */
  readonly pausedMaxWaitTimeMs?: number;
  /**
   * Fetch past unfinished work (default false). The fetch position moves on as soon as a batch
   * is handed over, so a handler that finishes messages out of order (the executor's flow) keeps
   * receiving the partition's later messages while earlier ones are still in flight; only what
   * was marked processed is committed, by this consumer itself (every second, on `commit({force})`,
   * when a rebalance starts and before leaving the group). Flow control is then the handler's:
   * it pauses a partition to stop fetching it. Off, the fetch position is the last offset marked
   * processed: a partition is fetched again only from there.
   */
  readonly fetchAhead?: boolean;
  /**
   * Joins as a static member under this name (Kafka's `group.instance.id`), stable across
   * restarts: a member that comes back under its name within the session timeout gets its
   * partitions back without a rebalance. Unique per group; unset = a dynamic member.
   */
  readonly staticMemberName?: string;
}

export interface MessageConsumer {
  start(handlers: ConsumerHandlers): Promise<void>;
  /** Stop fetching from these partitions until resumed (backpressure). */
  pause(topic: string, partitions?: readonly number[]): void;
  resume(topic: string, partitions?: readonly number[]): void;
  /** Leaves the group after the batch in hand finishes. */
  stop(): Promise<void>;
}

export interface MessageProducer {
  /**
   * Sends to several topics, in order, in as few requests as the broker's batch limit allows;
   * resolves when all replicas acknowledged every message (acks=all). On failure, some of the
   * messages may have been delivered.
   */
  send(
    batches: readonly { readonly topic: string; readonly messages: readonly OutboundMessage[] }[],
  ): Promise<void>;
  disconnect(): Promise<void>;
}

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly configs: Readonly<Record<string, string>>;
}

export interface TopicDescription {
  readonly name: string;
  readonly partitions: number;
  /** The fewest replicas any of its partitions has. */
  readonly replicationFactor: number;
  readonly configs: Readonly<Record<string, string>>;
}

export interface TopicAdmin {
  /** Existing topics among `names`, with partition counts and the configs asked for. */
  describeTopics(names: readonly string[], configKeys: readonly string[]): Promise<TopicDescription[]>;
  createTopics(specs: readonly TopicSpec[]): Promise<void>;
  /** Brokers the cluster's metadata lists now (a broker that is down is not counted). */
  brokerCount(): Promise<number>;
  alterTopicConfigs(name: string, configs: Readonly<Record<string, string>>): Promise<void>;
  /** Committed offsets and end offsets per partition: what consumer lag is made of. */
  groupLag(groupId: string, topic: string): Promise<{ partition: number; committed: string; end: string }[]>;
  disconnect(): Promise<void>;
}

/** A connection to the Kafka cluster that makes producers, consumers and an admin. */
export interface MessageBus {
  producer(opts?: { readonly idempotent?: boolean }): Promise<MessageProducer>;
  consumer(opts: ConsumerOptions): Promise<MessageConsumer>;
  admin(): Promise<TopicAdmin>;
}
