/**
 * A consumer's group join waits out a coordinator that is loading or moving, instead of crashing.
 *
 * kafkajs's join retries only a rebalance or an unknown member id; any other error crashes the
 * consumer, which then disconnects, leaves the group, and joins again as a restart. Right after a
 * broker restart the group coordinator answers "loading" (GROUP_LOAD_IN_PROGRESS) for a second or
 * so while it reads the group's state back: an executor whose join came a few ms early crashed,
 * its leave and its rejoin each rebalanced the group, and the other executors learned of it only at
 * their next heartbeat: its partitions' backlog went out a second after everyone else's (fault
 * suite, broker-restart). Retried in place, the member joins the first generation after the load,
 * with the others.
 */

/** The fields of kafkajs's ConsumerGroup this wraps. */
export interface JoiningGroup {
  joinAndSync(this: JoiningGroup): Promise<unknown>;
}

/** Coordinator errors that end by themselves within seconds: the join is tried again. */
const PASSING_COORDINATOR_ERRORS = new Set([
  'GROUP_LOAD_IN_PROGRESS',
  'GROUP_COORDINATOR_NOT_AVAILABLE',
  'NOT_COORDINATOR_FOR_GROUP',
]);

/** Whether `e` (or what caused it) is a coordinator that is loading, moving or not yet found. */
export function isPassingCoordinatorError(e: unknown): boolean {
  for (let x = e as { type?: string; name?: string; cause?: unknown } | undefined; x; ) {
    if (x.type !== undefined && PASSING_COORDINATOR_ERRORS.has(x.type)) return true;
    if (x.name === 'KafkaJSGroupCoordinatorNotFound') return true;
    x = x.cause as typeof x;
  }
  return false;
}

export interface JoinRetryOptions {
  /** The first pause; doubled up to `maxDelayMs`. */
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** After this long the error is thrown as before (the consumer crashes and restarts). */
  readonly giveUpAfterMs: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => number;
}

/** Wraps the prototype's joinAndSync so passing coordinator errors are retried in place. */
export function retryJoinThroughCoordinatorLoads(proto: JoiningGroup, opts: JoinRetryOptions): void {
  const { joinAndSync } = proto;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = opts.now ?? Date.now;
  proto.joinAndSync = async function (this: JoiningGroup) {
    const giveUpAt = now() + opts.giveUpAfterMs;
    for (let delay = opts.initialDelayMs; ; delay = Math.min(delay * 2, opts.maxDelayMs)) {
      try {
        return await joinAndSync.call(this);
      } catch (e) {
        if (!isPassingCoordinatorError(e) || now() + delay > giveUpAt) throw e;
        await sleep(delay);
      }
    }
  };
}

let installed: boolean | undefined;

/** Installs the in-place join retry on kafkajs's ConsumerGroup, once per process; true when installed. */
export function retryGroupJoins(): boolean {
  if (installed !== undefined) return installed;
  // A deep import: the class is not exported, and kafkajs's consumer builds its groups from it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup') as { prototype: Partial<JoiningGroup> };
  const p = ConsumerGroup.prototype;
  if (typeof p.joinAndSync !== 'function')
    throw new Error('kafkajs ConsumerGroup lacks joinAndSync: review join-retry.ts');
  const before = p.joinAndSync;
  // A load takes a second or so: asking every 250 ms at most joins within a quarter second of its
  // end (a JoinGroup is one small request). A coordinator still loading or missing after 10 s is a
  // real outage: kafkajs's crash and restart path (a fresh connection and metadata) takes over.
  retryJoinThroughCoordinatorLoads(p as JoiningGroup, {
    initialDelayMs: 100,
    maxDelayMs: 250,
    giveUpAfterMs: 10_000,
  });
  installed = p.joinAndSync !== before;
  return installed;
}
