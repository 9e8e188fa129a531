/** The executor instance: a member of the executor group on the fires topic. */
import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import type { TickworkConfig } from '@tickwork/config';
import { FireBatchHandler, FireExecutor, KafkaOutcomeSink, KafkaRunner, Slots, WebhookRunner } from '@tickwork/execution';
import type { MessageConsumer, MessageProducer } from '@tickwork/messaging';
import { openMessaging } from '@tickwork/runtime';
import { RunRepository, type Pool } from '@tickwork/store';

@Injectable()
export class ExecutorService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('executor');
  private readonly stopping = new AbortController();
  private producer: MessageProducer | undefined;
  private consumer: MessageConsumer | undefined;
  private webhooks: WebhookRunner | undefined;
  private joined = false;

  constructor(
    private readonly config: TickworkConfig,
    private readonly pool: Pool,
  ) {}

  isReady(): boolean {
    return this.joined;
  }

  async onApplicationBootstrap(): Promise<void> {
    const c = this.config;
    const messaging = await openMessaging(c, (level, message) => this.log[level === 'info' ? 'log' : level](message));
    this.producer = await messaging.bus.producer({ idempotent: true });
    this.webhooks = new WebhookRunner();
    const sink = new KafkaOutcomeSink(this.producer, messaging.codecs, c.topics);
    const executor = new FireExecutor(
      new RunRepository(this.pool),
      this.webhooks,
      new KafkaRunner(this.producer),
      sink,
      { owner: c.instanceId, runLeaseMs: c.executor.runLeaseMs, heartbeatMs: c.executor.heartbeatMs },
      { onLeaseLost: (f) => this.log.warn(`lease lost for fire ${f.fireId}; the new holder records it`) },
    );
    const handler = new FireBatchHandler(messaging.codecs, executor, sink, new Slots(c.executor.concurrency), this.stopping.signal, {
      onPoison: (m, reason) => this.log.warn(`dead-lettered undecodable message ${m.topic}/${m.partition}/${m.offset}: ${reason}`),
      onError: (e, m) => this.log.error(`fire at ${m.topic}/${m.partition}/${m.offset} failed, will be re-delivered: ${e.message}`),
    });
    this.consumer = await messaging.bus.consumer({
      groupId: c.executor.groupId,
      topics: [c.topics.fires],
      partitionsConsumedConcurrently: Math.min(c.firesPartitions, 16),
    });
    await this.consumer.start({
      onBatch: (batch) => handler.handle(batch),
      onAssignment: (a) => {
        this.joined = true;
        this.log.log(`assigned fires partitions [${(a.get(c.topics.fires) ?? []).join(', ')}]`);
      },
      onCrash: (e) => this.log.error(`fires consumer crashed: ${e.message}`),
    });
    this.log.log(`executor ${c.instanceId} started (group ${c.executor.groupId}, concurrency ${c.executor.concurrency})`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping.abort();
    await this.consumer?.stop().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.webhooks?.close().catch(() => undefined);
  }
}
