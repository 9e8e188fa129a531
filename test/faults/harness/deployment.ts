/**
 * One scenario's Tickwork deployment on the private stack: its own database and topic prefix,
 * several schedulers and executors (and an API when asked), the recording receiver, the workload
 * stored, and the harness's own connection to the database. Apps run with the production defaults
 * (leases, session timeouts, shards, partitions, tick); only what a local run needs is set: the
 * receiver on loopback is allowed, and the addresses of the private stack.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type TickworkConfig } from '@tickwork/config';
import { shardOf } from '@tickwork/domain';
import { Pool } from 'pg';
import { FaultApp, type AppName, type ExitRecord } from './apps';
import type { Log } from './log';
import { allocatePort } from './ports';
import { readLedger, type Ledger } from './oracle';
import type { PrivateStack } from './private-stack';
import { RecordingReceiver, type ReceiverBehaviour } from './receiver';
import { waitUpTo } from './wait';
import type { Occurrence, Workload } from './workload';

export interface DeploymentOptions {
  /** Short name, used in the database name, the topic prefix and the log directory. */
  readonly label: string;
  readonly schedulers: number;
  readonly executors: number;
  /** Start an API too, with this TICKWORK_TENANTS document. */
  readonly apiTenants?: string;
  readonly behaviour?: ReceiverBehaviour;
  /** Extra environment for every app. */
  readonly env?: Record<string, string>;
}

/** Something that happened during the run, for the report's timeline. */
export interface Mark {
  readonly at: number;
  readonly what: string;
}

export class Deployment {
  readonly schedulers: FaultApp[] = [];
  readonly executors: FaultApp[] = [];
  api: FaultApp | undefined;
  readonly marks: Mark[] = [];
  /** Every app process that ever ran, including replaced ones. */
  private readonly everyApp: FaultApp[] = [];
  readonly config: TickworkConfig;

  private constructor(
    readonly stack: PrivateStack,
    readonly opts: DeploymentOptions,
    readonly database: string,
    readonly topicPrefix: string,
    readonly pool: Pool,
    readonly receiver: RecordingReceiver,
    readonly logDir: string,
    private readonly log: Log,
  ) {
    this.config = loadConfig(this.env());
  }

  /** Creates the database, starts the receiver and the apps, and waits until every app is ready. */
  static async start(
    stack: PrivateStack,
    opts: DeploymentOptions,
    runDir: string,
    log: Log,
  ): Promise<Deployment> {
    const suffix = Math.random().toString(36).slice(2, 8);
    const database = `faults_${opts.label.replace(/[^a-z0-9]/gi, '_')}_${suffix}`.toLowerCase();
    const topicPrefix = `faults.${opts.label}.${suffix}`;
    const admin = new Pool({ connectionString: stack.postgres.url(), max: 1 });
    admin.on('error', () => undefined);
    await admin.query(`CREATE DATABASE "${database}"`);
    await admin.end();
    const pool = new Pool({
      connectionString: stack.postgres.url(database),
      max: 4,
      connectionTimeoutMillis: 3_000,
    });
    // The harness's connections die with a PostgreSQL restart too: the pool drops them and reconnects.
    pool.on('error', () => undefined);
    const receiver = await new RecordingReceiver().start();
    if (opts.behaviour) receiver.behaviour = opts.behaviour;
    const logDir = join(runDir, opts.label);
    mkdirSync(logDir, { recursive: true });
    const d = new Deployment(stack, opts, database, topicPrefix, pool, receiver, logDir, log);
    // All at once, as a deploy would: migrations take an advisory lock, topic creation tolerates a race.
    await Promise.all([
      ...Array.from({ length: opts.schedulers }, () => d.add('scheduler')),
      ...Array.from({ length: opts.executors }, () => d.add('executor')),
      ...(opts.apiTenants !== undefined ? [d.add('api')] : []),
    ]);
    log(
      `deployment up: ${d.schedulers.map((s) => s.id).join(', ')}, ${d.executors.map((e) => e.id).join(', ')}${d.api ? `, ${d.api.id}` : ''} (database ${database}, logs ${logDir})`,
    );
    return d;
  }

  /** The environment of every app of this deployment. */
  env(): Record<string, string> {
    return {
      DATABASE_URL: this.stack.postgres.url(this.database),
      KAFKA_BROKERS: this.stack.kafka.brokers,
      SCHEMA_REGISTRY_URL: this.stack.registry.url,
      TICKWORK_TOPIC_PREFIX: this.topicPrefix,
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      ...(this.opts.apiTenants !== undefined
        ? { TICKWORK_TENANTS: this.opts.apiTenants, TICKWORK_GRPC_PORT: String(this.grpcPort) }
        : {}),
      ...this.opts.env,
    };
  }

  private grpcPort = 0;

  /** Starts one more app of `name` (on `port`, e.g. a restart of the same instance) and waits until it is ready. */
  async add(name: AppName, port?: number): Promise<FaultApp> {
    if (name === 'api' && this.grpcPort === 0) this.grpcPort = await allocatePort();
    const app = FaultApp.start(name, this.env(), port ?? (await allocatePort()), this.logDir);
    this.everyApp.push(app);
    if (name === 'scheduler') this.schedulers.push(app);
    else if (name === 'executor') this.executors.push(app);
    else this.api = app;
    await app.ready();
    return app;
  }

  /** Starts `app` again on its port (same instance id) in its place; resolves once it is ready. */
  async restart(app: FaultApp, waitReady = true): Promise<FaultApp> {
    const list =
      app.name === 'scheduler' ? this.schedulers : app.name === 'executor' ? this.executors : undefined;
    const again = FaultApp.start(app.name, this.env(), app.port, this.logDir);
    this.everyApp.push(again);
    if (list) list[list.indexOf(app)] = again;
    else this.api = again;
    if (waitReady) await again.ready();
    return again;
  }

  get grpcAddress(): string {
    return `127.0.0.1:${this.grpcPort}`;
  }

  mark(what: string, at = Date.now()): number {
    this.marks.push({ at, what });
    this.log(what);
    return at;
  }

  /** Exits the suite did not ask for: crashes. */
  crashes(): ExitRecord[] {
    return this.everyApp.flatMap((a) => (a.exit && !a.exit.expected ? [a.exit] : []));
  }

  /** The fires partition of a job (the fires topic is keyed by job id under Kafka's default partitioner). */
  partitionOf = (jobId: string): number => shardOf(jobId, this.config.firesPartitions);

  /** Stores the workload's jobs with the receiver as their target. */
  async seed(workload: Workload): Promise<void> {
    await workload.seed(this.pool, this.receiver.url());
  }

  /**
   * Waits (at most `capMs`) until every expected occurrence took effect at the receiver or is
   * accounted for in the ledger (skipped by policy, dead-lettered): retries and late fires finish
   * before the oracle judges. Returns how long it waited.
   */
  async drain(expected: readonly Occurrence[], capMs: number): Promise<number> {
    const t0 = Date.now();
    let pending = [...expected];
    let lastLedgerCheck = 0;
    await waitUpTo(
      async () => {
        // The receiver is in memory: keep only what has no effect yet (by the scheduled-for header).
        const delivered = new Set<string>();
        for (const [webhookId, calls] of this.receiver.byWebhookId) {
          const c = calls[0]!;
          if (this.receiver.effects(webhookId).length > 0) delivered.add(`${c.jobId}@${c.scheduledFor}`);
        }
        pending = pending.filter((o) => !delivered.has(`${o.jobId}@${o.nominal}`));
        if (pending.length === 0) return true;
        if (Date.now() - lastLedgerCheck > 2_000) {
          lastLedgerCheck = Date.now();
          const from = Math.min(...pending.map((o) => o.nominal));
          const to = Math.max(...pending.map((o) => o.nominal));
          const ledger: Ledger | undefined = await readLedger(this.pool, from, to).catch(() => undefined);
          if (ledger) {
            pending = pending.filter((o) => {
              const fire = ledger.fires.get(`${o.jobId}@${o.nominal}`);
              const run = fire ? ledger.runs.get(`${fire.job_id}:${fire.fence_token}`) : undefined;
              const skipped = (ledger.skips.get(o.jobId) ?? []).some(
                (s) => s.first_nominal.getTime() <= o.nominal && o.nominal <= s.last_nominal.getTime(),
              );
              return !skipped && run?.status !== 'DEAD_LETTERED';
            });
          }
        }
        return pending.length === 0 ? true : undefined;
      },
      capMs,
      250,
    );
    const waited = Date.now() - t0;
    this.log(
      pending.length === 0
        ? `drained in ${(waited / 1000).toFixed(1)} s`
        : `drain gave up after ${(waited / 1000).toFixed(1)} s with ${pending.length} occurrences without effect`,
    );
    return waited;
  }

  /** Stops every app (waking frozen ones first), the receiver, and drops the database unless FAULTS_KEEP_DB is set. */
  async stop(): Promise<void> {
    await Promise.allSettled(this.everyApp.map((a) => a.stop(30_000)));
    await this.receiver.stop();
    await this.pool.end().catch(() => undefined);
    if (process.env.FAULTS_KEEP_DB) return;
    const admin = new Pool({ connectionString: this.stack.postgres.url(), max: 1 });
    admin.on('error', () => undefined);
    await admin.query(`DROP DATABASE IF EXISTS "${this.database}" WITH (FORCE)`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  }
}
