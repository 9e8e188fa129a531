import { fixIdleRequestQueueLoop, REQUEST_TIMEOUT_SWEEP_MS } from './request-queue-idle';

interface Queue {
  pending: unknown[];
  inflight: Map<number, unknown>;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  push(r: {
    entry: { correlationId: number; resolve(): void };
    expectResponse: boolean;
    sendRequest(): void;
  }): void;
  fulfillRequest(r: { correlationId: number; payload: Buffer; size: number }): void;
  checkPendingRequests(): void;
  maybeThrottle(ms: number): void;
  scheduleRequestTimeoutCheck(): void;
  requestTimeoutIntervalId: NodeJS.Timeout | null;
  destroy(): void;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const RequestQueue = require('kafkajs/src/network/requestQueue') as new (opts: object) => Queue;
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const newQueue = (enforceRequestTimeout = false) =>
  new RequestQueue({
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout,
    clientId: 't',
    broker: 'b',
    logger: silent,
  });
// The period of the sweep's interval timer (Node keeps it on the Timeout object).
const sweepPeriodMs = (q: Queue) =>
  (q.requestTimeoutIntervalId as unknown as { _idleTimeout: number })._idleTimeout;
const request = (correlationId: number, sent: number[]) => ({
  entry: { correlationId, resolve: () => undefined, apiName: 'Test', apiKey: 0, apiVersion: 0 },
  expectResponse: true,
  sendRequest: () => sent.push(correlationId),
});

describe('kafkajs request queue without the idle timer loop', () => {
  const queues: Queue[] = [];
  const queue = (enforceRequestTimeout = false) => {
    const q = newQueue(enforceRequestTimeout);
    queues.push(q);
    return q;
  };
  afterEach(() => queues.splice(0).forEach((q) => q.destroy()));

  it('unpatched, an empty queue re-arms a timer (the bug being fixed)', () => {
    const q = queue();
    q.checkPendingRequests();
    // kafkajs 2.2.4: a 1 ms timer that re-arms itself for as long as the connection lives.
    expect(q.throttleCheckTimeoutId).not.toBeNull();
  });

  it('unpatched, a connection sweeps for timed-out requests every 100 ms (the wake-ups being cut)', () => {
    const q = queue(true);
    q.scheduleRequestTimeoutCheck();
    expect(sweepPeriodMs(q)).toBe(100);
  });

  describe('patched', () => {
    beforeAll(() => fixIdleRequestQueueLoop());

    it('arms no timer when nothing is pending and nothing is throttled', () => {
      const q = queue();
      q.checkPendingRequests();
      expect(q.throttleCheckTimeoutId).toBeNull();
    });

    it('sends a request held by the in-flight limit as soon as the one before it is answered', () => {
      const q = queue();
      const sent: number[] = [];
      q.push(request(1, sent));
      q.push(request(2, sent));
      expect(sent).toEqual([1]);
      expect(q.pending).toHaveLength(1);
      expect(q.throttleCheckTimeoutId).not.toBeNull();

      q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
      expect(sent).toEqual([1, 2]);
      expect(q.pending).toHaveLength(0);
    });

    it('sends a request held by a throttle when the throttle ends', async () => {
      const q = queue();
      const sent: number[] = [];
      q.maybeThrottle(30);
      q.push(request(1, sent));
      expect(sent).toEqual([]);
      const deadline = Date.now() + 2_000;
      while (sent.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      expect(sent).toEqual([1]);
      // Answered, nothing pending, the throttle over: the queue goes quiet.
      q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
      expect(q.throttleCheckTimeoutId).toBeNull();
    });

    it('sweeps for timed-out requests once a second', () => {
      const q = queue(true);
      q.scheduleRequestTimeoutCheck();
      expect(sweepPeriodMs(q)).toBe(REQUEST_TIMEOUT_SWEEP_MS);
    });

    it('times out a request past its timeout at the next sweep, and only that one', () => {
      jest.useFakeTimers();
      try {
        const q = queue(true);
        q.scheduleRequestTimeoutCheck();
        const timedOut = jest.fn();
        const live = jest.fn();
        q.inflight.set(1, { sentAt: Date.now() - 30_001, requestTimeout: 30_000, timeoutRequest: timedOut });
        q.inflight.set(2, { sentAt: Date.now(), requestTimeout: 30_000, timeoutRequest: live });
        jest.advanceTimersByTime(REQUEST_TIMEOUT_SWEEP_MS - 1);
        expect(timedOut).not.toHaveBeenCalled();
        jest.advanceTimersByTime(1);
        expect(timedOut).toHaveBeenCalledTimes(1);
        expect(live).not.toHaveBeenCalled();
      } finally {
        jest.useRealTimers();
      }
    });

    it('arms no sweep when request timeouts are not enforced', () => {
      const q = queue(false);
      q.scheduleRequestTimeoutCheck();
      expect(q.requestTimeoutIntervalId ?? null).toBeNull();
    });
  });
});
