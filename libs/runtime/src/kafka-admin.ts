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

  /**
   * Resolves when a broker answers a metadata request for `topic` (which need not exist yet).
   * A failure on a connection that was already open is retried once on a fresh one: a broker
   * closes idle connections, and a stale socket ("write after end") is not an outage.
   */
  async probe(topic: string): Promise<void> {
    const reused = this.admin !== undefined;
    try {
      await (await this.get()).describeTopics([topic], []);
    } catch (e) {
      await this.close();
      if (!reused) throw e;
      try {
        await (await this.get()).describeTopics([topic], []);
      } catch (again) {
        void this.close();
        throw again;
      }
    }
  }

  /**
   * Committed and end offsets of `groupId` on `topic`, per partition; like `probe`, a failure on
   * a connection that was already open is retried once on a fresh one.
   */
  async groupLag(
    groupId: string,
    topic: string,
  ): Promise<{ partition: number; committed: string; end: string }[]> {
    const reused = this.admin !== undefined;
    try {
      return await (await this.get()).groupLag(groupId, topic);
    } catch (e) {
      await this.close();
      if (!reused) throw e;
      return await (await this.get()).groupLag(groupId, topic);
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
