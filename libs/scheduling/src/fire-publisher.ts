/** Publishes claimed fires to the fires topic, keyed by job id (per-job order, compaction by job). */
import type { FireEvent } from '@tickwork/domain';
import type { EventCodecs, MessageProducer, OutboundMessage } from '@tickwork/messaging';

export class FirePublisher {
  constructor(
    private readonly producer: MessageProducer,
    private readonly codecs: EventCodecs,
    private readonly topic: string,
  ) {}

  /** Sends all fires in one batch and resolves once Kafka acknowledged every one (acks=all). */
  async publish(fires: readonly FireEvent[]): Promise<void> {
    if (fires.length === 0) return;
    const messages: OutboundMessage[] = await Promise.all(
      fires.map(async (f) => ({
        key: f.jobId,
        value: await this.codecs.encodeFire(this.topic, f),
        headers: { 'tickwork-fire-id': f.fireId, 'tickwork-attempt': String(f.attempt) },
      })),
    );
    await this.producer.send([{ topic: this.topic, messages }]);
  }
}
