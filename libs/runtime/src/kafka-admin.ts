/**
 * One Kafka admin connection for probes and sampling (readiness, consumer lag): opened on first
 * use, dropped after a failure so the next use reconnects.
 */
import type { MessageBus, TopicAdmin } from '@tickwork/messaging';

export class LazyKafkaAdmin {
  private admin: Promise<TopicAdmin> | undefined;

  constructor(private readonly bus: () => MessageBus | undefined) {}

  /** The connection, opened if needed. */
  get(): Promise<TopicAdmin> {
    const bus = this.bus();
    if (!bus) return Promise.reject(new Error('not connected to Kafka yet'));
    this.admin ??= bus.admin().catch((e: unknown) => {
      this.admin = undefined;
      throw e;
    });
    return this.admin;
  }

  /** Resolves when a broker answers a metadata request for `topic` (which need not exist yet). */
  async probe(topic: string): Promise<void> {
    try {
      await (await this.get()).describeTopics([topic], []);
    } catch (e) {
      void this.close();
      throw e;
    }
  }

  /** Disconnects; a connection attempt still retrying against an unreachable broker is not waited for. */
  async close(): Promise<void> {
    const admin = this.admin;
    this.admin = undefined;
    const closed = admin?.then((a) => a.disconnect()).catch(() => undefined);
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
  }
}
