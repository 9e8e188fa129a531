import { fixIdleRequestQueueLoop } from './request-queue-idle';

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
  destroy(): void;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const RequestQueue = require('kafkajs/src/network/requestQueue') as new (opts: object) => Queue;
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const newQueue = () =>
  new RequestQueue({
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 't',
    broker: 'b',
    logger: silent,
  });
const request = (correlationId: number, sent: number[]) => ({
  entry: { correlationId, resolve: () => undefined, apiName: 'Test', apiKey: 0, apiVersion: 0 },
  expectResponse: true,
  sendRequest: () => sent.push(correlationId),
});

describe('kafkajs request queue without the idle timer loop', () => {
  const queues: Queue[] = [];
  const queue = () => {
    const q = newQueue();
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
  });
});
