/** Reading Tickwork's topics in tests, through the project's own messaging lib. */
import {
  createKafkaBus,
  type InboundMessage,
  type MessageBus,
  type MessageConsumer,
} from '@tickwork/messaging';
import { STACK } from './env';

/** A message bus on the test stack's brokers (plaintext, no SASL). */
export function testKafkaBus(clientId: string): MessageBus {
  return createKafkaBus({ brokers: STACK.kafkaBrokers.split(','), clientId, ssl: false, sasl: null });
}

/** Collects every message of a topic from the beginning, in a throwaway consumer group. */
export class TopicTap {
  readonly messages: InboundMessage[] = [];
  private constructor(private readonly consumer: MessageConsumer) {}

  static async open(topic: string): Promise<TopicTap> {
    const bus = testKafkaBus('tickwork-test');
    const consumer = await bus.consumer({
      groupId: `tap-${topic}-${Date.now()}-${Math.random()}`,
      topics: [topic],
      fromBeginning: true,
    });
    const tap = new TopicTap(consumer);
    await consumer.start({
      onBatch: async (batch) => {
        tap.messages.push(...batch.messages);
        const last = batch.messages[batch.messages.length - 1];
        if (last) batch.markProcessed(last.offset);
      },
    });
    return tap;
  }

  async close(): Promise<void> {
    await this.consumer.stop();
  }
}
