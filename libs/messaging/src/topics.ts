/** Tickwork's topics with explicit per-topic configs, created or corrected at start-up. */
import type { TopicAdmin, TopicSpec } from './ports';

export interface TopicLayout {
  readonly commands: string;
  readonly commandsRejected: string;
  readonly fires: string;
  readonly fireResults: string;
  readonly deadLetters: string;
  readonly retryTiers: readonly { readonly topic: string; readonly delayMs: number }[];
}

const DAY_MS = 86_400_000;

/** The topic specs for a deployment: commands has one partition per shard. */
export function tickworkTopicSpecs(
  layout: TopicLayout,
  opts: { shardCount: number; firesPartitions: number; replicationFactor: number },
): TopicSpec[] {
  const rf = opts.replicationFactor;
  const minIsr = String(Math.min(2, rf));
  const deleteAfter = (days: number) => ({
    'cleanup.policy': 'delete',
    'retention.ms': String(days * DAY_MS),
    'min.insync.replicas': minIsr,
  });
  return [
    { name: layout.commands, partitions: opts.shardCount, replicationFactor: rf, configs: deleteAfter(7) },
    { name: layout.commandsRejected, partitions: 1, replicationFactor: rf, configs: deleteAfter(30) },
    {
      // Compacted by fire key, with a long compaction lag and a time limit: a fire is never
      // compacted away before executors had a day to read it, and the log does not grow forever.
      name: layout.fires,
      partitions: opts.firesPartitions,
      replicationFactor: rf,
      configs: {
        'cleanup.policy': 'compact,delete',
        'min.compaction.lag.ms': String(DAY_MS),
        'retention.ms': String(7 * DAY_MS),
        'min.insync.replicas': minIsr,
      },
    },
    {
      name: layout.fireResults,
      partitions: opts.firesPartitions,
      replicationFactor: rf,
      configs: deleteAfter(7),
    },
    ...layout.retryTiers.map((t) => ({
      name: t.topic,
      partitions: opts.firesPartitions,
      replicationFactor: rf,
      configs: deleteAfter(7),
    })),
    { name: layout.deadLetters, partitions: 1, replicationFactor: rf, configs: deleteAfter(30) },
  ];
}

export class TopicLayoutError extends Error {}

/**
 * Creates missing topics and corrects drifted configs. A commands topic whose partition count
 * differs from the shard count is refused: shards are partitions, so changing it re-homes jobs.
 */
export async function provisionTopics(
  admin: TopicAdmin,
  specs: readonly TopicSpec[],
  commandsTopic: string,
): Promise<{ created: string[]; altered: string[] }> {
  const keys = [...new Set(specs.flatMap((s) => Object.keys(s.configs)))];
  const existing = new Map(
    (
      await admin.describeTopics(
        specs.map((s) => s.name),
        keys,
      )
    ).map((d) => [d.name, d]),
  );
  const missing = specs.filter((s) => !existing.has(s.name));
  if (missing.length > 0) {
    try {
      await admin.createTopics(missing);
    } catch (e) {
      // Another process may have created them at the same moment; re-check below.
      const now = new Set(
        (
          await admin.describeTopics(
            missing.map((s) => s.name),
            [],
          )
        ).map((d) => d.name),
      );
      if (missing.some((m) => !now.has(m.name))) throw e;
    }
  }
  const altered: string[] = [];
  for (const spec of specs) {
    const found = existing.get(spec.name);
    if (!found) continue;
    if (spec.name === commandsTopic && found.partitions !== spec.partitions) {
      throw new TopicLayoutError(
        `topic ${spec.name} has ${found.partitions} partitions but TICKWORK_SHARDS=${spec.partitions}; shards are its partitions, so they must match`,
      );
    }
    const drift = Object.entries(spec.configs).filter(([k, v]) => found.configs[k] !== v);
    if (drift.length > 0) {
      await admin.alterTopicConfigs(spec.name, spec.configs);
      altered.push(spec.name);
    }
  }
  return { created: missing.map((m) => m.name), altered };
}
