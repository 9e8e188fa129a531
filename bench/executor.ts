/**
 * npm run bench:executor — one real executor process against a burst of fires.
 * For each target (a Kafka topic, and a local no-op HTTP receiver in its own process) it loads
 * BENCH_FIRES jobs (default 100,000), starts one executor, publishes one fire per job "due now"
 * onto the fires topic as fast as the producer goes, and waits until every run is SUCCEEDED.
 * Reports executions/s (fires / (last finished − first started)), end-to-end lateness
 * (execution start − scheduled time, from job_runs) p50/p99/max, and the executor's RSS over the
 * run. Writes bench/results/executor-<date>.{json,md}. BENCH_PROFILE=1 adds a CPU profile summary.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, hostname, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import {
  DEFAULT_POLICIES,
  policiesToWire,
  scheduleToWire,
  targetToWire,
  type FireEvent,
  type Target,
} from '@tickwork/domain';
import { createKafkaBus, EventCodecs, type MessageProducer } from '@tickwork/messaging';
import { createPool, ensureDatabase, migrate, type Pool } from '@tickwork/store';
import { EXECUTOR_NODE_FLAGS } from './executor-launch';
import { boxSpeedMs, describeBoxSpeed } from './box-speed';

const FIRES = Number(process.env.BENCH_FIRES ?? 100_000);
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 12);
// Higher than the product default (100): a Kafka produce or a local no-op call is cheap to hold open.
const CONCURRENCY = process.env.BENCH_CONCURRENCY ?? '1000';
const PROFILE = process.env.BENCH_PROFILE === '1';
const PACED_RATE = process.env.BENCH_STEADY_RATE ? Number(process.env.BENCH_STEADY_RATE) : undefined;
const PACED_SECONDS = Number(process.env.BENCH_STEADY_SECONDS ?? 20);
/** The repository (results go to its bench/results), found upwards: the build may live in dist/ or elsewhere. */
function repoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir))
    if (existsSync(join(dir, 'package.json'))) return dir;
  return join(from, '..', '..');
}
const ROOT = repoRoot(__dirname);
// The executor of the same build as this script (dist/, or a private --outDir).
const EXECUTOR_MAIN = join(__dirname, '..', 'apps', 'executor', 'src', 'main.js');
const BROKERS = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
const REGISTRY = process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7';
const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const stamp = new Date().toISOString().replace(/[:.]/g, '-');

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ScenarioResult {
  readonly target: 'kafka' | 'webhook';
  readonly fires: number;
  readonly publishPerSec: number;
  readonly executionsPerSec: number;
  readonly drainSeconds: number;
  readonly latenessMs: { p50: number; p99: number; max: number };
  readonly steady: {
    ratePerSec: number;
    fires: number;
    latenessMs: { p50: number; p99: number; max: number };
  };
  readonly rssMb: { start: number; max: number; end: number; samples: number[] };
  readonly profile?: {
    top: { fn: string; selfPct: number }[];
    byPackage: { pkg: string; selfPct: number }[];
  };
}

/** Inserts `n` jobs with this target (the executor reads their retry policy and checks they exist). */
async function loadJobs(pool: Pool, prefix: string, n: number, target: Target): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const schedule = JSON.stringify(scheduleToWire({ kind: 'once', at: new Date() }));
  for (let start = 0; start < n; start += 10_000) {
    const chunk = ids.slice(start, start + 10_000);
    await pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, target, payload, policies)
       SELECT id, 'bench', 0, 'once', $2::jsonb, 'COMPLETED', $3::jsonb, '{"bench":true}'::jsonb, $4::jsonb FROM unnest($1::text[]) AS id`,
      [
        chunk,
        schedule,
        JSON.stringify(targetToWire(target)),
        JSON.stringify(policiesToWire(DEFAULT_POLICIES)),
      ],
    );
  }
  return ids;
}

/** Publishes one fire per job, due now, in batches; returns fires per second. */
async function publish(
  producer: MessageProducer,
  codecs: EventCodecs,
  topic: string,
  ids: string[],
  target: Target,
  fenceToken = 1,
): Promise<number> {
  const t0 = Date.now();
  const inFlight: Promise<void>[] = [];
  for (let start = 0; start < ids.length; start += 2_000) {
    const now = new Date();
    const messages = await Promise.all(
      ids.slice(start, start + 2_000).map(async (jobId) => {
        const fire: FireEvent = {
          jobId,
          tenantId: 'bench',
          fenceToken,
          fireId: `${jobId}:${fenceToken}`,
          scheduledFor: now,
          nominalTime: now,
          attempt: 1,
          target,
          payload: { bench: true },
        };
        return { key: jobId, value: await codecs.encodeFire(topic, fire) };
      }),
    );
    inFlight.push(producer.send([{ topic, messages }]));
    if (inFlight.length >= 4) await inFlight.shift();
  }
  await Promise.all(inFlight);
  return Math.round(ids.length / ((Date.now() - t0) / 1000));
}

/** Publishes fires (fence token 2) at a steady rate below capacity, each due when it is sent. */
async function publishPaced(
  producer: MessageProducer,
  codecs: EventCodecs,
  topic: string,
  ids: string[],
  target: Target,
  perSecond: number,
): Promise<void> {
  const t0 = Date.now();
  let sent = 0;
  while (sent < ids.length) {
    const due = Math.min(ids.length, Math.ceil(((Date.now() - t0) / 1000) * perSecond));
    if (due > sent) {
      await publish(producer, codecs, topic, ids.slice(sent, due), target, 2);
      sent = due;
    }
    await sleep(20);
  }
}

/** Waits until `n` runs of this fence token succeeded. */
async function waitSucceeded(
  pool: Pool,
  fenceToken: number,
  n: number,
  label: string,
  failed: () => string | undefined,
): Promise<void> {
  const until = Date.now() + 15 * 60_000;
  for (;;) {
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM job_runs WHERE status = 'SUCCEEDED' AND fence_token = $1`,
      [fenceToken],
    );
    const done = Number(rows[0]!.n);
    process.stdout.write(`\r${label} ${done} / ${n} succeeded   `);
    if (done >= n) break;
    const why = failed();
    if (why !== undefined || Date.now() > until)
      throw new Error(`only ${done} of ${n} fires succeeded\n${why ?? ''}`);
    await sleep(250);
  }
  process.stdout.write('\n');
}

async function latenessOf(
  pool: Pool,
  fenceToken: number,
): Promise<{ p50: number; p99: number; max: number }> {
  const { rows } = await pool.query<{ ms: number }>(
    `SELECT extract(epoch FROM (started_at - scheduled_for)) * 1000 AS ms FROM job_runs WHERE fence_token = $1 ORDER BY 1`,
    [fenceToken],
  );
  const ms = rows.map((r) => Number(r.ms));
  return { p50: pct(ms, 50), p99: pct(ms, 99), max: ms[ms.length - 1] ?? NaN };
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

/** The functions with the most self time in a V8 .cpuprofile. */
function summarizeProfile(dir: string): {
  top: { fn: string; selfPct: number }[];
  byPackage: { pkg: string; selfPct: number }[];
} {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return { top: [], byPackage: [] };
  const prof = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
    samples: number[];
  };
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const counts = new Map<string, number>();
  const packages = new Map<string, number>();
  for (const id of prof.samples) {
    const cf = byId.get(id)?.callFrame;
    if (!cf) continue;
    const pkg = packageOf(cf.url, cf.functionName);
    packages.set(pkg, (packages.get(pkg) ?? 0) + 1);
    const where = cf.url
      ? cf.url
          .replace(/^.*node_modules\//, '')
          .replace(/^.*\/dist[^/]*\//, '')
          .replace(/^file:\/\//, '')
      : '';
    const key = `${cf.functionName || '(anonymous)'} ${where}${where ? `:${cf.lineNumber + 1}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const total = prof.samples.length;
  const share = (n: number) => Math.round((1000 * n) / total) / 10;
  return {
    top: [...counts.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(([fn, n]) => ({ fn, selfPct: share(n) })),
    byPackage: [...packages.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([pkg, n]) => ({ pkg, selfPct: share(n) })),
  };
}

/** Which package (or runtime part) a profiled frame belongs to. */
function packageOf(url: string, fn: string): string {
  const nm = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (/\/dist[^/]*\/(libs|apps)\//.test(url)) return 'tickwork';
  if (url.startsWith('node:')) return 'node (runtime)';
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(idle)') return 'idle';
  if (!url) return 'native / program';
  return 'other';
}

function startReceiver(port: number): ChildProcess {
  // A no-op receiver in its own process, so it does not share the bench's event loop.
  const code = `require('http').createServer((q, s) => { q.resume(); q.on('end', () => { s.statusCode = 204; s.end(); }); }).listen(${port}, '127.0.0.1', () => console.log('up'));`;
  return spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
}

async function scenario(kind: 'kafka' | 'webhook'): Promise<ScenarioResult> {
  const id = `${kind}${Date.now()}`;
  const dbName = `tickwork_bench_exec_${id}`;
  const databaseUrl = adminUrl.replace(/\/[^/]*$/, `/${dbName}`);
  const prefix = `bench.exec.${id}`;
  await ensureDatabase(databaseUrl);
  const pool = createPool(databaseUrl, { max: 4, statementTimeoutMs: 600_000 });
  await migrate(pool);
  const bus = createKafkaBus({
    brokers: BROKERS.split(','),
    clientId: 'tickwork-bench',
    ssl: false,
    sasl: null,
  });
  let receiver: ChildProcess | undefined;
  let target: Target;
  const sinkTopic = `${prefix}.sink`;
  if (kind === 'kafka') {
    const admin = await bus.admin();
    await admin.createTopics([
      {
        name: sinkTopic,
        partitions: PARTITIONS,
        replicationFactor: 1,
        configs: { 'retention.ms': '3600000' },
      },
    ]);
    await admin.disconnect();
    target = { type: 'kafka', topic: sinkTopic, key: null, headers: {} };
  } else {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    receiver = startReceiver(port);
    await new Promise<void>((resolve) => receiver!.stdout!.once('data', () => resolve()));
    target = {
      type: 'webhook',
      url: `http://127.0.0.1:${port}/hook`,
      method: 'POST',
      headers: {},
      timeoutMs: 10_000,
      successStatus: { min: 200, max: 299 },
    };
  }
  console.log(`[${kind}] loading ${FIRES} jobs ...`);
  const ids = await loadJobs(pool, kind, FIRES, target);

  const profDir = join(ROOT, 'bench', 'results', `.prof-${id}`);
  const env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: databaseUrl,
    KAFKA_BROKERS: BROKERS,
    SCHEMA_REGISTRY_URL: REGISTRY,
    TICKWORK_TOPIC_PREFIX: prefix,
    TICKWORK_FIRES_PARTITIONS: String(PARTITIONS),
    TICKWORK_EXECUTOR_CONCURRENCY: CONCURRENCY,
    TICKWORK_EXECUTOR_PORT: '0',
    TICKWORK_INSTANCE_ID: `bench-executor-${kind}`,
    TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
    TICKWORK_RUN_PURGE_INTERVAL: '0',
  };
  const args = [
    // The executor's launch flags (as infra/start and docker-compose.yml); BENCH_NODE_FLAGS replaces them.
    ...(process.env.BENCH_NODE_FLAGS ?? EXECUTOR_NODE_FLAGS).split(' ').filter(Boolean),
    ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
    EXECUTOR_MAIN,
  ];
  const executor = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let log = '';
  executor.stdout!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
  const rss: number[] = [];
  const sampler = setInterval(() => rss.push(rssMb(executor.pid!)), 1_000);
  try {
    const deadline = Date.now() + 120_000;
    while (!/assigned fires partitions/.test(log) || !/assigned retry partitions/.test(log)) {
      if (executor.exitCode !== null || Date.now() > deadline)
        throw new Error(`executor did not start:\n${log}`);
      await sleep(200);
    }
    const rssStart = rssMb(executor.pid!);
    const producer = await bus.producer({ idempotent: true });
    const codecs = await EventCodecs.connect(REGISTRY, { fireTopics: [`${prefix}.fires`], resultTopics: [] });
    console.log(`[${kind}] publishing ${FIRES} fires due now ...`);
    const publishPerSec = await publish(producer, codecs, `${prefix}.fires`, ids, target);
    const failed = () => (executor.exitCode !== null ? log.slice(-4_000) : undefined);
    await waitSucceeded(pool, 1, FIRES, `[${kind}] burst:`, failed);
    const { rows: span } = await pool.query<{ first: Date; last: Date; sched: Date }>(
      `SELECT min(started_at) AS first, max(finished_at) AS last, min(scheduled_for) AS sched FROM job_runs WHERE fence_token = 1`,
    );
    const s = span[0]!;
    const execSeconds = (s.last.getTime() - s.first.getTime()) / 1000;
    const lateness = await latenessOf(pool, 1);

    // Lateness when the executor keeps up: a steady rate well below what the burst measured.
    const pacedRate = PACED_RATE ?? Math.max(100, Math.round((FIRES / execSeconds) * 0.5));
    const pacedIds = ids.slice(0, Math.min(ids.length, pacedRate * PACED_SECONDS));
    console.log(`[${kind}] publishing ${pacedIds.length} fires at a steady ${pacedRate}/s ...`);
    await publishPaced(producer, codecs, `${prefix}.fires`, pacedIds, target, pacedRate);
    await waitSucceeded(pool, 2, pacedIds.length, `[${kind}] steady:`, failed);
    const steadyLateness = await latenessOf(pool, 2);
    await producer.disconnect();
    executor.kill('SIGTERM');
    await new Promise((r) => executor.once('exit', r));
    const result: ScenarioResult = {
      target: kind,
      fires: FIRES,
      publishPerSec,
      executionsPerSec: Math.round(FIRES / execSeconds),
      drainSeconds: Math.round((s.last.getTime() - s.sched.getTime()) / 100) / 10,
      latenessMs: lateness,
      steady: { ratePerSec: pacedRate, fires: pacedIds.length, latenessMs: steadyLateness },
      rssMb: {
        start: rssStart,
        max: Math.max(...rss.filter(Number.isFinite)),
        end: [...rss].reverse().find(Number.isFinite) ?? NaN,
        samples: rss,
      },
      ...(PROFILE ? { profile: summarizeProfile(profDir) } : {}),
    };
    return result;
  } finally {
    clearInterval(sampler);
    if (executor.exitCode === null) executor.kill('SIGKILL');
    receiver?.kill('SIGTERM');
    await pool.end();
    const admin = createPool(adminUrl, { max: 1 });
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
    // BENCH_KEEP_PROFILE=1 keeps the .cpuprofile (bench/results/.prof-*) for a closer look.
    if (process.env.BENCH_KEEP_PROFILE !== '1') rmSync(profDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const speedAtStart = boxSpeedMs();
  const only = process.env.BENCH_TARGETS?.split(',') ?? ['kafka', 'webhook'];
  const scenarios: ScenarioResult[] = [];
  for (const kind of ['kafka', 'webhook'] as const)
    if (only.includes(kind)) scenarios.push(await scenario(kind));
  const results = {
    benchmark: 'executor',
    host: hostname(),
    boxSpeedMs: { start: speedAtStart, end: boxSpeedMs() },
    cpus: cpus().length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    date: new Date().toISOString(),
    setup: {
      firesPerScenario: FIRES,
      partitions: PARTITIONS,
      concurrency: Number(CONCURRENCY),
      instances: 1,
      executorNodeFlags: process.env.BENCH_NODE_FLAGS ?? EXECUTOR_NODE_FLAGS,
    },
    scenarios,
  };
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const md = [
    `# bench:executor — ${results.date} on ${results.host} (${results.cpus} CPUs)`,
    '',
    `One executor process, concurrency ${CONCURRENCY}, ${PARTITIONS} fires partitions. Per target: a burst of ${FIRES} fires all due now, published (at ${scenarios.map((x) => `${x.publishPerSec}/s`).join(', ')}) while the executor runs — executions/s and burst lateness come from it; then a steady stream at half the burst throughput for ${PACED_SECONDS} s — the lateness when the executor keeps up. Lateness = execution start − scheduled time (job_runs, database clock). Kafka, PostgreSQL, the registry, the receiver and this script share the box.`,
    '',
    describeBoxSpeed(results.boxSpeedMs.start, results.boxSpeedMs.end),
    '',
    '| target | executions/s (burst) | burst lateness p50 / p99 / max | drain (last finish − first scheduled) | steady rate | steady lateness p50 / p99 / max | executor RSS start / max / end |',
    '|---|---|---|---|---|---|---|',
    ...scenarios.map(
      (s) =>
        `| ${s.target} | ${s.executionsPerSec} | ${s.latenessMs.p50.toFixed(0)} / ${s.latenessMs.p99.toFixed(0)} / ${s.latenessMs.max.toFixed(0)} ms | ${s.drainSeconds} s | ${s.steady.ratePerSec}/s | ${s.steady.latenessMs.p50.toFixed(0)} / ${s.steady.latenessMs.p99.toFixed(0)} / ${s.steady.latenessMs.max.toFixed(0)} ms | ${s.rssMb.start} / ${s.rssMb.max} / ${s.rssMb.end} MB |`,
    ),
    '',
    ...scenarios.flatMap((s) =>
      s.profile
        ? [
            `## CPU profile of the executor, ${s.target} target (self time)`,
            '',
            s.profile.byPackage
              .filter((p) => p.selfPct >= 0.5)
              .map((p) => `${p.pkg} ${p.selfPct}%`)
              .join(' · '),
            '',
            '| % | function |',
            '|---|---|',
            ...s.profile.top.map((p) => `| ${p.selfPct} | \`${p.fn}\` |`),
            '',
          ]
        : [],
    ),
  ].join('\n');
  writeFileSync(join(dir, `executor-${stamp}.json`), JSON.stringify(results, null, 2));
  writeFileSync(join(dir, `executor-${stamp}.md`), md);
  console.log(md);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
