/**
 * A fetch long-polls: the broker answers as soon as any partition in it has data, or after the
 * wait. So while no partition is paused, a long wait costs no latency and saves the round trips
 * of an idle consumer. A paused partition is left out of the fetch in flight, though, and once
 * resumed it waits for that fetch to come back (and kafkajs sleeps the whole wait when every
 * partition is paused). kafkajs has one wait for both cases; this gives a consumer group a
 * second, short one used whenever one of its partitions is paused.
 */

/** The fields of kafkajs's ConsumerGroup the patched fetch reads and writes. */
export interface FetchingGroup {
  groupId: string;
  maxWaitTime: number;
  subscriptionState: { paused(): readonly unknown[] };
}

const IDLE_WAIT = Symbol('tickwork.idleMaxWaitTime');
type Tracked = FetchingGroup & { [IDLE_WAIT]?: number };

/** Group id → the wait its fetches use while one of its partitions is paused. */
const pausedWaits = new Map<string, number>();

/** Makes the fetches of `groupId` wait at most `ms` while any of its partitions is paused. */
export function setPausedFetchWait(groupId: string, ms: number): void {
  pausedWaits.set(groupId, ms);
}

/** Sets the group's wait for its next fetch: the short one if a partition is paused, else its own. */
export function chooseFetchWait(group: FetchingGroup): void {
  const paused = pausedWaits.get(group.groupId);
  if (paused === undefined) return;
  const g = group as Tracked;
  const idle = (g[IDLE_WAIT] ??= g.maxWaitTime);
  g.maxWaitTime = g.subscriptionState.paused().length > 0 ? Math.min(paused, idle) : idle;
}

let patched: boolean | undefined;

/** Wraps kafkajs's ConsumerGroup.fetch to choose its wait first, once per process; true when wrapped. */
export function usePausedFetchWait(): boolean {
  if (patched !== undefined) return patched;
  // A deep import: the class is not exported, and kafkajs's consumer builds its groups from it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup') as {
    prototype: { fetch?: (this: FetchingGroup, nodeId: number) => Promise<unknown> };
  };
  const fetch = ConsumerGroup.prototype.fetch;
  if (typeof fetch !== 'function')
    throw new Error('kafkajs ConsumerGroup has no fetch: review fetch-wait.ts');
  ConsumerGroup.prototype.fetch = function (this: FetchingGroup, nodeId: number) {
    chooseFetchWait(this);
    return fetch.call(this, nodeId);
  };
  patched = ConsumerGroup.prototype.fetch !== fetch;
  return patched;
}
