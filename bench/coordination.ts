/**
 * npm run bench:coordination — what running more instances costs (README "Running at scale").
 *
 * On two cores throughput cannot grow with instances, so this measures what can be measured: the
 * coordination cost. For each layout (schedulers × executors) it runs a steady load of interval
 * jobs with a Kafka target (BENCH_RATE fires/s, default 400) for BENCH_WINDOW_S seconds (60) and
 * reports:
 * - CPU-seconds per 1,000 fires of the schedulers, of the executors and of their PostgreSQL
 *   sessions (from /proc: the processes' own time, not the box's, so other load shifts it less);
 * - claim conflicts: claims fenced out, epoch changes, self-fences and rebalances (the schedulers'
 *   counters), and duplicate fire deliveries the executors dropped;
 * - lateness (start − scheduled) over the window;
 * - handoff: one scheduler, then one executor, is stopped gracefully (a rolling deploy's step):
 *   the time until every shard is held again, and the worst lateness of fires due in the 15 s after.
 * Writes bench/results/coordination-<date>.{json,md}.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname, loadavg } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_POLICIES, policiesToWire, scheduleToWire, shardOf, targetToWire } from '@tickwork/domain';
import { createKafkaBus } from '@tickwork/messaging';
import { createPool, ensureDatabase, migrate, type Pool } from '@tickwork/store';
import { EXECUTOR_NODE_FLAGS } from './executor-launch';
import { boxSpeedMs, describeBoxSpeed } from './box-speed';
import { cpuTicks } from './suite/sampler';

const RATE = Number(process.env.BENCH_RATE ?? 400);
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 60);
const EVERY_MS = 10_000;
const SHARDS = Number(process.env.BENCH_SHARDS ?? 12);
const LAYOUTS = (process.env.BENCH_LAYOUTS ?? '1x1,2x1,4x1,1x2,1x4,2x2').split(',').map((l) => {
  const [s, e] = l.split('x').map(Number);
  if (!(s! >= 1 && e! >= 1)) throw new Error(`BENCH_LAYOUTS: "${l}" is not <schedulers>x<executors>`);
  return { schedulers: s!, executors: e! };
});
const BROKERS = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
const REGISTRY = process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7';
const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
// Compiled to <out>/bench/coordination.js: the apps are built beside it, the results go to the repository.
const OUT = join(__dirname, '..');
const ROOT = process.cwd();
const stamp = new Date().toISOString().replace(/[:.]/g, '-');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const round2 = (x: number) => Math.round(x * 100) / 100;

interface App {
  readonly name: string;
  readonly kind: 'scheduler' | 'executor';
  readonly child: ChildProcess;
  readonly port: number;
  log(): string;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function startApp(
  kind: 'scheduler' | 'executor',
  name: string,
  env: Record<string, string>,
): Promise<App> {
  const port = await freePort();
  const flags = kind === 'executor' ? EXECUTOR_NODE_FLAGS.split(' ').filter(Boolean) : [];
  const child = spawn(process.execPath, [...flags, join(OUT, 'apps', kind, 'src', 'main.js')], {
    env: {
      ...env,
      TICKWORK_INSTANCE_ID: name,
      ...(kind === 'scheduler' ? { TICKWORK_SCHEDULER_PORT: String(port) } : {}),
      ...(kind === 'executor'
        ? { TICKWORK_EXECUTOR_PORT: String(port), TICKWORK_EXECUTOR_MEMBER_NAME: name }
        : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (c: Buffer) => (log = (log + c.toString()).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { name, kind, child, port, log: () => log };
}

async function stop(app: App): Promise<void> {
  if (app.child.exitCode !== null) return;
  const exited = new Promise((r) => app.child.once('exit', r));
  app.child.kill('SIGTERM');
  await Promise.race([exited, sleep(30_000)]);
  if (app.child.exitCode === null) app.child.kill('SIGKILL');
}

/** Sums the samples of the named counters in an app's Prometheus text (all label sets). */
async function counters(app: App, names: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  try {
    const text = await (await fetch(`http://127.0.0.1:${app.port}/metrics`)).text();
    for (const line of text.split('\n')) {
      const m = /^([a-z_]+)(?:\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
      if (m && m[1]! in out) out[m[1]!] = out[m[1]!]! + Number(m[2]);
    }
  } catch {
    // A stopped app's counters are read as zero.
  }
  return out;
}

const SCHEDULER_COUNTERS = [
  'tickwork_fires_claimed_total',
  'tickwork_claims_fenced_out_total',
  'tickwork_scheduler_epoch_changes_total',
  'tickwork_scheduler_self_fences_total',
  'tickwork_scheduler_rebalances_total',
] as const;
const EXECUTOR_COUNTERS = ['tickwork_fires_executed_total', 'tickwork_fires_duplicates_total'] as const;

async function sumCounters(apps: readonly App[], names: readonly string[]): Promise<Record<string, number>> {
  const all = await Promise.all(apps.map((a) => counters(a, names)));
  return Object.fromEntries(names.map((n) => [n, all.reduce((s, c) => s + c[n]!, 0)]));
}

/** CPU ticks of this database's PostgreSQL sessions, by backend pid. */
async function pgTicks(pool: Pool, db: string): Promise<Map<number, number>> {
  const { rows } = await pool.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [db],
  );
  return new Map(rows.map((r) => [r.pid, cpuTicks(r.pid)] as const).filter(([, t]) => Number.isFinite(t)));
}

/** Ticks used between two readings; a session that started in between counts from zero. */
function pgDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, t] of after) sum += t - (before.get(pid) ?? 0);
  return sum;
}

function boxBusyTicks(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  return f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + (f[7] ?? 0);
}

/** Loads RATE × EVERY_MS/1000 interval jobs, their first occurrences spread evenly over one interval from `base`. */
async function load(pool: Pool, base: number, topic: string): Promise<number> {
  const n = Math.round((RATE * EVERY_MS) / 1000);
  const target = JSON.stringify(targetToWire({ type: 'kafka', topic, key: null, headers: {} }));
  const pol = JSON.stringify(policiesToWire(DEFAULT_POLICIES));
  for (let start = 0; start < n; start += 5_000) {
    const ids: string[] = [];
    const shards: number[] = [];
    const schedules: string[] = [];
    const at: string[] = [];
    for (let i = start; i < Math.min(n, start + 5_000); i++) {
      const id = `coord-${i}`;
      const anchor = new Date(base + Math.floor((i * EVERY_MS) / n));
      ids.push(id);
      shards.push(shardOf(id, SHARDS));
      schedules.push(JSON.stringify(scheduleToWire({ kind: 'interval', everyMs: EVERY_MS, anchor })));
      at.push(anchor.toISOString());
    }
    await pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
       SELECT v.id, 'coord-' || (v.shard % 4), v.shard, 'interval', v.schedule::jsonb, 'SCHEDULED', v.at, v.at, $5::jsonb, '{"bench":true}'::jsonb, $6::jsonb
         FROM unnest($1::text[], $2::int[], $3::text[], $4::timestamptz[]) AS v(id, shard, schedule, at)`,
      [ids, shards, schedules, at, target, pol],
    );
  }
  return n;
}

interface Handoff {
  readonly stopped: string;
  /** From SIGTERM until every shard is leased by a live scheduler (schedulers only). */
  readonly shardsHeldAgainMs: number | null;
  /** Worst start lateness of fires due in the 15 s after the stop. */
  readonly maxLatenessAfterMs: number;
  readonly p99LatenessAfterMs: number;
}

interface LayoutResult {
  readonly schedulers: number;
  readonly executors: number;
  readonly fires: number;
  readonly firesPerSec: number;
  readonly cpuSecondsPer1000Fires: {
    readonly schedulers: number;
    readonly executors: number;
    readonly postgres: number;
    readonly total: number;
    readonly box: number;
  };
  readonly lateness: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number };
  readonly conflicts: Record<string, number>;
  readonly handoffs: Handoff[];
  readonly loadAverage: number;
}

async function lateness(pool: Pool, from: number, to: number): Promise<number[]> {
  const { rows } = await pool.query<{ late: number }>(
    `SELECT (extract(epoch FROM started_at - scheduled_for) * 1000)::float8 AS late
       FROM job_runs WHERE scheduled_for >= $1 AND scheduled_for < $2 AND started_at IS NOT NULL`,
    [new Date(from), new Date(to)],
  );
  return rows.map((r) => Number(r.late)).sort((a, b) => a - b);
}

async function waitFor(what: string, check: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function runLayout(schedulers: number, executors: number): Promise<LayoutResult> {
  const id = Date.now();
  const dbName = `tickwork_bench_coord_${id}`;
  const databaseUrl = adminUrl.replace(/\/[^/]*$/, `/${dbName}`);
  const prefix = `bench.coord.${id}`;
  await ensureDatabase(databaseUrl);
  const pool = createPool(databaseUrl, { max: 4, statementTimeoutMs: 600_000 });
  const apps: App[] = [];
  try {
    await migrate(pool);
    const bus = createKafkaBus({
      brokers: BROKERS.split(','),
      clientId: 'tickwork-bench',
      ssl: false,
      sasl: null,
    });
    const admin = await bus.admin();
    const sink = `${prefix}.sink`;
    await admin.createTopics([
      { name: sink, partitions: 12, replicationFactor: 1, configs: { 'retention.ms': '600000' } },
    ]);
    await admin.disconnect();
    const base = Date.now() + 30_000;
    await load(pool, base, sink);
    await pool.query('VACUUM (ANALYZE) jobs');
    const env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: BROKERS,
      SCHEMA_REGISTRY_URL: REGISTRY,
      TICKWORK_TOPIC_PREFIX: prefix,
      TICKWORK_SHARDS: String(SHARDS),
      TICKWORK_RUN_PURGE_INTERVAL: '0',
      TICKWORK_LOG_LEVEL: 'warn',
    };
    for (let i = 0; i < schedulers; i++) apps.push(await startApp('scheduler', `coord-s${i}`, env));
    for (let i = 0; i < executors; i++) apps.push(await startApp('executor', `coord-e${i}`, env));
    const ofKind = (k: App['kind']) => apps.filter((a) => a.kind === k && a.child.exitCode === null);
    const crashed = () => apps.find((a) => a.child.exitCode !== null);
    // Warm: every shard held, fires flowing, and 10 s of steady state.
    await waitFor(
      'every shard leased and fires started',
      async () => {
        const bad = crashed();
        if (bad) throw new Error(`${bad.name} exited:\n${bad.log()}`);
        const { rows } = await pool.query<{ held: number; ran: number }>(
          `SELECT (SELECT count(*) FROM shard_leases WHERE owner IS NOT NULL AND expires_at > now())::int AS held,
                  (SELECT count(*) FROM job_runs WHERE started_at > now() - interval '2 seconds')::int AS ran`,
        );
        return rows[0]!.held >= SHARDS && rows[0]!.ran > 0;
      },
      120_000,
    );
    await sleep(10_000);

    // The measured window.
    const pids = apps.map((a) => a.child.pid!);
    const t0 = Date.now();
    const ticks0 = pids.map(cpuTicks);
    const pg0 = await pgTicks(pool, dbName);
    const box0 = boxBusyTicks();
    const s0 = await sumCounters(ofKind('scheduler'), SCHEDULER_COUNTERS);
    const e0 = await sumCounters(ofKind('executor'), EXECUTOR_COUNTERS);
    await sleep(WINDOW_S * 1000);
    const ticks1 = pids.map(cpuTicks);
    const pg1 = await pgTicks(pool, dbName);
    const box1 = boxBusyTicks();
    const s1 = await sumCounters(ofKind('scheduler'), SCHEDULER_COUNTERS);
    const e1 = await sumCounters(ofKind('executor'), EXECUTOR_COUNTERS);
    const t1 = Date.now();
    const loadAverage = loadavg()[0]!;
    // Fires due in the window (started by now: lateness is small against the 5 s grace below).
    await sleep(5_000);
    const lates = await lateness(pool, t0, t1);
    const fires = lates.length;
    const perK = (ticks: number) => round2(ticks / 100 / (fires / 1000));
    const ticksOf = (k: App['kind']) =>
      apps.reduce((s, a, i) => (a.kind === k ? s + (ticks1[i]! - ticks0[i]!) : s), 0);
    const schedTicks = ticksOf('scheduler');
    const execTicks = ticksOf('executor');
    const pgT = pgDelta(pg0, pg1);
    const conflicts = {
      ...Object.fromEntries(SCHEDULER_COUNTERS.map((n) => [n, s1[n]! - s0[n]!])),
      ...Object.fromEntries(EXECUTOR_COUNTERS.map((n) => [n, e1[n]! - e0[n]!])),
    };

    // Handoffs: one scheduler, then one executor, stopped as a rolling deploy would.
    const handoffs: Handoff[] = [];
    for (const kind of ['scheduler', 'executor'] as const) {
      const live = ofKind(kind);
      if (live.length < 2) continue;
      const victim = live[live.length - 1]!;
      const stoppedAt = Date.now();
      const stopping = stop(victim);
      let heldAgain: number | null = null;
      if (kind === 'scheduler') {
        await waitFor(
          'the stopped scheduler’s shards held again',
          async () => {
            const { rows } = await pool.query<{ held: number }>(
              `SELECT count(*)::int AS held FROM shard_leases
                WHERE owner IS NOT NULL AND owner <> $1 AND expires_at > now()`,
              [victim.name],
            );
            return rows[0]!.held >= SHARDS;
          },
          120_000,
        );
        heldAgain = Date.now() - stoppedAt;
      }
      await stopping;
      await sleep(Math.max(0, stoppedAt + 20_000 - Date.now()));
      const after = await lateness(pool, stoppedAt, stoppedAt + 15_000);
      handoffs.push({
        stopped: kind,
        shardsHeldAgainMs: heldAgain,
        maxLatenessAfterMs: Math.round(after[after.length - 1] ?? NaN),
        p99LatenessAfterMs: Math.round(pct(after, 99)),
      });
    }

    return {
      schedulers,
      executors,
      fires,
      firesPerSec: round2(fires / ((t1 - t0) / 1000)),
      cpuSecondsPer1000Fires: {
        schedulers: perK(schedTicks),
        executors: perK(execTicks),
        postgres: perK(pgT),
        total: perK(schedTicks + execTicks + pgT),
        box: perK(box1 - box0),
      },
      lateness: {
        p50Ms: Math.round(pct(lates, 50)),
        p99Ms: Math.round(pct(lates, 99)),
        maxMs: Math.round(lates[lates.length - 1] ?? NaN),
      },
      conflicts,
      handoffs,
      loadAverage: round2(loadAverage),
    };
  } finally {
    await Promise.all(apps.map(stop));
    await pool.end();
    const admin = createPool(adminUrl, { max: 1 });
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

function markdown(results: readonly LayoutResult[], speed: string, started: string): string {
  const lines = [
    '# Coordination cost: more schedulers and executors on one box',
    '',
    `${started}, ${hostname()}. ${RATE} fires/s of interval jobs (every ${EVERY_MS / 1000} s, Kafka target), ${SHARDS} shards, 12 fires partitions, window ${WINDOW_S} s per layout.`,
    speed,
    '',
    'CPU-seconds per 1,000 fires: the processes\' own time (Tickwork apps; this database\'s PostgreSQL sessions); "box" is every busy tick of the machine in the window, other load included.',
    '',
    '| schedulers × executors | fires/s | sched | exec | postgres | total | box | lateness p50 / p99 / max ms | fenced out | epoch changes | self-fences | rebalances | dup deliveries | load avg |',
    '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of results) {
    const c = r.cpuSecondsPer1000Fires;
    const k = r.conflicts;
    lines.push(
      `| ${r.schedulers} × ${r.executors} | ${r.firesPerSec} | ${c.schedulers} | ${c.executors} | ${c.postgres} | ${c.total} | ${c.box} | ${r.lateness.p50Ms} / ${r.lateness.p99Ms} / ${r.lateness.maxMs} | ${k.tickwork_claims_fenced_out_total} | ${k.tickwork_scheduler_epoch_changes_total} | ${k.tickwork_scheduler_self_fences_total} | ${k.tickwork_scheduler_rebalances_total} | ${k.tickwork_fires_duplicates_total} | ${r.loadAverage} |`,
    );
  }
  lines.push(
    '',
    '## Handoff: one instance stopped gracefully (a rolling deploy step)',
    '',
    '| layout | stopped | every shard held again after | fires due in the next 15 s: p99 / max lateness ms |',
    '|---|---|---:|---|',
  );
  for (const r of results)
    for (const h of r.handoffs)
      lines.push(
        `| ${r.schedulers} × ${r.executors} | ${h.stopped === 'executor' ? 'an' : 'a'} ${h.stopped} | ${h.shardsHeldAgainMs === null ? '—' : `${h.shardsHeldAgainMs} ms`} | ${h.p99LatenessAfterMs} / ${h.maxLatenessAfterMs} |`,
      );
  return lines.join('\n') + '\n';
}

async function main(): Promise<void> {
  const started = new Date().toISOString();
  const speed0 = boxSpeedMs();
  const results: LayoutResult[] = [];
  for (const { schedulers, executors } of LAYOUTS) {
    console.log(`layout ${schedulers} scheduler(s) × ${executors} executor(s) ...`);
    const r = await runLayout(schedulers, executors);
    console.log(JSON.stringify(r));
    results.push(r);
  }
  const speed = describeBoxSpeed(speed0, boxSpeedMs());
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const md = markdown(results, speed, started);
  writeFileSync(
    join(dir, `coordination-${stamp}.json`),
    JSON.stringify({ started, rate: RATE, results }, null, 2),
  );
  writeFileSync(join(dir, `coordination-${stamp}.md`), md);
  console.log(md);
  console.log(`wrote bench/results/coordination-${stamp}.{json,md}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
