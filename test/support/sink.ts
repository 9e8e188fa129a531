/** A Kafka target topic for tests: created fresh, read back through a TopicTap. */
import type { Target } from '@tickwork/domain';
import { testKafkaBus, TopicTap } from './kafka';

export class KafkaSink {
  private constructor(
    readonly topic: string,
    readonly tap: TopicTap,
  ) {}

  static async create(topic: string, partitions = 4): Promise<KafkaSink> {
    const bus = testKafkaBus('tickwork-test');
    const admin = await bus.admin();
    try {
      await admin.createTopics([{ name: topic, partitions, replicationFactor: 1, configs: {} }]);
    } finally {
      await admin.disconnect();
    }
    return new KafkaSink(topic, await TopicTap.open(topic));
  }

  target(): Target {
    return { type: 'kafka', topic: this.topic, key: null, headers: {} };
  }

  /** How many times each fire id was delivered to the sink. */
  deliveries(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const m of this.tap.messages) {
      const id = m.headers['tickwork-fire-id'] ?? '?';
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    return counts;
  }

  async close(): Promise<void> {
    await this.tap.close();
  }
}
