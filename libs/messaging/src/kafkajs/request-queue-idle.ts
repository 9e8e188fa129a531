/**
 * kafkajs 2.2.4 spins a 1 ms timer forever on every broker connection once it has answered a
 * request (tulios/kafkajs#1556, unfixed upstream): `scheduleCheckPendingRequests` re-arms itself
 * with a negative delay when nothing is pending and nothing is throttled. On an idle scheduler or
 * executor that loop was most of the process's CPU. This replaces the method with one that arms a
 * timer only when a request waits (in-flight limit or throttle) or a throttle is still running;
 * `push` and `fulfillRequest` re-check the queue themselves, so nothing waits on the dropped timer.
 */
/** The fields of kafkajs's RequestQueue the replacement reads and writes. */
export interface PendingRequestQueue {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
}

/** kafkajs's own recheck interval for a request held by the in-flight limit. */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

/** Arms a recheck only when one can send something: a request is waiting, or a throttle ends. */
export function scheduleCheckPendingRequests(this: PendingRequestQueue): void {
  if (this.throttleCheckTimeoutId) return;
  const untilUnthrottled = this.throttledUntil - Date.now();
  let delay: number;
  if (this.pending.length > 0)
    delay = untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL_MS;
  else if (untilUnthrottled > 0) delay = untilUnthrottled;
  else return;
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null;
    this.checkPendingRequests();
  }, delay);
}

let patched = false;

/** Installs the fixed `scheduleCheckPendingRequests` on kafkajs's RequestQueue, once per process. */
export function fixIdleRequestQueueLoop(): void {
  if (patched) return;
  patched = true;
  // A deep import: the class is not exported, and connections build their queues from this module.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const RequestQueue = require('kafkajs/src/network/requestQueue') as { prototype: Record<string, unknown> };
  if (typeof RequestQueue.prototype['scheduleCheckPendingRequests'] !== 'function')
    throw new Error('kafkajs RequestQueue has no scheduleCheckPendingRequests: review request-queue-idle.ts');
  RequestQueue.prototype['scheduleCheckPendingRequests'] = scheduleCheckPendingRequests;
}
