/** Gauges of the cluster-wide state: due backlog, outbox, unowned shards, consumer lag. */
import { Attr } from '../attributes';
import { defineMetric, gaugeOf, meter, seconds } from './spec';

/** The cluster gauges' metrics (the scheduler exports them from its sampler). */
export const CLUSTER_METRICS = {
  dueBacklog: defineMetric({
    name: 'tickwork.due_backlog',
    kind: 'gauge',
    help: 'Jobs due (next_run_at ≤ now) and not yet claimed, per shard',
  }),
  dueOldestAge: defineMetric({
    name: 'tickwork.due_oldest_age_seconds',
    kind: 'gauge',
    unit: 's',
    help: 'How long the oldest due, unclaimed job of each shard has been due',
  }),
  outboxPending: defineMetric({
    name: 'tickwork.outbox.pending',
    kind: 'gauge',
    help: 'Fires claimed but not yet confirmed on Kafka, per shard',
  }),
  outboxOldestAge: defineMetric({
    name: 'tickwork.outbox.oldest_age_seconds',
    kind: 'gauge',
    unit: 's',
    help: 'How long the most overdue outbox batch of each shard has been due on Kafka',
  }),
  shardsUnowned: defineMetric({
    name: 'tickwork.shards.unowned',
    kind: 'gauge',
    help: 'Shards with no live lease: nobody claims their due jobs',
  }),
  consumerLag: defineMetric({
    name: 'tickwork.kafka.consumer_lag',
    kind: 'gauge',
    help: 'Messages not yet committed by a consumer group, per topic partition',
  }),
  clusterSampleAge: defineMetric({
    name: 'tickwork.cluster_sample.age_seconds',
    kind: 'gauge',
    unit: 's',
    help: 'Seconds since the cluster gauges were last sampled',
  }),
} as const;

/** One sample of the cluster-wide state (from the database and the Kafka admin API). */
export interface ClusterSample {
  /** Every shard, with its due backlog (jobs with next_run_at ≤ now, not yet claimed). */
  readonly backlog?: readonly {
    readonly shard: number;
    readonly due: number;
    readonly oldestDueAgeSeconds: number;
  }[];
  /** Every shard, with its outbox (fires claimed, not yet confirmed on Kafka). */
  readonly outbox?: readonly {
    readonly shard: number;
    readonly pending: number;
    readonly oldestAgeSeconds: number;
  }[];
  readonly unownedShards?: number;
  readonly lag?: readonly {
    readonly group: string;
    readonly topic: string;
    readonly partition: number;
    readonly lag: number;
  }[];
}

/**
 * Gauges of the cluster-wide state, reported from the latest sample (the sampler runs on a timer;
 * a scrape never waits for a query). Each part keeps its last value until a newer one replaces it.
 */
export class ClusterGauges {
  private readonly m = meter();
  private sample: Required<ClusterSample> = { backlog: [], outbox: [], unownedShards: 0, lag: [] };
  private hasUnowned = false;
  private sampledAt: number | undefined;

  constructor(private readonly now: () => number = Date.now) {
    const m = this.m;
    gaugeOf(m, CLUSTER_METRICS.dueBacklog).addCallback((r) => {
      for (const b of this.sample.backlog) r.observe(b.due, { [Attr.ShardLabel]: String(b.shard) });
    });
    gaugeOf(m, CLUSTER_METRICS.dueOldestAge).addCallback((r) => {
      for (const b of this.sample.backlog)
        r.observe(b.oldestDueAgeSeconds, { [Attr.ShardLabel]: String(b.shard) });
    });
    gaugeOf(m, CLUSTER_METRICS.outboxPending).addCallback((r) => {
      for (const o of this.sample.outbox) r.observe(o.pending, { [Attr.ShardLabel]: String(o.shard) });
    });
    gaugeOf(m, CLUSTER_METRICS.outboxOldestAge).addCallback((r) => {
      for (const o of this.sample.outbox)
        r.observe(o.oldestAgeSeconds, { [Attr.ShardLabel]: String(o.shard) });
    });
    gaugeOf(m, CLUSTER_METRICS.shardsUnowned).addCallback((r) => {
      if (this.hasUnowned) r.observe(this.sample.unownedShards);
    });
    gaugeOf(m, CLUSTER_METRICS.consumerLag).addCallback((r) => {
      for (const l of this.sample.lag)
        r.observe(l.lag, {
          [Attr.Group]: l.group,
          [Attr.Topic]: l.topic,
          [Attr.Partition]: String(l.partition),
        });
    });
    gaugeOf(m, CLUSTER_METRICS.clusterSampleAge).addCallback((r) => {
      if (this.sampledAt !== undefined) r.observe(seconds(this.now() - this.sampledAt));
    });
  }

  /** Replaces the parts of the sample that are given. */
  update(sample: ClusterSample): void {
    this.sample = {
      backlog: sample.backlog ?? this.sample.backlog,
      outbox: sample.outbox ?? this.sample.outbox,
      unownedShards: sample.unownedShards ?? this.sample.unownedShards,
      lag: sample.lag ?? this.sample.lag,
    };
    if (sample.unownedShards !== undefined) this.hasUnowned = true;
    this.sampledAt = this.now();
  }
}
