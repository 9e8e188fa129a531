/**
 * npm run bench:herd — herd windows (policies.spread_ms) against the top-of-the-hour herd.
 *
 * Planned: BENCH_HERD_PLANNED (default 1,000,000) hourly `0 * * * *` jobs, each planned by the real
 * domain planner (initialOccurrence, then planDueOccurrences claimed at its slot) with a 5-minute
 * window (BENCH_HERD_WINDOW_MS) and without one: fires per second at the peak second, and how even
 * the window is. Also `H * * * *` (the H token) for the same jobs, per minute.
 *
 * Live: BENCH_HERD_LIVE (default 20,000) hourly jobs stored in PostgreSQL, one real scheduler and
 * one real executor (Kafka target, schema registry), first with a window of BENCH_HERD_LIVE_WINDOW_MS
 * (default 60 s: the 5-minute window scaled down to keep the shared box's load short), then the same
 * herd without a window: fires started per second at the peak, and lateness beyond the chosen slot
 * (run start − scheduled_for, the slot) next to lateness from the nominal time.
 *
 * Prints the figures and writes bench/results/herd-<date>.{json,md}. BENCH_HERD_LIVE=0 skips the live part.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_POLICIES,
  initialOccurrence,
  planDueOccurrences,
  policiesToWire,
  scheduleToWire,
  shardOf,
  targetToWire,
  type Job,
  type Schedule,
} from '@tickwork/domain';
import { createKafkaBus } from '@tickwork/messaging';
import { createPool, ensureDatabase, migrate, type Pool } from '@tickwork/store';
import { EXECUTOR_NODE_FLAGS } from './executor-launch';
import { boxSpeedMs, describeBoxSpeed } from './box-speed';

const PLANNED = Number(process.env.BENCH_HERD_PLANNED ?? 1_000_000);
const WINDOW_MS = Number(process.env.BENCH_HERD_WINDOW_MS ?? 300_000);
// H compiles a cron per job (each job's fields differ): its variant plans fewer jobs by default.
const HASHED = Math.min(PLANNED, Number(process.env.BENCH_HERD_HASHED ?? 100_000));
const LIVE = Number(process.env.BENCH_HERD_LIVE ?? 20_000);
const LIVE_WINDOW_MS = Number(process.env.BENCH_HERD_LIVE_WINDOW_MS ?? 60_000);
const SHARDS = 12;
const BROKERS = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
const REGISTRY = process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7';
const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
// Compiled to <out>/bench/herd.js: the apps are built beside it, the results go to the repository.
const OUT = join(__dirname, '..');
const ROOT = process.cwd();
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const HOUR = 3_600_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

interface PerSecond {
  readonly peak: number;
  readonly secondsUsed: number;
  readonly meanOverWindow: number;
  readonly minOverWindow: number;
}

/** Fires per second (or per bucket) from a list of instants. */
function perBucket(
  instants: readonly number[],
  bucketMs: number,
  windowMs: number,
  origin: number,
): PerSecond {
  const counts = new Map<number, number>();
  for (const t of instants) {
    const b = Math.floor((t - origin) / bucketMs);
    counts.set(b, (counts.get(b) ?? 0) + 1);
  }
  const buckets = Math.max(1, Math.ceil(windowMs / bucketMs));
  let min = Number.POSITIVE_INFINITY;
  for (let b = 0; b < buckets; b++) min = Math.min(min, counts.get(b) ?? 0);
  return {
    peak: Math.max(...counts.values()),
    secondsUsed: counts.size,
    meanOverWindow: instants.length / buckets,
    minOverWindow: windowMs >= bucketMs ? min : instants.length,
  };
}

const hourly: Schedule & { kind: 'cron' } = {
  kind: 'cron',
  expression: '0 * * * *',
  timeZone: 'UTC',
  dstGap: 'AUTO',
  dstRepeat: 'AUTO',
};

/** The planned part: every job through initialOccurrence and a claim at its slot, as the scheduler does. */
function planned(): Record<string, unknown> {
  const now = new Date('2026-12-03T09:30:00Z');
  const nominal = new Date('2026-12-03T10:00:00Z');
  const job = (jobId: string, schedule: Schedule, spreadMs: number): Job => ({
    jobId,
    tenantId: 't',
    schedule,
    target: { type: 'kafka', topic: 'sink', key: null, headers: {} },
    payload: null,
    policies: { ...DEFAULT_POLICIES, spreadMs },
    labels: {},
    shard: 0,
    status: 'SCHEDULED',
    nextRunAt: null,
    nextNominalAt: null,
    fenceToken: 0,
    firesCount: 0,
    version: 1,
    createdAt: now,
    updatedAt: now,
  });
  const opts = { maxCatchUp: 100, herdJitterMs: 0 };
  const run = (spreadMs: number, schedule: Schedule, jobs = PLANNED) => {
    const started = process.hrtime.bigint();
    const fires = new Array<number>(jobs);
    let offsetsOk = true;
    for (let i = 0; i < jobs; i++) {
      const id = `herd-${i}`;
      const s: Schedule =
        schedule.kind === 'cron' && schedule.expression.includes('H')
          ? { ...schedule, hashSeed: id }
          : schedule;
      const first = initialOccurrence(id, s, { jitterMs: 0, spreadMs }, now, 0)!;
      // The claim at the slot: the planner fires it there (on time, not a misfire).
      const claimed = planDueOccurrences(
        { ...job(id, s, spreadMs), nextRunAt: first.scheduledFor, nextNominalAt: first.nominalTime },
        first.nominalTime,
        first.scheduledFor,
        opts,
      );
      const fire = claimed.fires[0]!;
      fires[i] = fire.scheduledFor.getTime();
      if (fire.scheduledFor.getTime() !== first.scheduledFor.getTime()) offsetsOk = false;
    }
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    return { fires, ms, offsetsOk };
  };
  const without = run(0, hourly);
  const withWindow = run(WINDOW_MS, hourly);
  const hashed = run(0, { ...hourly, expression: 'H * * * *' }, HASHED);
  const origin = nominal.getTime();
  const secondsWithout = perBucket(without.fires, 1000, 1000, origin);
  const secondsWith = perBucket(withWindow.fires, 1000, WINDOW_MS, origin);
  const sortedOffsets = withWindow.fires.map((t) => t - origin).sort((a, b) => a - b);
  const hashedSeconds = perBucket(hashed.fires, 1000, 1000, Math.min(...hashed.fires));
  const hashedMinutes = perBucket(hashed.fires, 60_000, HOUR, now.getTime());
  return {
    jobs: PLANNED,
    windowMs: WINDOW_MS,
    withoutWindow: {
      peakFiresPerSecond: secondsWithout.peak,
      secondsUsed: secondsWithout.secondsUsed,
      planMs: Math.round(without.ms),
    },
    withWindow: {
      peakFiresPerSecond: secondsWith.peak,
      meanFiresPerSecond: Math.round(secondsWith.meanOverWindow),
      minFiresPerSecond: secondsWith.minOverWindow,
      secondsUsed: secondsWith.secondsUsed,
      offsetP50Ms: pct(sortedOffsets, 50),
      offsetMaxMs: sortedOffsets[sortedOffsets.length - 1],
      claimAtSlotKeepsSlot: withWindow.offsetsOk,
      planMs: Math.round(withWindow.ms),
    },
    hashedMinute: {
      expression: 'H * * * *',
      jobs: HASHED,
      peakFiresPerSecond: hashedSeconds.peak,
      peakFiresPerMinute: hashedMinutes.peak,
      minutesUsed: hashedMinutes.secondsUsed,
      planMs: Math.round(hashed.ms),
    },
  };
}

/** Loads `n` hourly interval jobs anchored at `anchor`, each with its slot as next_run_at. */
async function load(
  pool: Pool,
  tag: string,
  n: number,
  anchor: Date,
  spreadMs: number,
  topic: string,
): Promise<void> {
  const schedule: Schedule = { kind: 'interval', everyMs: HOUR, anchor };
  const policies = { ...DEFAULT_POLICIES, spreadMs };
  const wire = JSON.stringify(scheduleToWire(schedule));
  const target = JSON.stringify(targetToWire({ type: 'kafka', topic, key: null, headers: {} }));
  const pol = JSON.stringify(policiesToWire(policies));
  for (let start = 0; start < n; start += 5_000) {
    const ids: string[] = [];
    const shards: number[] = [];
    const runAt: string[] = [];
    for (let i = start; i < Math.min(n, start + 5_000); i++) {
      const id = `${tag}-${i}`;
      ids.push(id);
      shards.push(shardOf(id, SHARDS));
      // The slot, as JobService stores it on create (initialOccurrence, the real domain code).
      runAt.push(
        initialOccurrence(
          id,
          schedule,
          policies,
          new Date(anchor.getTime() - 1),
          0,
        )!.scheduledFor.toISOString(),
      );
    }
    await pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
       SELECT v.id, 'herd', v.shard, 'interval', $4::jsonb, 'SCHEDULED', v.at, $5::timestamptz, $6::jsonb, '{"bench":true}'::jsonb, $7::jsonb
         FROM unnest($1::text[], $2::int[], $3::timestamptz[]) AS v(id, shard, at)`,
      [ids, shards, runAt, wire, anchor.toISOString(), target, pol],
    );
  }
}

function startApp(
  name: 'scheduler' | 'executor',
  env: Record<string, string>,
): { child: ChildProcess; log: () => string } {
  const flags = name === 'executor' ? EXECUTOR_NODE_FLAGS.split(' ').filter(Boolean) : [];
  const child = spawn(process.execPath, [...flags, join(OUT, 'apps', name, 'src', 'main.js')], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let log = '';
  child.stdout!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
  return { child, log: () => log };
}

interface LiveHerd {
  readonly jobs: number;
  readonly windowMs: number;
  readonly drainedMs: number;
  readonly peakStartsPerSecond: number;
  readonly beyondSlotMs: { p50: number; p99: number; max: number };
  readonly fromNominalMs: { p50: number; p99: number; max: number };
  readonly offsetRecorded: boolean;
}

async function measure(
  pool: Pool,
  tag: string,
  n: number,
  anchor: Date,
  windowMs: number,
): Promise<LiveHerd> {
  const deadline = anchor.getTime() + windowMs + 180_000;
  for (;;) {
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM job_runs WHERE status = 'SUCCEEDED' AND job_id LIKE $1`,
      [`${tag}-%`],
    );
    if (Number(rows[0]!.n) >= n) break;
    if (Date.now() > deadline) throw new Error(`${tag}: only ${rows[0]!.n} of ${n} runs succeeded in time`);
    await sleep(500);
  }
  const { rows } = await pool.query<{ started: string; beyond: number; nominal: number; ok: boolean }>(
    `SELECT (extract(epoch FROM started_at) * 1000)::float8 AS started,
            (extract(epoch FROM started_at - scheduled_for) * 1000)::float8 AS beyond,
            (extract(epoch FROM started_at - nominal_time) * 1000)::float8 AS nominal,
            (extract(epoch FROM scheduled_for - nominal_time) * 1000)::bigint = spread_offset_ms AS ok
       FROM job_runs WHERE job_id LIKE $1`,
    [`${tag}-%`],
  );
  const starts = rows.map((r) => Number(r.started));
  const beyond = rows.map((r) => Number(r.beyond)).sort((a, b) => a - b);
  const nominal = rows.map((r) => Number(r.nominal)).sort((a, b) => a - b);
  const three = (s: number[]) => ({
    p50: Math.round(pct(s, 50)),
    p99: Math.round(pct(s, 99)),
    max: Math.round(s[s.length - 1]!),
  });
  return {
    jobs: n,
    windowMs,
    drainedMs: Math.round(Math.max(...starts) - anchor.getTime()),
    peakStartsPerSecond: perBucket(starts, 1000, 1000, anchor.getTime()).peak,
    beyondSlotMs: three(beyond),
    fromNominalMs: three(nominal),
    offsetRecorded: rows.every((r) => r.ok),
  };
}

async function live(): Promise<{ withWindow: LiveHerd; withoutWindow: LiveHerd } | null> {
  if (LIVE <= 0) return null;
  const id = Date.now();
  const dbName = `tickwork_bench_herd_${id}`;
  const databaseUrl = adminUrl.replace(/\/[^/]*$/, `/${dbName}`);
  const prefix = `bench.herd.${id}`;
  await ensureDatabase(databaseUrl);
  const pool = createPool(databaseUrl, { max: 4, statementTimeoutMs: 600_000 });
  const apps: ChildProcess[] = [];
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
      { name: sink, partitions: 12, replicationFactor: 1, configs: { 'retention.ms': '3600000' } },
    ]);
    await admin.disconnect();
    // Two herds: the first with a window, the second (after the first is over) all at one instant.
    const spreadAt = new Date(Math.ceil((Date.now() + 30_000) / 1000) * 1000);
    const herdAt = new Date(spreadAt.getTime() + LIVE_WINDOW_MS + 30_000);
    console.log(
      `live: loading 2 × ${LIVE} hourly jobs (window ${LIVE_WINDOW_MS} ms at ${spreadAt.toISOString()}, none at ${herdAt.toISOString()})`,
    );
    await load(pool, 'spread', LIVE, spreadAt, LIVE_WINDOW_MS, sink);
    await load(pool, 'plain', LIVE, herdAt, 0, sink);
    await pool.query('VACUUM (ANALYZE) jobs');
    const env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: BROKERS,
      SCHEMA_REGISTRY_URL: REGISTRY,
      TICKWORK_TOPIC_PREFIX: prefix,
      TICKWORK_SHARDS: String(SHARDS),
      TICKWORK_TICK_MS: '100',
      TICKWORK_LOOKAHEAD_MS: '10000',
      TICKWORK_SCHEDULER_PORT: '0',
      TICKWORK_EXECUTOR_PORT: '0',
      TICKWORK_EXECUTOR_CONCURRENCY: '1000',
      TICKWORK_RUN_PURGE_INTERVAL: '0',
    };
    const scheduler = startApp('scheduler', { ...env, TICKWORK_INSTANCE_ID: 'bench-herd-scheduler' });
    const executor = startApp('executor', { ...env, TICKWORK_INSTANCE_ID: 'bench-herd-executor' });
    apps.push(scheduler.child, executor.child);
    const ready = Date.now() + 60_000;
    while (!/assigned fires partitions/.test(executor.log())) {
      if (executor.child.exitCode !== null || scheduler.child.exitCode !== null || Date.now() > ready)
        throw new Error(`apps did not start:\n${executor.log()}\n${scheduler.log()}`);
      await sleep(200);
    }
    const withWindow = await measure(pool, 'spread', LIVE, spreadAt, LIVE_WINDOW_MS);
    console.log(`live with a window: ${JSON.stringify(withWindow)}`);
    const withoutWindow = await measure(pool, 'plain', LIVE, herdAt, 0);
    console.log(`live without a window: ${JSON.stringify(withoutWindow)}`);
    return { withWindow, withoutWindow };
  } finally {
    for (const a of apps) a.kill('SIGTERM');
    await Promise.all(
      apps.map((a) => (a.exitCode !== null ? undefined : new Promise((r) => a.once('exit', r)))),
    );
    await pool.end();
    const admin = createPool(adminUrl, { max: 1 });
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

async function main(): Promise<void> {
  const speedAtStart = boxSpeedMs();
  console.log(`planned: ${PLANNED} hourly jobs through the domain planner ...`);
  const plan = planned();
  console.log(JSON.stringify(plan, null, 2));
  const liveResults = await live();
  const results = {
    benchmark: 'herd',
    host: hostname(),
    date: new Date().toISOString(),
    boxSpeedMs: { start: speedAtStart, end: boxSpeedMs() },
    planned: plan,
    live: liveResults,
  };
  const p = plan as {
    withoutWindow: { peakFiresPerSecond: number; planMs: number };
    withWindow: {
      peakFiresPerSecond: number;
      meanFiresPerSecond: number;
      minFiresPerSecond: number;
      secondsUsed: number;
      planMs: number;
    };
    hashedMinute: {
      jobs: number;
      peakFiresPerSecond: number;
      peakFiresPerMinute: number;
      minutesUsed: number;
    };
  };
  const row = (name: string, h: LiveHerd) =>
    `| ${name} | ${h.jobs} | ${h.windowMs / 1000} s | ${h.peakStartsPerSecond} | ${h.beyondSlotMs.p50} / ${h.beyondSlotMs.p99} / ${h.beyondSlotMs.max} ms | ${h.fromNominalMs.p50} / ${h.fromNominalMs.p99} / ${h.fromNominalMs.max} ms | ${(h.drainedMs / 1000).toFixed(1)} s |`;
  const md = [
    `# bench:herd — ${results.date} on ${results.host}`,
    '',
    describeBoxSpeed(results.boxSpeedMs.start, results.boxSpeedMs.end),
    '',
    `## Planned: ${PLANNED.toLocaleString('en')} hourly \`0 * * * *\` jobs, by the domain planner`,
    '',
    '| | peak fires in one second | fires per second over the window (min / mean) | seconds with fires | planning time |',
    '|---|---|---|---|---|',
    `| no window | ${p.withoutWindow.peakFiresPerSecond.toLocaleString('en')} | – | 1 | ${p.withoutWindow.planMs} ms |`,
    `| spread_ms ${WINDOW_MS} | ${p.withWindow.peakFiresPerSecond.toLocaleString('en')} | ${p.withWindow.minFiresPerSecond} / ${p.withWindow.meanFiresPerSecond} | ${p.withWindow.secondsUsed} | ${p.withWindow.planMs} ms |`,
    `| \`H * * * *\` (no window; ${p.hashedMinute.jobs.toLocaleString('en')} jobs) | ${p.hashedMinute.peakFiresPerSecond.toLocaleString('en')} (all of a minute's jobs at its :00; ${p.hashedMinute.minutesUsed} minutes used) | – | – | – |`,
    '',
    ...(liveResults
      ? [
          `## Live: one scheduler + one executor (Kafka target), ${LIVE.toLocaleString('en')} hourly jobs a herd`,
          '',
          'Lateness beyond the slot is run start − scheduled_for (the chosen slot); from nominal is run start − nominal_time (what the metrics and the lateness view report for a job with a window).',
          '',
          '| herd | jobs | window | peak runs started in one second | beyond the slot p50 / p99 / max | from nominal p50 / p99 / max | last start after the nominal time |',
          '|---|---|---|---|---|---|---|',
          row('with spread_ms', liveResults.withWindow),
          row('without', liveResults.withoutWindow),
          '',
          `Offsets recorded on every run (spread_offset_ms = scheduled_for − nominal_time): ${liveResults.withWindow.offsetRecorded && liveResults.withoutWindow.offsetRecorded}.`,
          '',
        ]
      : []),
  ].join('\n');
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `herd-${stamp}.json`), JSON.stringify(results, null, 2));
  writeFileSync(join(dir, `herd-${stamp}.md`), md);
  console.log(md);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
