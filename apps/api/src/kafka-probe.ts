/** Kafka reachability for readiness: one admin connection, opened on first use and after a failure. */
import type { MessageBus, TopicAdmin } from '@tickwork/messaging';

/** The API's Kafka readiness check (the API itself does not use Kafka to serve requests). */
export class KafkaProbe {
  private admin: Promise<TopicAdmin> | undefined;

  constructor(
    private readonly bus: MessageBus,
    private readonly topic: string,
  ) {}

  /** Resolves when a broker answers a metadata request (the topic need not exist yet). */
  async check(): Promise<void> {
    this.admin ??= this.bus.admin().catch((e: unknown) => {
      this.admin = undefined;
      throw e;
    });
    const admin = await this.admin;
    try {
      await admin.describeTopics([this.topic], []);
    } catch (e) {
      await this.close();
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
