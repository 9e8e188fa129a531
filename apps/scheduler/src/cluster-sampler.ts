/**
 * Samples the cluster-wide gauges on a timer: due backlog and outbox per shard, shards without a
 * live lease (PostgreSQL), and consumer lag per group and partition (Kafka admin API). Every
 * scheduler samples every shard, not only its own: the backlog of a shard whose owner died is
 * exactly what must stay visible. Dashboards take max() over instances.
 */
import type { TickworkConfig } from '@tickwork/config';
import type { TopicAdmin } from '@tickwork/messaging';
import type { LazyKafkaAdmin } from '@tickwork/runtime';
import type { ClusterStatsRepository } from '@tickwork/store';
import { ClusterGauges, type ClusterSample, type Telemetry } from '@tickwork/telemetry';
import type { SchedulerReports } from './scheduler-reports';

export interface LagTarget {
  readonly group: string;
  readonly topics: readonly string[];
}

export interface ClusterSamplerOptions {
  readonly shardCount: number;
  readonly everyMs: number;
  readonly lag: readonly LagTarget[];
  readonly onError: (what: string, error: Error) => void;
}

/** Feeds ClusterGauges from the database and the Kafka admin API on a timer. */
export class ClusterSampler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly stats: ClusterStatsRepository,
    private readonly admin: () => Promise<TopicAdmin>,
    private readonly gauges: ClusterGauges,
    private readonly opts: ClusterSamplerOptions,
  ) {}

  /** Samples now, then every `everyMs` (a sample still running is not overlapped). */
  start(): void {
    const tick = () => {
      this.running ??= this.sample().finally(() => (this.running = undefined));
    };
    tick();
    this.timer = setInterval(tick, this.opts.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** One sample; each part that fails keeps its previous value and is reported. */
  async sample(): Promise<void> {
    const n = this.opts.shardCount;
    const part = async <T>(what: string, read: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await read();
      } catch (e) {
        this.opts.onError(what, e as Error);
        return undefined;
      }
    };
    const [backlog, outbox, unownedShards, lag] = await Promise.all([
      part('due backlog', () => this.stats.dueBacklog(n)),
      part('outbox', () => this.stats.outbox(n)),
      part('shard leases', () => this.stats.unownedShards(n)),
      part('consumer lag', () => this.consumerLag()),
    ]);
    const sample: ClusterSample = {
      ...(backlog ? { backlog } : {}),
      ...(outbox ? { outbox } : {}),
      ...(unownedShards !== undefined ? { unownedShards } : {}),
      ...(lag ? { lag } : {}),
    };
    this.gauges.update(sample);
  }

  private async consumerLag(): Promise<NonNullable<ClusterSample['lag']>> {
    const admin = await this.admin();
    const out: { group: string; topic: string; partition: number; lag: number }[] = [];
    for (const target of this.opts.lag) {
      for (const topic of target.topics) {
        for (const p of await admin.groupLag(target.group, topic)) {
          // A partition the group never committed counts from offset 0 (Tickwork's consumers of
          // fires start from the earliest offset): a group that is stuck before its first commit shows.
          const committed = Math.max(0, Number(p.committed));
          out.push({
            group: target.group,
            topic,
            partition: p.partition,
            lag: Math.max(0, Number(p.end) - committed),
          });
        }
      }
    }
    return out;
  }
}

/**
 * The sampler of this scheduler's cluster gauges (not started): every shard's backlog and outbox,
 * and the lag of the scheduler, executor and retry groups.
 */
export function clusterSamplerOf(
  config: TickworkConfig,
  stats: ClusterStatsRepository,
  kafkaAdmin: LazyKafkaAdmin,
  telemetry: Telemetry,
  { metrics, log }: SchedulerReports,
): ClusterSampler {
  return new ClusterSampler(stats, () => kafkaAdmin.get(), new ClusterGauges(), {
    shardCount: config.shardCount,
    everyMs: telemetry.config.clusterSampleMs,
    lag: [
      { group: config.scheduler.groupId, topics: [config.topics.commands] },
      { group: config.executor.groupId, topics: [config.topics.fires] },
      { group: `${config.executor.groupId}.retry`, topics: config.topics.retryTiers.map((t) => t.topic) },
    ],
    onError: (what, e) => {
      metrics.error('cluster-sampler');
      log.warn(`sampling ${what} for the cluster gauges failed: ${e.message}`);
      // A broken admin connection is dropped, so the next sample opens a fresh one.
      if (what === 'consumer lag') void kafkaAdmin.close();
    },
  });
}
