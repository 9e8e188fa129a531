/** Publishes claimed fires to the fires topic, keyed by job id (per-job order, compaction by job). */
import type { FireEvent } from '@tickwork/domain';
import type { EventCodecs, MessageProducer, OutboundMessage } from '@tickwork/messaging';
import {
  Attr,
  boundTraceContext,
  contextWithSpan,
  fireAttributes,
  fireContext,
  injectTraceContext,
  kafkaAttributes,
  recordFailure,
  SpanKind,
  spansRecorded,
  tracer,
} from '@tickwork/telemetry';

export class FirePublisher {
  constructor(
    private readonly producer: MessageProducer,
    private readonly codecs: EventCodecs,
    private readonly topic: string,
  ) {}

  /**
   * Sends all fires in one send (the bus cuts it into requests under the broker's limit) and
   * resolves once Kafka acknowledged every one (acks=all). Each message gets a `send` span in its
   * fire's trace (from the claim, or stored with the outbox row for a relay), lasting until the
   * acknowledgement; its W3C context goes in the message headers.
   */
  async publish(fires: readonly FireEvent[], opts: { readonly relayed?: boolean } = {}): Promise<void> {
    if (fires.length === 0) return;
    if (!spansRecorded()) return this.publishUntraced(fires);
    const sends = fires.map((f) => {
      const parent = fireContext(boundTraceContext(f));
      const span = tracer().startSpan(
        `send ${this.topic}`,
        {
          kind: SpanKind.PRODUCER,
          attributes: kafkaAttributes('send', this.topic, {
            ...fireAttributes(f),
            [Attr.MessagingKafkaKey]: f.jobId,
            [Attr.MessagingMessageId]: f.fireId,
            [Attr.MessagingBatchCount]: fires.length,
            ...(opts.relayed !== undefined ? { [Attr.Relayed]: opts.relayed } : {}),
          }),
        },
        parent,
      );
      const headers = injectTraceContext(
        { 'tickwork-fire-id': f.fireId, 'tickwork-attempt': String(f.attempt), [DUE_AT_HEADER]: dueAtOf(f) },
        contextWithSpan(parent, span),
      );
      return { fire: f, span, headers };
    });
    try {
      const messages: OutboundMessage[] = await Promise.all(
        sends.map(async (s) => ({
          key: s.fire.jobId,
          value: await this.codecs.encodeFire(this.topic, s.fire),
          headers: s.headers,
        })),
      );
      await this.producer.send([{ topic: this.topic, messages }]);
    } catch (e) {
      for (const s of sends) recordFailure(s.span, e);
      throw e;
    } finally {
      for (const s of sends) s.span.end();
    }
  }

  /**
   * Encodes fires to be sent later with sendEncoded (fires claimed ahead of their time), or
   * returns undefined when spans are recorded: a send span must start when the fire is sent.
   */
  async encodeAhead(fires: readonly FireEvent[]): Promise<OutboundMessage[] | undefined> {
    return spansRecorded() ? undefined : this.encodeUntraced(fires);
  }

  /** Sends messages from encodeAhead, resolving once Kafka acknowledged every one. */
  async sendEncoded(messages: readonly OutboundMessage[]): Promise<void> {
    if (messages.length > 0) await this.producer.send([{ topic: this.topic, messages }]);
  }

  /** publish() when spans are not recorded: each message carries the context its fire is bound to. */
  private async publishUntraced(fires: readonly FireEvent[]): Promise<void> {
    await this.sendEncoded(await this.encodeUntraced(fires));
  }

  private encodeUntraced(fires: readonly FireEvent[]): Promise<OutboundMessage[]> {
    return Promise.all(
      fires.map(async (f) => ({
        key: f.jobId,
        value: await this.codecs.encodeFire(this.topic, f),
        headers: {
          ...boundTraceContext(f),
          'tickwork-fire-id': f.fireId,
          'tickwork-attempt': String(f.attempt),
          [DUE_AT_HEADER]: dueAtOf(f),
        },
      })),
    );
  }
}

/** The header that tells executors when a fire came due (epoch ms): they start the most overdue first. */
const DUE_AT_HEADER = 'tickwork-due-at';

function dueAtOf(f: FireEvent): string {
  return String((f.dueSince ?? f.scheduledFor).getTime());
}
