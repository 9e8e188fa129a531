/**
 * Tickwork, the real product on its full path: jobs stored in PostgreSQL, one scheduler process
 * claims them (outbox, fence) and publishes fire events to Kafka (acks=all), one executor process
 * (concurrency 100) runs them through its ledger and publishes results. The handler is the
 * target, in this bench process: a Kafka topic consumed here, or a no-op webhook receiver here.
 * Lateness = handler start − the fire's `tickwork-scheduled-for` (the nominal time; no jitter).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  DEFAULT_POLICIES,
  nextOccurrenceAfter,
  policiesToWire,
  scheduleToWire,
  shardOf,
  targetToWire,
  type ResultEventsPolicy,
  type Target,
} from '@tickwork/domain';
import { createKafkaBus, type MessageConsumer } from '@tickwork/messaging';
import { createPool, migrate, type Pool } from '@tickwork/store';
import { dueScanMs } from '../due-scan-timer';
import { EXECUTOR_NODE_FLAGS } from '../executor-launch';
import { config } from './config';
import {
  executionOf,
  FAR_AWAY,
  jobKey,
  payloadOf,
  type BenchJob,
  type BenchPayload,
  type Contender,
  type NamedProcess,
  type StageLateness,
} from './contender';
import { dropDatabase, freshDatabase, postgresDurability } from './databases';
import type { Execution } from './lateness';

const SHARDS = 12;
/**
 * Tickwork's documented herd setting, as the peers run with theirs: occurrences due within 10 s
 * are claimed ahead, and each fire is still published at its scheduled time. 10 s covers the
 * claim of the suite's largest herd, stored ~10 s before it is due.
 */
const SUITE_SETTINGS: Record<string, string> = { TICKWORK_LOOKAHEAD_MS: '10000' };
const TENANTS = 20;
const DATABASE = 'tickwork';
/**
 * The jobs' result_events policy: ALL (the product default, a result event per fire: the full
 * path the suite compares) unless BENCH_TICKWORK_RESULT_EVENTS says FAILURES or NONE.
 */
const RESULT_EVENTS = resultEventsOf(process.env.BENCH_TICKWORK_RESULT_EVENTS ?? 'ALL');
const JOB_POLICIES = {
  ...DEFAULT_POLICIES,
  ...(RESULT_EVENTS === 'ALL' ? {} : { resultEvents: RESULT_EVENTS }),
};

function resultEventsOf(raw: string): ResultEventsPolicy {
  if (raw === 'ALL' || raw === 'FAILURES' || raw === 'NONE') return raw;
  throw new Error(`BENCH_TICKWORK_RESULT_EVENTS=${raw} must be ALL, FAILURES or NONE`);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type TickworkTarget = 'kafka' | 'webhook';

export class TickworkContender implements Contender {
  readonly system = 'tickwork' as const;
  readonly version: string;
  readonly label: string;
  readonly settings: string;
  readonly database = { name: DATABASE, jobsTable: 'jobs' };
  durability = 'PostgreSQL; Kafka acks=all';
  pool?: Pool;
  private apps: { name: string; child: ChildProcess; log: string }[] = [];
  private consumer?: MessageConsumer;
  private receiver?: Server;
  private prefix = '';
  private url = '';
  private target?: Target;

  constructor(private readonly targetKind: TickworkTarget) {
    this.version = (
      JSON.parse(readFileSync(join(config.root, 'package.json'), 'utf8')) as { version: string }
    ).version;
    this.label = `Tickwork (${targetKind === 'kafka' ? 'Kafka target' : 'webhook target'})`;
    this.settings = `1 scheduler + 1 executor (concurrency ${config.concurrency}: webhook calls in flight; a Kafka target's messages take no slot and ride the executor's batched produce requests), ${SHARDS} shards, ${describeOverrides()}; full path: outbox, fire event, executor ledger, ${RESULT_EVENTS === 'ALL' ? 'result event' : `result events ${RESULT_EVENTS} (policies.result_events)`}; handler = ${targetKind === 'kafka' ? 'consumer of the target topic' : 'no-op HTTP receiver'} in the bench process`;
  }

  async start(sink: (e: Execution) => void): Promise<void> {
    await this.openStore(sink);
    await this.startApps();
  }

  kafkaTopicPrefix(): string {
    return this.prefix;
  }

  /** A fresh database and topic prefix, and the handler; no apps yet (W1 scans a still store). */
  async openStore(sink: (e: Execution) => void): Promise<void> {
    this.url = await freshDatabase(DATABASE);
    this.durability = `${await postgresDurability(this.url)}; Kafka acks=all`;
    this.pool = createPool(this.url, { max: 4, statementTimeoutMs: 900_000 });
    await migrate(this.pool);
    this.prefix = `bench.suite.${Date.now()}`;
    this.target = await (this.targetKind === 'kafka' ? this.startConsumer(sink) : this.startReceiver(sink));
  }

  async startApps(): Promise<void> {
    const url = this.url;
    const env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: url,
      KAFKA_BROKERS: config.kafkaBrokers.join(','),
      SCHEMA_REGISTRY_URL: config.schemaRegistryUrl,
      TICKWORK_TOPIC_PREFIX: this.prefix,
      TICKWORK_SHARDS: String(SHARDS),
      TICKWORK_EXECUTOR_CONCURRENCY: String(config.concurrency),
      TICKWORK_SCHEDULER_PORT: '0',
      TICKWORK_EXECUTOR_PORT: '0',
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      ...SUITE_SETTINGS,
      ...settingOverrides(),
    };
    // The scheduler provisions the topics; the executor starts once they exist.
    await this.spawnApp('scheduler', env, /holding shards \[\d/);
    await this.spawnApp('executor', env, /assigned fires partitions \[\d/);
  }

  private async spawnApp(name: 'scheduler' | 'executor', env: Record<string, string>, ready: RegExp) {
    const main = join(config.tickworkDist, 'apps', name, 'src', 'main.js');
    // The launch flags of infra/start and docker-compose.yml; BENCH_NODE_FLAGS replaces them.
    const launch = name === 'executor' ? EXECUTOR_NODE_FLAGS : '';
    const flags = (process.env.BENCH_NODE_FLAGS ?? launch).split(' ').filter(Boolean);
    const child = spawn(process.execPath, [...flags, main], {
      env: { ...env, TICKWORK_INSTANCE_ID: `bench-suite-${name}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const app = { name, child, log: '' };
    // BENCH_APP_LOGS=<dir> keeps each app's whole output there, to read after a run.
    const logFile = process.env.BENCH_APP_LOGS ? join(process.env.BENCH_APP_LOGS, `${name}.log`) : undefined;
    const keep = (c: Buffer) => {
      app.log = (app.log + c.toString()).slice(-20_000);
      if (logFile) appendFileSync(logFile, c);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.apps.push(app);
    const deadline = Date.now() + 90_000;
    while (!ready.test(app.log)) {
      if (child.exitCode !== null || Date.now() > deadline)
        throw new Error(`tickwork ${name} did not start:\n${app.log.slice(-3_000)}`);
      await sleep(100);
    }
  }

  private async startConsumer(sink: (e: Execution) => void): Promise<Target> {
    const topic = `${this.prefix}.sink`;
    const bus = createKafkaBus({
      brokers: config.kafkaBrokers,
      clientId: 'bench-suite',
      ssl: false,
      sasl: null,
    });
    const admin = await bus.admin();
    await admin.createTopics([{ name: topic, partitions: 12, replicationFactor: 1, configs: {} }]);
    await admin.disconnect();
    this.consumer = await bus.consumer({
      groupId: `${this.prefix}.handler`,
      topics: [topic],
      fromBeginning: true,
      // Never paused, so the fetch answers as soon as a fire lands: the wait is only idle polling.
      maxWaitTimeMs: 1_000,
      partitionsConsumedConcurrently: 12,
    });
    let assigned = false;
    await this.consumer.start({
      onAssignment: () => void (assigned = true),
      onBatch: async (batch) => {
        const at = Date.now();
        for (const m of batch.messages) {
          const payload = JSON.parse(m.value!.toString()) as BenchPayload;
          const due = Date.parse(m.headers['tickwork-scheduled-for'] ?? '');
          sink(executionOf({ ...payload, due }, at));
          batch.markProcessed(m.offset);
        }
      },
    });
    while (!assigned) await sleep(100);
    return { type: 'kafka', topic, key: null, headers: {} };
  }

  private async startReceiver(sink: (e: Execution) => void): Promise<Target> {
    this.receiver = createServer((req, res) => {
      const at = Date.now();
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const payload = JSON.parse(Buffer.concat(chunks).toString()) as BenchPayload;
        const due = Date.parse(String(req.headers['tickwork-scheduled-for']));
        sink(executionOf({ ...payload, due }, at));
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((resolve) => this.receiver!.listen(0, '127.0.0.1', resolve));
    const { port } = this.receiver.address() as AddressInfo;
    return {
      type: 'webhook',
      url: `http://127.0.0.1:${port}/hook`,
      method: 'POST',
      headers: {},
      timeoutMs: 10_000,
      successStatus: { min: 200, max: 299 },
    };
  }

  /** Stores one-shot jobs with set-based INSERTs of 10,000 rows (arrays unnested server-side). */
  async enqueue(jobs: readonly BenchJob[]): Promise<void> {
    const schedule = JSON.stringify(scheduleToWire({ kind: 'once', at: new Date(0) }));
    const target = JSON.stringify(targetToWire(this.target!));
    const policies = JSON.stringify(policiesToWire(JOB_POLICIES));
    for (let start = 0; start < jobs.length; start += 10_000) {
      const chunk = jobs.slice(start, start + 10_000);
      const ids = chunk.map(jobKey);
      await this.pool!.query(
        `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
         SELECT v.id, 'tenant-' || (v.n % ${TENANTS}), v.shard, 'once', $4::jsonb, 'SCHEDULED', v.at, v.at, $5::jsonb, v.payload, $6::jsonb
           FROM unnest($1::text[], $2::int[], $3::timestamptz[], $7::jsonb[]) WITH ORDINALITY AS v(id, shard, at, payload, n)`,
        [
          ids,
          ids.map((id) => shardOf(id, SHARDS)),
          chunk.map((j) => new Date(j.dueAt)),
          schedule,
          target,
          policies,
          chunk.map((j) => JSON.stringify(payloadOf(j))),
        ],
      );
    }
  }

  /**
   * Background schedules due in a year, generated server-side (the fastest bulk path PostgreSQL
   * has after COPY), two statements at a time. Ids are zero-padded so the primary key grows at
   * its right edge, as time-ordered ids would; the shard is n mod 12 rather than the id's hash:
   * these rows are never claimed.
   */
  async preloadBackground(n: number, from = 0): Promise<void> {
    const schedule = JSON.stringify(scheduleToWire({ kind: 'once', at: new Date(0) }));
    const target = JSON.stringify(targetToWire(this.target!));
    const policies = JSON.stringify(policiesToWire(JOB_POLICIES));
    const payload = JSON.stringify(payloadOf({ run: 0, index: 0, dueAt: 0 }));
    const far = new Date(FAR_AWAY);
    const chunks: [number, number][] = [];
    for (let start = from; start < from + n; start += 250_000)
      chunks.push([start, Math.min(from + n, start + 250_000)]);
    const insert = async (): Promise<void> => {
      for (let chunk = chunks.shift(); chunk; chunk = chunks.shift())
        await this.pool!.query(
          `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
           SELECT 'bg-' || lpad(g::text, 10, '0'), 'tenant-' || (g % ${TENANTS}), g % ${SHARDS}, 'once', $3::jsonb, 'SCHEDULED', $4, $4,
                  $5::jsonb, $7::jsonb, $6::jsonb
             FROM generate_series($1::bigint, $2::bigint - 1) AS g`,
          [chunk[0], chunk[1], schedule, far, target, policies, payload],
        );
    };
    await Promise.all([insert(), insert()]);
    await this.pool!.query('ANALYZE jobs');
  }

  /** Cron jobs on one pattern, first due at their next occurrence. */
  async recurring(n: number, pattern: string, run: number): Promise<void> {
    const expression = pattern;
    const schedule = JSON.stringify(
      scheduleToWire({ kind: 'cron', expression, timeZone: 'UTC', dstGap: 'AUTO', dstRepeat: 'AUTO' }),
    );
    const target = JSON.stringify(targetToWire(this.target!));
    const policies = JSON.stringify(policiesToWire(JOB_POLICIES));
    const first = new Date(
      nextOccurrenceAfter(
        { kind: 'cron', expression, timeZone: 'UTC', dstGap: 'AUTO', dstRepeat: 'AUTO' },
        Date.now() + 1_000,
      )!,
    );
    const ids = Array.from({ length: n }, (_, i) => `cron-r${run}-${i}`);
    await this.pool!.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
       SELECT v.id, 'tenant-' || (v.n % ${TENANTS}), v.shard, 'cron', $3::jsonb, 'SCHEDULED', $4, $4, $5::jsonb,
              jsonb_build_object('r', ${run}, 'i', v.n - 1, 'due', 0, 'pad', repeat('x', 150)), $6::jsonb
         FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS v(id, shard, n)`,
      [ids, ids.map((id) => shardOf(id, SHARDS)), schedule, first, target, policies],
    );
  }

  /**
   * Lateness at each stage of the path, from the store: claimed (fire row written), enqueued
   * (Kafka acknowledged the fire's batch), run started (executor ledger). The handler's own
   * figure is the histogram's.
   */
  async stageLateness(run: number): Promise<StageLateness | undefined> {
    const stage = (column: string) =>
      `percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM ${column} - f.scheduled_for) * 1000),
       percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM ${column} - f.scheduled_for) * 1000)`;
    try {
      const { rows } = await this.pool!.query<{ row: number[] }>(
        `SELECT ARRAY[${stage('f.claimed_at')}, ${stage('b.enqueued_at')}, ${stage('r.started_at')}]::float8[] AS row
           FROM fires f JOIN fire_batches b ON b.batch_id = f.batch_id
           LEFT JOIN job_runs r ON r.job_id = f.job_id AND r.fence_token = f.fence_token
          WHERE f.job_id LIKE $1`,
        [`r${run}-%`],
      );
      const v = rows[0]!.row;
      const at = (i: number) => ({ p50: Math.round(v[2 * i]!), p99: Math.round(v[2 * i + 1]!) });
      return { claimed: at(0), 'enqueued (Kafka ack)': at(1), 'run started (executor)': at(2) };
    } catch {
      // The store's layout is the product's to change; the breakdown is a diagnostic, not a figure.
      return undefined;
    }
  }

  /** Deletes the jobs of a run (W1's due rows, scanned but never meant to fire). */
  async forget(run: number): Promise<void> {
    await this.pool!.query(`DELETE FROM jobs WHERE job_id LIKE $1`, [`r${run}-%`]);
  }

  /** The due-scan of the claim path (tenant walk, then a fair share of due rows), timed and rolled back. */
  dueScanMs(limit: number, runs: number): Promise<number[]> {
    return dueScanMs(this.pool!, SHARDS, limit, runs);
  }

  processes(): NamedProcess[] {
    return this.apps.map((a) => ({ name: `tickwork ${a.name}`, pid: a.child.pid! }));
  }

  async stop(): Promise<void> {
    await this.stopApps();
    await this.consumer?.stop();
    this.consumer = undefined;
    await new Promise<void>((resolve) => (this.receiver ? this.receiver.close(() => resolve()) : resolve()));
    this.receiver = undefined;
    await this.pool?.end();
    this.pool = undefined;
    await dropDatabase(DATABASE);
  }

  async stopApps(): Promise<void> {
    await Promise.all(
      this.apps.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
            child.once('exit', () => {
              clearTimeout(kill);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
    this.apps = [];
  }
}

/** `TICKWORK_*` settings in the driver's environment override the product defaults (BENCH_TICKWORK_ENV=0 ignores them). */
function settingOverrides(): Record<string, string> {
  if (process.env.BENCH_TICKWORK_ENV === '0') return {};
  const skip = new Set([
    'TICKWORK_TOPIC_PREFIX',
    'TICKWORK_SHARDS',
    'TICKWORK_EXECUTOR_CONCURRENCY',
    'TICKWORK_INSTANCE_ID',
  ]);
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] =>
        e[0].startsWith('TICKWORK_') &&
        !/^TICKWORK_(BENCH|TEST)_/.test(e[0]) &&
        !skip.has(e[0]) &&
        e[1] !== undefined,
    ),
  );
}

function describeOverrides(): string {
  const set = Object.entries({ ...SUITE_SETTINGS, ...settingOverrides() }).map(([k, v]) => `${k}=${v}`);
  return set.length ? `product defaults except ${set.join(', ')}` : 'product defaults';
}
