/**
 * kafkajs 2.2.4 spins a 1 ms timer forever on every broker connection once it has answered a
 * request (tulios/kafkajs#1556, unfixed upstream): `scheduleCheckPendingRequests` re-arms itself
 * with a negative delay when nothing is pending and nothing is throttled. On an idle scheduler or
 * executor that loop was most of the process's CPU. This replaces the method with one that arms a
 * timer only when a request waits (in-flight limit or throttle) or a throttle is still running;
 * `push` and `fulfillRequest` re-check the queue themselves, so nothing waits on the dropped timer.
 *
 * It also slows the sweep for timed-out requests. kafkajs runs it every 100 ms on every connection,
 * in flight or not: with five or six connections per app that was 50-60 wake-ups a second of an
 * idle process (idle, the two apps went from 3.3% to 2.6% of a core without them). Requests time
 * out after kafkajs's default 30 s, so a sweep every second finds them at most a second late.
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

/** The fields of kafkajs's RequestQueue the timeout sweep reads and writes. */
export interface TimedRequestQueue {
  enforceRequestTimeout: boolean;
  requestTimeout: number;
  requestTimeoutIntervalId: NodeJS.Timeout | null;
  inflight: Map<number, { sentAt: number; requestTimeout: number; timeoutRequest(): void }>;
  isConnected(): boolean;
  destroy(): void;
}

/** How often a connection looks for requests past their timeout (kafkajs: 100 ms). */
export const REQUEST_TIMEOUT_SWEEP_MS = 1_000;

/** kafkajs's request-timeout sweep, run every `REQUEST_TIMEOUT_SWEEP_MS` instead of every 100 ms. */
export function scheduleRequestTimeoutCheck(this: TimedRequestQueue): void {
  if (!this.enforceRequestTimeout) return;
  this.destroy();
  this.requestTimeoutIntervalId = setInterval(
    () => {
      const now = Date.now();
      this.inflight.forEach((request) => {
        if (now - request.sentAt > request.requestTimeout) request.timeoutRequest();
      });
      if (!this.isConnected()) this.destroy();
    },
    Math.min(this.requestTimeout, REQUEST_TIMEOUT_SWEEP_MS),
  );
}

let patched: boolean | undefined;

/**
 * Installs the fixed `scheduleCheckPendingRequests` and the slower timeout sweep on kafkajs's
 * RequestQueue, once per process; true when both are in place.
 */
export function fixIdleRequestQueueLoop(): boolean {
  if (patched !== undefined) return patched;
  // A deep import: the class is not exported, and connections build their queues from this module.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const RequestQueue = require('kafkajs/src/network/requestQueue') as { prototype: Record<string, unknown> };
  for (const method of ['scheduleCheckPendingRequests', 'scheduleRequestTimeoutCheck'])
    if (typeof RequestQueue.prototype[method] !== 'function')
      throw new Error(`kafkajs RequestQueue has no ${method}: review request-queue-idle.ts`);
  RequestQueue.prototype['scheduleCheckPendingRequests'] = scheduleCheckPendingRequests;
  RequestQueue.prototype['scheduleRequestTimeoutCheck'] = scheduleRequestTimeoutCheck;
  patched =
    RequestQueue.prototype['scheduleCheckPendingRequests'] === scheduleCheckPendingRequests &&
    RequestQueue.prototype['scheduleRequestTimeoutCheck'] === scheduleRequestTimeoutCheck;
  return patched;
}
