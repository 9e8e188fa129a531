/**
 * Where the executor's messages go: attempt results to fire-results, retries to the tiered retry
 * topics (attempt and not-before in headers), and dead letters — the full fire, replayable — to
 * the DLQ with the reason. Undecodable input is dead-lettered as raw bytes with its origin.
 */
import type { FireEvent, FireResult } from '@tickwork/domain';
import type { EventCodecs, InboundMessage, OutboundMessage } from '@tickwork/messaging';
import {
  Attr,
  boundTraceContext,
  fireAttributes,
  inSpan,
  injectTraceContext,
  kafkaAttributes,
  SpanKind,
  spansRecorded,
  type FireIdentity,
} from '@tickwork/telemetry';
import type { BatchingProducer } from './batching-producer';
import { pickRetryTier, type DeadLetterReason, type RetryTier } from './retry-plan';

/** Header names on retry and dead-letter messages. */
export const HEADERS = {
  fireId: 'tickwork-fire-id',
  attempt: 'tickwork-attempt',
  notBefore: 'tickwork-not-before',
  retryTier: 'tickwork-retry-tier',
  lastError: 'tickwork-last-error',
  outcome: 'tickwork-outcome',
  dlqReason: 'tickwork-dlq-reason',
  dlqError: 'tickwork-dlq-error',
  source: 'tickwork-source',
  deadLetteredAt: 'tickwork-dead-lettered-at',
} as const;

export interface SinkTopics {
  readonly fireResults: string;
  readonly deadLetters: string;
  readonly retryTiers: readonly RetryTier[];
}

/** What the executor sends out; implemented over Kafka by KafkaOutcomeSink. */
export interface FireOutcomeSink {
  publishResult(result: FireResult): Promise<void>;
  /** Publishes several results; rejects if any of them failed (absent: one publishResult each). */
  publishResults?(results: readonly FireResult[]): Promise<void>;
  scheduleRetry(fire: FireEvent, notBefore: Date, lastError: string): Promise<void>;
  deadLetter(fire: FireEvent, reason: DeadLetterReason, detail: string, source?: string): Promise<void>;
}

export class KafkaOutcomeSink implements FireOutcomeSink {
  constructor(
    private readonly producer: BatchingProducer,
    private readonly codecs: EventCodecs,
    private readonly topics: SinkTopics,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Publishes one attempt's result, keyed by job id. */
  async publishResult(result: FireResult): Promise<void> {
    const value = await this.codecs.encodeResult(this.topics.fireResults, result);
    await this.send(this.topics.fireResults, result, {
      key: result.jobId,
      value,
      headers: resultHeaders(result),
    });
  }

  /** Publishes several attempts' results in one batch of sends (no spans: the untraced path's). */
  async publishResults(results: readonly FireResult[]): Promise<void> {
    const topic = this.topics.fireResults;
    const values = await Promise.all(results.map((r) => this.codecs.encodeResult(topic, r)));
    const failures = await this.producer.sendMany(
      topic,
      results.map((r, i) => ({
        key: r.jobId,
        value: values[i]!,
        headers: injectTraceContext({ ...boundTraceContext(r), ...resultHeaders(r) }),
      })),
    );
    const failed = failures.find((f) => f !== undefined);
    if (failed !== undefined) throw failed;
  }

  /** Puts the fire (already carrying its next attempt number) on the retry tier for its delay. */
  async scheduleRetry(fire: FireEvent, notBefore: Date, lastError: string): Promise<void> {
    const tier = pickRetryTier(
      this.topics.retryTiers,
      Math.max(0, notBefore.getTime() - this.now().getTime()),
    );
    const value = await this.codecs.encodeFire(tier.topic, fire);
    await this.send(tier.topic, fire, {
      key: fire.jobId,
      value,
      headers: {
        [HEADERS.fireId]: fire.fireId,
        [HEADERS.attempt]: String(fire.attempt),
        [HEADERS.notBefore]: String(notBefore.getTime()),
        [HEADERS.retryTier]: String(tier.delayMs),
        [HEADERS.lastError]: lastError.slice(0, 1000),
      },
    });
  }

  /** Dead-letters the full fire (replayable as is) with the reason code and detail. */
  async deadLetter(
    fire: FireEvent,
    reason: DeadLetterReason,
    detail: string,
    source?: string,
  ): Promise<void> {
    const value = await this.codecs.encodeFire(this.topics.deadLetters, fire);
    await this.send(this.topics.deadLetters, fire, {
      key: fire.jobId,
      value,
      headers: {
        [HEADERS.fireId]: fire.fireId,
        [HEADERS.attempt]: String(fire.attempt),
        [HEADERS.dlqReason]: reason,
        [HEADERS.dlqError]: detail.slice(0, 1000),
        [HEADERS.deadLetteredAt]: this.now().toISOString(),
        ...(source ? { [HEADERS.source]: source } : {}),
      },
    });
  }

  /** Forwards undecodable bytes untouched, with the reason and where they came from. */
  async deadLetterRaw(message: InboundMessage, detail: string): Promise<void> {
    await this.send(this.topics.deadLetters, null, {
      key: message.key,
      value: message.value,
      headers: {
        ...message.headers,
        [HEADERS.dlqReason]: 'UNDECODABLE' satisfies DeadLetterReason,
        [HEADERS.dlqError]: detail.slice(0, 1000),
        [HEADERS.deadLetteredAt]: this.now().toISOString(),
        [HEADERS.source]: sourceOf(message),
      },
    });
  }

  /**
   * Sends one message in a producer span (a child of the delivery being processed) whose context
   * replaces any `traceparent` in the headers: the next hop continues the same trace.
   */
  private send(topic: string, fire: FireIdentity | null, message: OutboundMessage): Promise<void> {
    // Spans not recorded: no span of its own; the fire's trace (or the active one) still goes out.
    if (!spansRecorded()) {
      const trace = fire ? boundTraceContext(fire) : undefined;
      const headers = trace ? { ...trace, ...message.headers } : { ...message.headers };
      return this.producer.send(topic, { ...message, headers: injectTraceContext(headers) });
    }
    return inSpan(
      `send ${topic}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: kafkaAttributes('send', topic, {
          ...(fire ? fireAttributes(fire) : {}),
          ...(typeof message.key === 'string' ? { [Attr.MessagingKafkaKey]: message.key } : {}),
        }),
      },
      () => this.producer.send(topic, { ...message, headers: injectTraceContext({ ...message.headers }) }),
    );
  }

  /** Re-enqueues a retry message on its own tier unchanged (its not-before is beyond the tier's reach). */
  async requeue(message: InboundMessage): Promise<void> {
    await this.producer.send(message.topic, {
      key: message.key,
      value: message.value,
      headers: message.headers,
    });
  }
}

/** The headers of a result message (besides its trace context). */
function resultHeaders(r: FireResult): Record<string, string> {
  return { [HEADERS.fireId]: r.fireId, [HEADERS.outcome]: r.outcome, [HEADERS.attempt]: String(r.attempt) };
}

/** `topic/partition/offset` of a message, for dead-letter headers and logs. */
export function sourceOf(m: InboundMessage): string {
  return `${m.topic}/${m.partition}/${m.offset}`;
}
