/**
 * The recording webhook receiver: a real HTTP server that records every call it receives (arrival
 * time, webhook-id, attempt, scheduled time) and answers as the scenario asks: 500 for some share of
 * calls, 429 with Retry-After for another share, slowly for some share of calls or for chosen jobs.
 *
 * A call's answer is a function of (webhook-id, attempt) alone, so a second copy of one attempt
 * gets the same answer as the first. Whether the answer reached the caller is recorded too: a
 * call whose caller hung up first (an executor that aborted it, or died) was cut, and its effect
 * does not count.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';

/** How the receiver answers. Shares are fractions of calls (0..1). */
export interface ReceiverBehaviour {
  /** Share of calls answered 500. */
  readonly errorShare: number;
  /** Share of calls answered 429 with `Retry-After: 1`. */
  readonly throttleShare: number;
  /** Share of calls (by webhook-id) answered only after `slowMs`. */
  readonly slowShare: number;
  /** Jobs every call of which is answered only after `slowMs`. */
  readonly slowJobs: ReadonlySet<string>;
  readonly slowMs: number;
}

export const STEADY: ReceiverBehaviour = {
  errorShare: 0.05,
  throttleShare: 0.02,
  slowShare: 0,
  slowJobs: new Set(),
  slowMs: 2_000,
};

/** One call as the receiver saw it. */
export interface ReceivedCall {
  readonly webhookId: string;
  readonly jobId: string;
  readonly fenceToken: number;
  readonly attempt: number;
  /** `tickwork-scheduled-for`, epoch ms. */
  readonly scheduledFor: number;
  /** When the request's headers arrived, epoch ms. */
  readonly receivedAt: number;
  readonly status: number;
  readonly delayMs: number;
  /** answered: the response was written out; cut: the caller hung up before it; pending: neither yet. */
  outcome: 'answered' | 'cut' | 'pending';
}

/** A number in [0, 1) from a string, the same on every run. */
function unit(text: string): number {
  return createHash('sha1').update(text).digest().readUInt32BE(0) / 2 ** 32;
}

export class RecordingReceiver {
  readonly calls: ReceivedCall[] = [];
  /** Calls per webhook-id, in arrival order. */
  readonly byWebhookId = new Map<string, ReceivedCall[]>();
  behaviour: ReceiverBehaviour = STEADY;
  private server: Server | undefined;
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const receivedAt = Date.now();
      const h = req.headers;
      const webhookId = String(h['webhook-id'] ?? '');
      const attempt = Number(h['tickwork-attempt'] ?? 0);
      const { status, delayMs } = this.answerFor(webhookId, String(h['tickwork-job-id'] ?? ''), attempt);
      const call: ReceivedCall = {
        webhookId,
        jobId: String(h['tickwork-job-id'] ?? ''),
        fenceToken: Number(h['tickwork-fence-token'] ?? -1),
        attempt,
        scheduledFor: Date.parse(String(h['tickwork-scheduled-for'] ?? '')),
        receivedAt,
        status,
        delayMs,
        outcome: 'pending',
      };
      this.calls.push(call);
      const list = this.byWebhookId.get(webhookId);
      if (list) list.push(call);
      else this.byWebhookId.set(webhookId, [call]);
      res.once('finish', () => (call.outcome = 'answered'));
      res.once('close', () => {
        if (call.outcome === 'pending') call.outcome = 'cut';
      });
      req.resume(); // the body is not needed
      const answer = () => {
        if (res.destroyed || res.writableEnded) return;
        res.writeHead(status, status === 429 ? { 'retry-after': '1' } : {});
        res.end(status < 300 ? 'ok' : 'no');
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    return this;
  }

  private answerFor(webhookId: string, jobId: string, attempt: number): { status: number; delayMs: number } {
    const b = this.behaviour;
    const u = unit(`${webhookId}#${attempt}`);
    const status = u < b.errorShare ? 500 : u < b.errorShare + b.throttleShare ? 429 : 200;
    const slow = b.slowJobs.has(jobId) || unit(`slow:${webhookId}`) < b.slowShare;
    return { status, delayMs: slow ? b.slowMs : 0 };
  }

  url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Calls that took effect: answered 2xx, the answer written out to the caller. */
  effects(webhookId: string): ReceivedCall[] {
    return (this.byWebhookId.get(webhookId) ?? []).filter((c) => c.outcome === 'answered' && c.status < 300);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
