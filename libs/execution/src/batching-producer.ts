/**
 * Coalesces single-message sends from many concurrent fires into one produce request per topic.
 * kafkajs sends one request per send() call; at thousands of results per second that is what
 * limits throughput, so messages queued in the same turn of the event loop go out together.
 * Topics are flushed separately so one failing topic (a Kafka target that does not exist) fails
 * only its own messages.
 */
import type { MessageProducer, OutboundMessage } from '@tickwork/messaging';

interface Pending {
  readonly message: OutboundMessage;
  readonly bytes: number;
  resolve(): void;
  reject(e: unknown): void;
}

interface TopicQueue {
  readonly items: Pending[];
  inFlight: number;
  scheduled: boolean;
}

export interface BatchingOptions {
  readonly maxMessages: number;
  readonly maxBytes: number;
  /** Produce requests in flight per topic; more sends wait and batch up meanwhile. */
  readonly maxInFlight: number;
}

const DEFAULTS: BatchingOptions = { maxMessages: 1_000, maxBytes: 768 * 1024, maxInFlight: 4 };

export class BatchingProducer {
  private readonly queues = new Map<string, TopicQueue>();
  private readonly opts: BatchingOptions;

  constructor(
    private readonly producer: MessageProducer,
    opts: Partial<BatchingOptions> = {},
  ) {
    this.opts = { ...DEFAULTS, ...opts };
  }

  /** Resolves once Kafka acknowledged this message (acks=all), or rejects with its batch's error. */
  send(topic: string, message: OutboundMessage): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let q = this.queues.get(topic);
      if (!q) {
        q = { items: [], inFlight: 0, scheduled: false };
        this.queues.set(topic, q);
      }
      q.items.push({ message, bytes: (message.value?.length ?? 0) + 64, resolve, reject });
      this.schedule(topic, q);
    });
  }

  private schedule(topic: string, q: TopicQueue): void {
    if (q.scheduled || q.items.length === 0 || q.inFlight >= this.opts.maxInFlight) return;
    q.scheduled = true;
    // Let every fire finishing in this turn of the event loop join the batch.
    setImmediate(() => {
      q.scheduled = false;
      this.flush(topic, q);
    });
  }

  private flush(topic: string, q: TopicQueue): void {
    while (q.items.length > 0 && q.inFlight < this.opts.maxInFlight) {
      const batch: Pending[] = [];
      let bytes = 0;
      while (
        q.items.length > 0 &&
        batch.length < this.opts.maxMessages &&
        (batch.length === 0 || bytes + q.items[0]!.bytes <= this.opts.maxBytes)
      ) {
        const p = q.items.shift()!;
        bytes += p.bytes;
        batch.push(p);
      }
      q.inFlight++;
      this.producer
        .send([{ topic, messages: batch.map((p) => p.message) }])
        .then(
          () => batch.forEach((p) => p.resolve()),
          (e: unknown) => batch.forEach((p) => p.reject(e)),
        )
        .finally(() => {
          q.inFlight--;
          this.schedule(topic, q);
        });
    }
  }

  /** Messages waiting or in flight, for health reporting. */
  pending(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.items.length + q.inFlight;
    return n;
  }
}
