/**
 * A replicated Kafka cluster of a test's own: 3 KRaft nodes (broker + controller each) started by
 * `infra/stack up kafka` with TICKWORK_STACK_BROKERS=3 in a stack directory of its own, on ports
 * of its own, so the shared single broker (127.0.0.1:9092) is never touched. The test kills and
 * restarts nodes through the pid files infra/stack keeps, and asks the cluster who leads what.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
// eslint-disable-next-line no-restricted-imports -- the test reads the cluster's view from outside, as an operator would
import { Kafka, logLevel, type Admin } from 'kafkajs';

const ROOT = join(__dirname, '..', '..');
const run = promisify(execFile);

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A base port P below the ephemeral range with P, P+1, P+100, P+101, P+200, P+201 free (infra/stack's layout). */
async function freeBasePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const base = 20_000 + 2 * Math.floor(Math.random() * 5_000);
    const ports = [0, 1, 100, 101, 200, 201].map((d) => base + d);
    if ((await Promise.all(ports.map(canBind))).every(Boolean)) return base;
  }
  throw new Error('no free base port for a 3-node Kafka cluster');
}

export class KafkaCluster {
  readonly nodes = [1, 2, 3] as const;
  private admin: Admin | undefined;

  private constructor(
    readonly dir: string,
    readonly basePort: number,
  ) {}

  /** Starts a fresh cluster under `dir` (wiped first) and waits until every node sees all three. */
  static async start(dir: string): Promise<KafkaCluster> {
    const cluster = new KafkaCluster(dir, await freeBasePort());
    // Nodes a previous, interrupted run left behind (found by infra/stack's pid files), then its data.
    await cluster.stack('down').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    await cluster.stack('up', 'kafka');
    return cluster;
  }

  private env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      TICKWORK_STACK_DIR: this.dir,
      TICKWORK_STACK_BROKERS: '3',
      KAFKA_PORT: String(this.basePort),
      KAFKA_CONTROLLER_PORT: String(this.basePort + 1),
    };
  }

  /** Runs infra/stack on this cluster's directory and ports. */
  async stack(...args: string[]): Promise<string> {
    try {
      const { stdout } = await run('bash', [join(ROOT, 'infra', 'stack'), ...args], {
        env: this.env(),
        cwd: ROOT,
        timeout: 300_000,
      });
      return stdout;
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string; message: string };
      throw new Error(
        `infra/stack ${args.join(' ')} failed: ${err.message}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`,
      );
    }
  }

  port(node: number): number {
    return this.basePort + 100 * (node - 1);
  }

  get brokers(): string {
    return this.nodes.map((n) => `127.0.0.1:${this.port(n)}`).join(',');
  }

  /** The JVM pid of a node, from infra/stack's pid file. */
  pid(node: number): number {
    return Number(readFileSync(join(this.dir, 'run', `kafka-${node}.pid`), 'utf8').trim());
  }

  /** kill -9 of a node: no controlled shutdown, no leadership handed over. */
  kill9(node: number): void {
    process.kill(this.pid(node), 'SIGKILL');
  }

  /** SIGTERM of a node (a controlled shutdown: it hands its leaderships over first). */
  terminate(node: number): void {
    process.kill(this.pid(node), 'SIGTERM');
  }

  alive(node: number): boolean {
    try {
      process.kill(this.pid(node), 0);
      return true;
    } catch {
      return false;
    }
  }

  /** Starts whichever nodes are not running and waits until all three see each other. */
  async restartMissing(): Promise<void> {
    await this.stack('up', 'kafka');
  }

  private async adminClient(): Promise<Admin> {
    if (!this.admin) {
      const admin = new Kafka({
        clientId: 'tickwork-cluster-test',
        brokers: this.brokers.split(','),
        connectionTimeout: 2_000,
        requestTimeout: 5_000,
        retry: { retries: 3, maxRetryTime: 500 },
        logLevel: logLevel.NOTHING,
      }).admin();
      await admin.connect();
      this.admin = admin;
    }
    return this.admin;
  }

  /** Leader, replicas and in-sync replicas of each partition of `topic`. */
  async partitions(
    topic: string,
  ): Promise<{ partition: number; leader: number; replicas: number[]; isr: number[] }[]> {
    try {
      const { topics } = await (await this.adminClient()).fetchTopicMetadata({ topics: [topic] });
      return topics[0]!.partitions
        .map((p) => ({ partition: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr }))
        .sort((a, b) => a.partition - b.partition);
    } catch (e) {
      await this.closeAdmin();
      throw e;
    }
  }

  /** A topic's configs as the brokers report them. */
  async topicConfigs(topic: string, names: string[]): Promise<Record<string, string>> {
    const res = await (
      await this.adminClient()
    ).describeConfigs({
      includeSynonyms: false,
      resources: [{ type: 2 /* TOPIC */, name: topic, configNames: names }],
    });
    return Object.fromEntries(res.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
  }

  /**
   * The active KRaft controller (the quorum leader), from Kafka's own MetadataQuorumCommand: in
   * KRaft the controller id of a Metadata response is a random broker, not the active controller.
   */
  async activeController(): Promise<number> {
    const version = /<kafka\.version>([^<]+)</.exec(
      readFileSync(join(ROOT, 'infra/kafka/pom.xml'), 'utf8'),
    )![1];
    const live = this.nodes.filter((n) => this.alive(n)).map((n) => `127.0.0.1:${this.port(n)}`);
    const { stdout } = await run(
      'java',
      [
        '-Xmx128m',
        `-Dlog4j2.configurationFile=${join(ROOT, 'infra/kafka/log4j2.properties')}`,
        '-Dlog4j2.level=ERROR',
        '-cp',
        `${join(ROOT, 'infra', '.cache', `kafka-${version}`)}/*`,
        'org.apache.kafka.tools.MetadataQuorumCommand',
        '--bootstrap-server',
        live.join(','),
        'describe',
        '--status',
      ],
      { timeout: 60_000 },
    );
    const m = /LeaderId:\s*(\d+)/.exec(stdout);
    if (!m) throw new Error(`no LeaderId in:\n${stdout}`);
    return Number(m[1]);
  }

  /** Committed offsets of `groupId` and end offsets, per partition of `topic`. */
  async offsets(
    groupId: string,
    topic: string,
  ): Promise<{ partition: number; committed: string; end: string }[]> {
    const admin = await this.adminClient();
    const [committed, ends] = await Promise.all([
      admin.fetchOffsets({ groupId, topics: [topic] }),
      admin.fetchTopicOffsets(topic),
    ]);
    const byPartition = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
    return ends.map((e) => ({
      partition: e.partition,
      committed: byPartition.get(e.partition) ?? '-1',
      end: e.high,
    }));
  }

  /** Where records keyed by `keys` are in `topic` (read from the start to the end offsets, by a group of its own). */
  async findKeys(
    topic: string,
    keys: readonly string[],
    timeoutMs = 60_000,
  ): Promise<{ key: string; partition: number; offset: string }[]> {
    const wanted = new Set(keys);
    const found: { key: string; partition: number; offset: string }[] = [];
    const ends = new Map(
      (await (await this.adminClient()).fetchTopicOffsets(topic)).map((e) => [e.partition, BigInt(e.high)]),
    );
    const done = new Set([...ends].filter(([, high]) => high === 0n).map(([p]) => p));
    const consumer = new Kafka({
      clientId: 'tickwork-cluster-test-scan',
      brokers: this.brokers.split(','),
      logLevel: logLevel.NOTHING,
    }).consumer({
      groupId: `tickwork-cluster-test-scan-${Date.now()}`,
    });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        void consumer.run({
          eachMessage: async ({ partition, message }) => {
            const key = message.key?.toString() ?? '';
            if (wanted.has(key)) found.push({ key, partition, offset: message.offset });
            if (BigInt(message.offset) + 1n >= (ends.get(partition) ?? 0n)) done.add(partition);
            if (done.size >= ends.size) {
              clearTimeout(timer);
              resolve();
            }
          },
        });
      });
    } finally {
      await consumer.disconnect().catch(() => undefined);
    }
    return found;
  }

  private async closeAdmin(): Promise<void> {
    const admin = this.admin;
    this.admin = undefined;
    await admin?.disconnect().catch(() => undefined);
  }

  /** Stops every node (infra/stack down, which keeps data) and deletes the directory. */
  async stop(): Promise<void> {
    await this.closeAdmin();
    // Not `down --wipe`: that also drops the registry database of the DATABASE_URL server.
    await this.stack('down').catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
