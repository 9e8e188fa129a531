/**
 * Consumes fire batches: decodes each message (poison goes to the dead-letter topic with its
 * reason), executes fires with bounded concurrency, and marks offsets processed only up to the
 * first fire not yet recorded, so a crash re-delivers rather than loses.
 */
import type { FireEvent, FireResult } from '@tickwork/domain';
import { UndecodableMessageError, type EventCodecs, type InboundBatch, type InboundMessage, type MessageProducer } from '@tickwork/messaging';
import type { FireExecutor, FireOutcomeSink } from './fire-executor';

export interface FireConsumerEvents {
  onPoison?(message: InboundMessage, reason: string): void;
  onError?(error: Error, message: InboundMessage): void;
}

/** Publishes results and dead letters to Kafka. */
export class KafkaOutcomeSink implements FireOutcomeSink {
  constructor(
    private readonly producer: MessageProducer,
    private readonly codecs: EventCodecs,
    private readonly topics: { readonly fireResults: string; readonly deadLetters: string },
  ) {}

  async publishResult(result: FireResult): Promise<void> {
    const value = await this.codecs.encodeResult(this.topics.fireResults, result);
    await this.producer.send([
      { topic: this.topics.fireResults, messages: [{ key: result.jobId, value, headers: { 'tickwork-fire-id': result.fireId, 'tickwork-outcome': result.outcome } }] },
    ]);
  }

  async deadLetter(fire: FireEvent, reason: string): Promise<void> {
    const value = await this.codecs.encodeFire(this.topics.deadLetters, fire);
    await this.producer.send([
      { topic: this.topics.deadLetters, messages: [{ key: fire.jobId, value, headers: { 'tickwork-fire-id': fire.fireId, 'tickwork-dlq-reason': reason.slice(0, 1000) } }] },
    ]);
  }

  /** Forwards undecodable bytes untouched, with the reason and where they came from. */
  async deadLetterRaw(message: InboundMessage, reason: string): Promise<void> {
    await this.producer.send([
      {
        topic: this.topics.deadLetters,
        messages: [
          {
            key: message.key,
            value: message.value,
            headers: {
              ...message.headers,
              'tickwork-dlq-reason': reason.slice(0, 1000),
              'tickwork-source': `${message.topic}/${message.partition}/${message.offset}`,
            },
          },
        ],
      },
    ]);
  }
}

/** A counting semaphore shared by all partitions of one executor. */
export class Slots {
  private free: number;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }

  inUse(): number {
    return this.size - this.free;
  }
}

export class FireBatchHandler {
  constructor(
    private readonly codecs: EventCodecs,
    private readonly executor: FireExecutor,
    private readonly sink: KafkaOutcomeSink,
    private readonly slots: Slots,
    private readonly stopping: AbortSignal,
    private readonly events: FireConsumerEvents = {},
  ) {}

  /** Handles one partition batch; never throws (a failing message is retried by re-delivery). */
  async handle(batch: InboundBatch): Promise<void> {
    const done: boolean[] = new Array<boolean>(batch.messages.length).fill(false);
    let next = 0; // first message not yet marked processed
    let failed = false;
    const keepAlive = setInterval(() => void batch.heartbeat().catch(() => undefined), 3_000);
    const advance = () => {
      while (next < done.length && done[next]) {
        batch.markProcessed(batch.messages[next]!.offset);
        next++;
      }
    };
    const inFlight: Promise<void>[] = [];
    try {
      for (let i = 0; i < batch.messages.length; i++) {
        if (failed || !batch.isActive() || this.stopping.aborted) break;
        const message = batch.messages[i]!;
        await this.slots.acquire();
        inFlight.push(
          this.process(message)
            .then(() => {
              done[i] = true;
              advance();
            })
            .catch((e: unknown) => {
              // Leave the offset unmarked: the rest of the batch stops, and the fire comes back.
              failed = true;
              this.events.onError?.(e as Error, message);
            })
            .finally(() => this.slots.release()),
        );
      }
      await Promise.all(inFlight);
    } finally {
      clearInterval(keepAlive);
    }
  }

  private async process(message: InboundMessage): Promise<void> {
    let fire: FireEvent;
    try {
      fire = await this.codecs.decodeFire(message.value);
    } catch (e) {
      if (!(e instanceof UndecodableMessageError)) throw e;
      await this.sink.deadLetterRaw(message, e.message);
      this.events.onPoison?.(message, e.message);
      return;
    }
    await this.executor.execute(fire, this.stopping);
  }
}
