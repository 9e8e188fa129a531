/**
 * Coalesces single-message sends from many concurrent fires into one produce request.
 * kafkajs sends one request per send() call and spends much of its CPU per request (encoding,
 * buffers, a round trip per broker), so every message queued in the same turn of the event loop
 * — Kafka-target messages, results, retries and dead letters alike — goes out in one request
 * spanning their topics: each fire's two messages (its target's and its result) travel together.
 * One failing topic (a Kafka target that does not exist) must fail only its own messages, so a
 * failed request over several topics is sent again one topic per request, and only the topics
 * that fail again are rejected.
 */
import type { MessageProducer, OutboundMessage } from '@tickwork/messaging';

interface Pending {
  readonly topic: string;
  readonly message: OutboundMessage;
  readonly bytes: number;
  /** Called once: with no argument when Kafka acknowledged the message, else with the error. */
  settle(error?: unknown): void;
}

export interface BatchingOptions {
  /** Messages per produce request. */
  readonly maxMessages: number;
  /** Approximate bytes per produce request. */
  readonly maxBytes: number;
  /** Produce requests in flight; more sends wait and batch up meanwhile. */
  readonly maxInFlight: number;
}

const DEFAULTS: BatchingOptions = { maxMessages: 2_000, maxBytes: 1024 * 1024, maxInFlight: 4 };

export class BatchingProducer {
  private items: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly opts: BatchingOptions;

  constructor(
    private readonly producer: MessageProducer,
    opts: Partial<BatchingOptions> = {},
  ) {
    this.opts = { ...DEFAULTS, ...opts };
  }

  /** Resolves once Kafka acknowledged this message (acks=all), or rejects with its topic's error. */
  send(topic: string, message: OutboundMessage): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.items.push({
        topic,
        message,
        bytes: bytesOf(message),
        settle: (e?: unknown) => (e === undefined ? resolve() : reject(e)),
      });
      this.schedule();
    });
  }

  /**
   * Sends several messages to one topic in the same batches as other sends; resolves once every
   * one is settled, with undefined for each acknowledged message and the error for each failed one.
   */
  sendMany(topic: string, messages: readonly OutboundMessage[]): Promise<(unknown | undefined)[]> {
    if (messages.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const errors = new Array<unknown>(messages.length);
      let open = messages.length;
      messages.forEach((message, i) => {
        this.items.push({
          topic,
          message,
          bytes: bytesOf(message),
          settle: (e?: unknown) => {
            errors[i] = e;
            if (--open === 0) resolve(errors);
          },
        });
      });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.items.length === 0 || this.inFlight >= this.opts.maxInFlight) return;
    this.scheduled = true;
    // Let every fire finishing in this turn of the event loop join the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.items.length > 0 && this.inFlight < this.opts.maxInFlight) {
      let n = 0;
      let bytes = 0;
      while (
        n < this.items.length &&
        n < this.opts.maxMessages &&
        (n === 0 || bytes + this.items[n]!.bytes <= this.opts.maxBytes)
      ) {
        bytes += this.items[n]!.bytes;
        n++;
      }
      const batch = n === this.items.length ? this.items : this.items.slice(0, n);
      this.items = n === this.items.length ? [] : this.items.slice(n);
      this.inFlight++;
      void this.sendBatch(batch).finally(() => {
        this.inFlight--;
        this.schedule();
      });
    }
  }

  /** Sends the whole batch at once; on failure, retries topic by topic so only failing topics fail. */
  private async sendBatch(batch: readonly Pending[]): Promise<void> {
    const byTopic = new Map<string, Pending[]>();
    for (const p of batch) {
      const list = byTopic.get(p.topic);
      if (list) list.push(p);
      else byTopic.set(p.topic, [p]);
    }
    try {
      await this.producer.send(
        [...byTopic].map(([topic, ps]) => ({ topic, messages: ps.map((p) => p.message) })),
      );
      for (const p of batch) p.settle();
    } catch (thrown) {
      // settle() with no argument means acknowledged: a failure always settles with an error.
      const e = thrown ?? new Error('send failed');
      if (byTopic.size === 1) {
        for (const p of batch) p.settle(e);
        return;
      }
      // Which topic failed is not known: each is sent again alone. A message of a topic that did
      // reach Kafka may be produced twice; results and target messages are at least once anyway
      // (consumers dedupe on the fire id and attempt).
      await Promise.all(
        [...byTopic].map(([topic, ps]) =>
          this.producer.send([{ topic, messages: ps.map((p) => p.message) }]).then(
            () => ps.forEach((p) => p.settle()),
            (err: unknown) => ps.forEach((p) => p.settle(err ?? new Error('send failed'))),
          ),
        ),
      );
    }
  }

  /** Messages waiting, plus produce requests in flight, for health reporting. */
  pending(): number {
    return this.items.length + this.inFlight;
  }
}

function bytesOf(message: OutboundMessage): number {
  return (message.value?.length ?? 0) + 64;
}
