/**
 * npm run bench:slow-calls — head-of-line blocking across jobs (issue 24, defect 4).
 * One real executor; a local receiver (its own process) that answers 10% of the jobs' calls after
 * 2 s and the others at once. For each rate in SLOW_BENCH_RATES (default 50,200,500 fires/s), one
 * fire per job is published at that steady rate for SLOW_BENCH_SECONDS (default 30), each due when
 * sent, and the receiver records how late each call to a fast job arrived (arrival −
 * `tickwork-scheduled-for`). Reports the fast jobs' lateness p50 / p99 / max and the share over
 * 500 ms and 2 s (printed, and written to bench/results/slow-calls-<date>.{json,md}), for fires due after a warm-up (SLOW_BENCH_WARMUP_SECONDS, default 10: a fresh
 * executor's first seconds are late whatever the flow does), and the worst during the warm-up. SLOW_BENCH_EXECUTOR_MAIN runs another build's executor (to compare with the old
 * flow); SLOW_BENCH_CONCURRENCY (default 400) must cover rate × call time (500/s × 10% × 2 s = 100).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DEFAULT_POLICIES,
  policiesToWire,
  scheduleToWire,
  targetToWire,
  type FireEvent,
  type Target,
} from '@tickwork/domain';
import { createKafkaBus, EventCodecs } from '@tickwork/messaging';
import { createPool, ensureDatabase, migrate } from '@tickwork/store';
import { boxSpeedMs } from './box-speed';
import { EXECUTOR_NODE_FLAGS } from './executor-launch';

const RATES = (process.env.SLOW_BENCH_RATES ?? '50,200,500').split(',').map(Number);
const SECONDS = Number(process.env.SLOW_BENCH_SECONDS ?? 30);
/** Fires due in the first seconds are not counted: a fresh executor warms up (JIT, connections). */
const WARMUP_SECONDS = Number(process.env.SLOW_BENCH_WARMUP_SECONDS ?? 10);
const CONCURRENCY = process.env.SLOW_BENCH_CONCURRENCY ?? '400';
const PARTITIONS = 12;
const SLOW_SHARE = 0.1;
const SLOW_MS = 2_000;
const EXECUTOR_MAIN =
  process.env.SLOW_BENCH_EXECUTOR_MAIN ?? join(__dirname, '..', 'apps', 'executor', 'src', 'main.js');
const BROKERS = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
const REGISTRY = process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7';
const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A receiver in its own process: /slow answers after 2 s; GET /stats gives the lateness of /fast calls. */
function startReceiver(port: number): ChildProcess {
  const code = `
    const late = [];
    require('http').createServer((q, s) => {
      if (q.method === 'GET') { s.end(JSON.stringify(late)); return; }
      const at = Date.now();
      q.resume();
      q.on('end', () => {
        if (q.url.startsWith('/slow')) { setTimeout(() => { s.statusCode = 204; s.end(); }, ${SLOW_MS}); return; }
        const due = Date.parse(q.headers['tickwork-scheduled-for']);
        late.push([due, at - due]);
        s.statusCode = 204; s.end();
      });
    }).listen(${port}, '127.0.0.1', () => console.log('up'));`;
  return spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function run(rate: number): Promise<string> {
  const id = `slow${rate}x${Date.now()}`;
  const dbName = `tickwork_bench_${id}`;
  const databaseUrl = adminUrl.replace(/\/[^/]*$/, `/${dbName}`);
  const prefix = `bench.${id}`;
  await ensureDatabase(databaseUrl);
  const pool = createPool(databaseUrl, { max: 4, statementTimeoutMs: 600_000 });
  await migrate(pool);
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const receiver = startReceiver(port);
  await new Promise<void>((resolve) => receiver.stdout!.once('data', () => resolve()));
  const target = (path: string): Target => ({
    type: 'webhook',
    url: `http://127.0.0.1:${port}${path}`,
    method: 'POST',
    headers: {},
    timeoutMs: 10_000,
    successStatus: { min: 200, max: 299 },
  });
  const n = rate * SECONDS;
  const ids = Array.from({ length: n }, (_, i) => `${id}-${i}`);
  const slow = (i: number) => i % Math.round(1 / SLOW_SHARE) === 0;
  await pool.query(
    `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, target, payload, policies)
     SELECT id, 'bench', 0, 'once', $2::jsonb, 'COMPLETED', $3::jsonb, '{}'::jsonb, $4::jsonb FROM unnest($1::text[]) AS id`,
    [
      ids,
      JSON.stringify(scheduleToWire({ kind: 'once', at: new Date() })),
      JSON.stringify(targetToWire(target('/fast'))),
      JSON.stringify(policiesToWire(DEFAULT_POLICIES)),
    ],
  );
  const executor = spawn(process.execPath, [...EXECUTOR_NODE_FLAGS.split(' '), EXECUTOR_MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: BROKERS,
      SCHEMA_REGISTRY_URL: REGISTRY,
      TICKWORK_TOPIC_PREFIX: prefix,
      TICKWORK_FIRES_PARTITIONS: String(PARTITIONS),
      TICKWORK_EXECUTOR_CONCURRENCY: CONCURRENCY,
      TICKWORK_EXECUTOR_PORT: String(port + 1),
      TICKWORK_INSTANCE_ID: `bench-${id}`,
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      TICKWORK_RUN_PURGE_INTERVAL: '0',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let log = '';
  executor.stdout!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
  const bus = createKafkaBus({
    brokers: BROKERS.split(','),
    clientId: 'tickwork-bench',
    ssl: false,
    sasl: null,
  });
  try {
    const deadline = Date.now() + 120_000;
    while (!/assigned fires partitions/.test(log) || !/assigned retry partitions/.test(log)) {
      if (executor.exitCode !== null || Date.now() > deadline)
        throw new Error(`executor did not start:\n${log}`);
      await sleep(200);
    }
    const producer = await bus.producer({ idempotent: true });
    const topic = `${prefix}.fires`;
    const codecs = await EventCodecs.connect(REGISTRY, { fireTopics: [topic], resultTopics: [] });
    // Once a second, what the executor holds (SLOW_BENCH_TRACE=1 prints it).
    const t0 = Date.now();
    const trace: string[] = [];
    const sampler = setInterval(() => {
      void fetch(`http://127.0.0.1:${port + 1}/health/ready`)
        .then(
          (r) =>
            r.json() as Promise<{ slotsInUse: number; slotsWaiting: number; fires: Record<string, number> }>,
        )
        .then((b) =>
          trace.push(
            `${((Date.now() - t0) / 1000).toFixed(0)}s slots ${b.slotsInUse} waiting ${b.slotsWaiting} fires ${JSON.stringify(b.fires)}`,
          ),
        )
        .catch(() => undefined);
    }, 1_000);
    let sent = 0;
    while (sent < n) {
      const due = Math.min(n, Math.ceil(((Date.now() - t0) / 1000) * rate));
      if (due > sent) {
        const now = new Date();
        const messages = await Promise.all(
          ids.slice(sent, due).map(async (jobId, k) => {
            const fire: FireEvent = {
              jobId,
              tenantId: 'bench',
              fenceToken: 1,
              fireId: `${jobId}:1`,
              scheduledFor: now,
              nominalTime: now,
              attempt: 1,
              target: target(slow(sent + k) ? '/slow' : '/fast'),
              payload: { bench: true },
            };
            return { key: jobId, value: await codecs.encodeFire(topic, fire) };
          }),
        );
        await producer.send([{ topic, messages }]);
        sent = due;
      }
      await sleep(10);
    }
    clearInterval(sampler);
    if (process.env.SLOW_BENCH_TRACE === '1') console.log(trace.join('\n'));
    const fast = ids.filter((_, i) => !slow(i)).length;
    let calls: [number, number][] = [];
    for (const until = Date.now() + 120_000; Date.now() < until; await sleep(500)) {
      calls = (await (await fetch(`http://127.0.0.1:${port}/stats`)).json()) as [number, number][];
      if (calls.length >= fast) break;
    }
    const warm = t0 + WARMUP_SECONDS * 1_000;
    const late = calls.filter(([due]) => due >= warm).map(([, ms]) => ms);
    const warmupMax = Math.max(0, ...calls.filter(([due]) => due < warm).map(([, ms]) => ms));
    await producer.disconnect();
    late.sort((a, b) => a - b);
    const over = (ms: number) => ((100 * late.filter((x) => x > ms).length) / late.length).toFixed(2);
    // What the executor said about its groups meanwhile (a rebalance stalls every partition).
    const events = log
      .split('\n')
      .filter((l) => /rebalanc|assigned|crash|error|warn/i.test(l))
      .map((l) => l.slice(0, 300));
    if (events.length > 0) console.log(`[${rate}/s] executor:\n${events.join('\n')}`);
    return `| ${rate}/s | ${calls.length} / ${fast} | ${late.length} | ${pct(late, 50)} / ${pct(late, 99)} / ${late.at(-1)} ms | ${over(500)}% | ${over(2_000)}% | ${warmupMax} ms |`;
  } finally {
    executor.kill('SIGTERM');
    await new Promise((r) => (executor.exitCode !== null ? r(undefined) : executor.once('exit', r)));
    receiver.kill('SIGTERM');
    await pool.end();
    const admin = createPool(adminUrl, { max: 1 });
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

async function main(): Promise<void> {
  const date = new Date().toISOString();
  const speed = boxSpeedMs();
  const rows: string[] = [];
  for (const rate of RATES) rows.push(await run(rate));
  const md = [
    `# Executor past slow calls, ${date}`,
    '',
    `executor ${EXECUTOR_MAIN}, concurrency ${CONCURRENCY}, ${PARTITIONS} partitions, ${SLOW_SHARE * 100}% of jobs answering after ${SLOW_MS} ms, ${SECONDS} s per rate, the first ${WARMUP_SECONDS} s not counted; box speed ${speed} → ${boxSpeedMs()} ms`,
    '',
    '| rate | fast calls seen / sent | counted (after warm-up) | fast jobs lateness p50 / p99 / max | > 500 ms | > 2 s | max during warm-up |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  console.log(md);
  // Written like the other benchmarks' figures (bench/results/README.md); npm run bench:prune keeps the newest.
  const dir = join(process.cwd(), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = date.replace(/[:.]/g, '-');
  writeFileSync(join(dir, `slow-calls-${stamp}.json`), JSON.stringify({ date, rates: RATES, rows }, null, 2));
  writeFileSync(join(dir, `slow-calls-${stamp}.md`), md);
  console.log(`wrote bench/results/slow-calls-${stamp}.{json,md}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
