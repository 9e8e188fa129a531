/** Tickwork's topics with explicit per-topic configs, created or corrected at start-up. */
import type { TopicAdmin, TopicDescription, TopicSpec } from './ports';
import { replicationLayoutProblems } from './replication';

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
  opts: { shardCount: number; firesPartitions: number; replicationFactor: number; minInsyncReplicas: number },
): TopicSpec[] {
  const rf = opts.replicationFactor;
  // Every topic carries the durability settings itself rather than trusting the brokers' defaults
  // (replication.ts says which layouts keep an acknowledged fire).
  const durability = {
    'min.insync.replicas': String(opts.minInsyncReplicas),
    'unclean.leader.election.enable': 'false',
  };
  const deleteAfter = (days: number) => ({
    'cleanup.policy': 'delete',
    'retention.ms': String(days * DAY_MS),
    ...durability,
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
        ...durability,
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

/** An existing topic is refused when it has fewer replicas than asked, or is a commands topic of another shard count. */
function refuseExisting(found: TopicDescription, specs: readonly TopicSpec[], commandsTopic: string): void {
  const spec = specs.find((s) => s.name === found.name);
  if (!spec) return;
  if (found.replicationFactor < spec.replicationFactor) {
    throw new TopicLayoutError(
      `topic ${spec.name} has ${found.replicationFactor} replicas per partition but TICKWORK_TOPIC_REPLICATION=${spec.replicationFactor}; a config change cannot add replicas: reassign its partitions (kafka-reassign-partitions) first`,
    );
  }
  if (spec.name === commandsTopic && found.partitions !== spec.partitions) {
    throw new TopicLayoutError(
      `topic ${spec.name} has ${found.partitions} partitions but TICKWORK_SHARDS=${spec.partitions}; shards are its partitions, so they must match`,
    );
  }
}

function refuseLayout(problems: ReadonlySet<string>): void {
  if (problems.size > 0)
    throw new TopicLayoutError(
      `refusing to provision Tickwork's topics (TICKWORK_TOPIC_REPLICATION, TICKWORK_TOPIC_MIN_ISR): ${[...problems].join('; ')}`,
    );
}

/**
 * Creates missing topics and corrects drifted configs. Refused, before anything is changed: a
 * replication layout that would lose acknowledged fires on this cluster (replication.ts), an
 * existing topic with fewer replicas than asked for (config cannot add replicas: that is a
 * partition reassignment), and a commands topic whose partition count differs from the shard
 * count (shards are partitions, so changing it re-homes jobs). Warnings go to `warn`.
 */
export async function provisionTopics(
  admin: TopicAdmin,
  specs: readonly TopicSpec[],
  commandsTopic: string,
  warn: (message: string) => void = () => undefined,
): Promise<{ created: string[]; altered: string[] }> {
  const layoutProblems = new Set<string>();
  const layoutWarnings = new Set<string>();
  for (const spec of specs) {
    const { problems, warnings } = replicationLayoutProblems({
      replicationFactor: spec.replicationFactor,
      minInsyncReplicas: Number(spec.configs['min.insync.replicas'] ?? '1'),
    });
    for (const p of problems) layoutProblems.add(p);
    for (const w of warnings) layoutWarnings.add(w);
  }
  refuseLayout(layoutProblems);
  for (const w of layoutWarnings) warn(`topic layout: ${w}`);
  const keys = [...new Set(specs.flatMap((s) => Object.keys(s.configs)))];
  const existing = new Map(
    (
      await admin.describeTopics(
        specs.map((s) => s.name),
        keys,
      )
    ).map((d) => [d.name, d]),
  );
  for (const found of existing.values()) refuseExisting(found, specs, commandsTopic);
  const missing = specs.filter((s) => !existing.has(s.name));
  if (missing.length > 0) {
    // Only when creating: a broker that is down is not counted, and an app restarting during a
    // broker outage must still start on topics that exist.
    const brokers = await admin.brokerCount();
    const short = new Set(
      missing.flatMap(
        (s) =>
          replicationLayoutProblems({
            replicationFactor: s.replicationFactor,
            minInsyncReplicas: Number(s.configs['min.insync.replicas'] ?? '1'),
            brokers,
          }).problems,
      ),
    );
    refuseLayout(short);
    try {
      await admin.createTopics(missing);
    } catch (e) {
      // Another process may have created them at the same moment; re-check below.
      const now = await admin.describeTopics(
        missing.map((s) => s.name),
        [],
      );
      if (missing.some((m) => !now.some((d) => d.name === m.name))) throw e;
    }
    // A topic another process created first (kafkajs reports "already exists" as success, and a
    // broker's metadata may not have listed it a moment ago) is checked and corrected like any.
    for (const found of await admin.describeTopics(
      missing.map((s) => s.name),
      keys,
    )) {
      refuseExisting(found, specs, commandsTopic);
      existing.set(found.name, found);
    }
  }
  const altered: string[] = [];
  for (const spec of specs) {
    const found = existing.get(spec.name);
    if (!found) continue;
    const drift = Object.entries(spec.configs).filter(([k, v]) => found.configs[k] !== v);
    if (drift.length > 0) {
      await admin.alterTopicConfigs(spec.name, spec.configs);
      altered.push(spec.name);
    }
  }
  return { created: missing.map((m) => m.name), altered };
}
