/**
 * npm run bench:console — every request the console makes, against a real API process with
 * BENCH_TOTAL jobs stored (default 1,000,000), with runs, fires, skips and dead letters in the
 * ledgers. Each request is made BENCH_REPEAT times (default 60) after a warm-up; prints p50/p99
 * per request and writes bench/results/console-<date>.{json,md}. No scheduler or executor runs:
 * the ledgers are seeded, so the figures are the API's and PostgreSQL's alone.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_POLICIES, policiesToWire, targetToWire } from '@tickwork/domain';
import { createPool, ensureDatabase, migrate, type Pool } from '@tickwork/store';
import { boxSpeedMs, describeBoxSpeed } from './box-speed';

const TOTAL = Number(process.env.BENCH_TOTAL ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 300_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 60);
const TENANTS = 20;
const SHARDS = 12;
const OUT = join(__dirname, '..');
const ROOT = process.cwd();
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
// BENCH_DB_NAME with BENCH_KEEP_DB=1 keeps a seeded database for the next run, which then skips seeding.
const dbName = process.env.BENCH_DB_NAME ?? `tickwork_bench_console_${Date.now()}`;
const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const databaseUrl = adminUrl.replace(/\/[^/]*$/, `/${dbName}`);
const TENANT_TOKEN = 'bench-console-tenant-0123456789abcdef';
const ADMIN_TOKEN = 'bench-console-admin-0123456789abcdef';
const sha = (t: string) => createHash('sha256').update(t).digest('hex');

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

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

/** 1M jobs in one statement per 100k: cron and interval, 20 tenants, labels, 8% paused, 10% Kafka targets. */
async function seed(pool: Pool): Promise<void> {
  const webhook = JSON.stringify(
    targetToWire({
      type: 'webhook',
      url: 'https://example.com/hook',
      method: 'POST',
      headers: {},
      timeoutMs: 10_000,
      successStatus: { min: 200, max: 299 },
    }),
  );
  const kafka = JSON.stringify(targetToWire({ type: 'kafka', topic: 'bench.sink', key: null, headers: {} }));
  const policies = JSON.stringify(policiesToWire(DEFAULT_POLICIES));
  for (let from = 0; from < TOTAL; from += 100_000) {
    const to = Math.min(TOTAL, from + 100_000) - 1;
    // Shards are i mod 12 here (no scheduler reads them in this benchmark).
    await pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, time_zone, status, next_run_at, next_nominal_at,
                         target, payload, policies, labels, fires_count)
       SELECT 'job-' || lpad(i::text, 7, '0'), 'tenant-' || (i % ${TENANTS}), i % ${SHARDS},
              CASE WHEN i % 2 = 0 THEN 'cron' ELSE 'interval' END,
              CASE WHEN i % 2 = 0
                   THEN jsonb_build_object('kind', 'cron', 'expression', (i % 60) || ' 9 * * MON-FRI', 'time_zone', 'Europe/London',
                                           'dst_gap', 'AUTO', 'dst_repeat', 'AUTO')
                   ELSE jsonb_build_object('kind', 'interval', 'every_ms', 3600000, 'anchor', '2026-01-01T00:00:00.000Z') END,
              CASE WHEN i % 2 = 0 THEN 'Europe/London' ELSE 'UTC' END,
              CASE WHEN i % 100 < 8 THEN 'PAUSED' ELSE 'SCHEDULED' END,
              now() + (i % 86400) * interval '1 second', now() + (i % 86400) * interval '1 second',
              CASE WHEN i % 10 = 0 THEN $2::jsonb ELSE $1::jsonb END,
              jsonb_build_object('n', i), $3::jsonb,
              jsonb_build_object('team', (ARRAY['data', 'web', 'billing', 'ops'])[1 + i % 4], 'env', CASE WHEN i % 3 = 0 THEN 'prod' ELSE 'staging' END),
              i % 50
         FROM generate_series($4::int, $5::int) AS i`,
      [webhook, kafka, policies, from, to],
    );
    process.stdout.write(`  ${to + 1} jobs\r`);
  }
  console.log('');
  // The ledgers: RUNS runs (and their fires) over the last day, 2% dead-lettered, 1% with retries.
  const batch = await pool.query<{ batch_id: string }>(
    `INSERT INTO fire_batches (shard, trigger, claimed_by, fires, enqueued_at) VALUES (0, 'SCHEDULE', 'bench', $1, now())
     RETURNING batch_id`,
    [RUNS],
  );
  const batchId = batch.rows[0]!.batch_id;
  for (let from = 0; from < RUNS; from += 100_000) {
    const to = Math.min(RUNS, from + 100_000) - 1;
    await pool.query(
      `INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, scheduled_for, trigger, claimed_by, claimed_at, event, batch_id)
       SELECT 'job-' || lpad((i % ${TOTAL})::text, 7, '0'), 1 + i / ${TOTAL}, 'tenant-' || (i % ${TENANTS}), i % ${SHARDS},
              now() - (i % 86400) * interval '1 second', now() - (i % 86400) * interval '1 second', 'SCHEDULE', 'bench',
              now() - (i % 86400) * interval '1 second', '{}'::jsonb, $3::bigint
         FROM generate_series($1::int, $2::int) AS i`,
      [from, to, batchId],
    );
    await pool.query(
      `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, attempt, status,
                             started_at, finished_at, http_status, error, created_at, updated_at)
       SELECT 'job-' || lpad((i % ${TOTAL})::text, 7, '0'), 1 + i / ${TOTAL}, 'tenant-' || (i % ${TENANTS}),
              'job-' || lpad((i % ${TOTAL})::text, 7, '0') || ':' || (1 + i / ${TOTAL}),
              t, t, CASE WHEN i % 100 = 1 THEN 2 ELSE 1 END,
              CASE WHEN i % 50 = 0 THEN 'DEAD_LETTERED' ELSE 'SUCCEEDED' END,
              t + ((20 + (i::bigint * 7919) % 400) * interval '1 millisecond'), t + interval '1 second',
              CASE WHEN i % 50 = 0 THEN 500 ELSE 200 END, CASE WHEN i % 50 = 0 THEN 'HTTP 500' ELSE NULL END, t, t + interval '1 second'
         FROM (SELECT i, now() - (i % 86400) * interval '1 second' AS t FROM generate_series($1::int, $2::int) AS i) s`,
      [from, to],
    );
    process.stdout.write(`  ${to + 1} runs\r`);
  }
  console.log('');
  await pool.query(
    `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences, recorded_at)
     SELECT 'job-' || lpad(i::text, 7, '0'), 'tenant-' || (i % ${TENANTS}), 'MISFIRE_SKIP',
            now() - (i % 86400) * interval '1 second', now() - (i % 86400) * interval '1 second', 1, now()
       FROM generate_series(0, 19999) AS i`,
  );
  // What autovacuum does on a live database: the visibility map lets counts use index-only scans.
  await pool.query('VACUUM ANALYZE');
}

interface Probe {
  readonly name: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly token: string;
  readonly body?: unknown;
}

async function time(url: string, p: Probe): Promise<number> {
  const t = performance.now();
  const res = await fetch(`${url}${p.path}`, {
    method: p.method,
    headers: {
      authorization: `Bearer ${p.token}`,
      ...(p.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: p.body !== undefined ? JSON.stringify(p.body) : undefined,
  });
  await res.arrayBuffer();
  const ms = performance.now() - t;
  if (!res.ok) throw new Error(`${p.name}: ${p.method} ${p.path} answered ${res.status}`);
  return ms;
}

async function main(): Promise<void> {
  const speedAtStart = boxSpeedMs();
  await ensureDatabase(databaseUrl);
  const pool = createPool(databaseUrl, { max: 4, statementTimeoutMs: 900_000 });
  await migrate(pool);
  console.log(`seeding ${TOTAL} jobs and ${RUNS} runs ...`);
  const t = Date.now();
  const have = await pool.query<{ n: string }>('SELECT count(*) AS n FROM jobs');
  const reuse = Number(have.rows[0]?.n) === TOTAL;
  if (reuse) console.log('reusing the seeded database');
  await (reuse ? Promise.resolve() : seed(pool)).catch(async (e: unknown) => {
    await pool.end();
    await dropDatabase();
    throw e;
  });
  const seedMs = Date.now() - t;
  console.log(`seeded in ${(seedMs / 1000).toFixed(0)} s`);

  const port = await freePort();
  const api = spawn(process.execPath, [join(OUT, 'apps', 'api', 'src', 'main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092',
      SCHEMA_REGISTRY_URL: process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7',
      TICKWORK_TOPIC_PREFIX: `bench.console.${Date.now()}`,
      TICKWORK_SHARDS: String(SHARDS),
      TICKWORK_API_PORT: String(port),
      TICKWORK_GRPC_PORT: '0',
      TICKWORK_LOG_LEVEL: 'warn',
      TICKWORK_TENANTS: JSON.stringify({
        tokens: [
          { name: 'bench-tenant', sha256: sha(TENANT_TOKEN), role: 'tenant', tenant: 'tenant-3' },
          { name: 'bench-admin', sha256: sha(ADMIN_TOKEN), role: 'admin' },
        ],
      }),
    },
    stdio: ['ignore', process.env.BENCH_API_LOG ? 'inherit' : 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; ; i++) {
      const ok = await fetch(`${url}/health/ready`)
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) break;
      if (i > 240) throw new Error('the API did not become ready');
      await new Promise((r) => setTimeout(r, 500));
    }
    const T = TENANT_TOKEN;
    const A = ADMIN_TOKEN;
    const job = 'job-0000003'; // tenant-3's, with runs, a fire and a skip
    // The next-page token of page 5 of tenant-3's jobs, to measure a deep page.
    let deep = '';
    for (let i = 0; i < 5; i++) {
      const r = (await (
        await fetch(`${url}/v1/jobs?page_size=25&page_token=${encodeURIComponent(deep)}`, {
          headers: { authorization: `Bearer ${T}` },
        })
      ).json()) as { next_page_token: string };
      deep = r.next_page_token;
    }
    const mid = 'job-0500000';
    const probes: Probe[] = [
      { name: 'whoami', method: 'GET', path: '/v1/whoami', token: T },
      {
        name: 'jobs: first page (tenant)',
        method: 'GET',
        path: '/v1/jobs?page_size=25&include=last_run',
        token: T,
      },
      {
        name: 'jobs: page 6 (tenant)',
        method: 'GET',
        path: `/v1/jobs?page_size=25&include=last_run&page_token=${encodeURIComponent(deep)}`,
        token: T,
      },
      {
        name: 'jobs: label selector team=web,env!=prod',
        method: 'GET',
        path: `/v1/jobs?page_size=25&include=last_run&label_selector=${encodeURIComponent('team=web,env!=prod')}`,
        token: T,
      },
      {
        name: 'jobs: status PAUSED',
        method: 'GET',
        path: '/v1/jobs?page_size=25&include=last_run&status=PAUSED',
        token: T,
      },
      {
        name: 'jobs: target kafka',
        method: 'GET',
        path: '/v1/jobs?page_size=25&include=last_run&target_type=kafka',
        token: T,
      },
      {
        name: 'jobs: id prefix',
        method: 'GET',
        path: '/v1/jobs?page_size=25&include=last_run&job_id_prefix=job-05',
        token: T,
      },
      {
        name: 'jobs: all tenants (admin)',
        method: 'GET',
        path: '/v1/jobs?page_size=25&include=last_run',
        token: A,
      },
      {
        name: 'jobs: all tenants from the middle (admin, prefix)',
        method: 'GET',
        path: `/v1/jobs?page_size=25&include=last_run&job_id_prefix=${mid.slice(0, 8)}`,
        token: A,
      },
      { name: 'job', method: 'GET', path: `/v1/jobs/${job}`, token: T },
      {
        name: 'job: preview 20',
        method: 'POST',
        path: '/v1/schedules/preview',
        token: T,
        body: {
          schedule: { kind: 'cron', expression: '3 9 * * MON-FRI', time_zone: 'Europe/London' },
          count: 20,
        },
      },
      { name: 'job: occurrences', method: 'GET', path: `/v1/jobs/${job}/occurrences?page_size=25`, token: T },
      { name: 'job: runs', method: 'GET', path: `/v1/jobs/${job}/runs?page_size=25`, token: T },
      { name: 'dead letters (tenant)', method: 'GET', path: '/v1/dead-letters?page_size=25', token: T },
      { name: 'dead letters (admin, all)', method: 'GET', path: '/v1/dead-letters?page_size=25', token: A },
      { name: 'lateness: hour (tenant)', method: 'GET', path: '/v1/lateness?window=hour', token: T },
      { name: 'lateness: day (tenant)', method: 'GET', path: '/v1/lateness?window=day', token: T },
      {
        name: 'lateness: day (one job)',
        method: 'GET',
        path: `/v1/lateness?window=day&job_id=${job}`,
        token: T,
      },
      { name: 'lateness: hour (admin, all)', method: 'GET', path: '/v1/lateness?window=hour', token: A },
      { name: 'lateness: day (admin, all)', method: 'GET', path: '/v1/lateness?window=day', token: A },
      { name: 'cluster (admin)', method: 'GET', path: '/v1/cluster', token: A },
    ];
    const rows: { name: string; p50: number; p99: number; max: number }[] = [];
    const all: number[] = [];
    for (const p of probes) {
      for (let i = 0; i < 3; i++) await time(url, p); // warm-up
      const samples: number[] = [];
      for (let i = 0; i < REPEAT; i++) samples.push(await time(url, p));
      samples.sort((a, b) => a - b);
      all.push(...samples);
      const row = {
        name: p.name,
        p50: pct(samples, 50),
        p99: pct(samples, 99),
        max: samples[samples.length - 1]!,
      };
      rows.push(row);
      console.log(
        `${p.name.padEnd(52)} p50 ${row.p50.toFixed(1).padStart(7)} ms   p99 ${row.p99.toFixed(1).padStart(7)} ms`,
      );
    }
    all.sort((a, b) => a - b);
    const overall = { p50: pct(all, 50), p99: pct(all, 99), max: all[all.length - 1]! };
    const speedAtEnd = boxSpeedMs();
    console.log(
      `every console request: p50 ${overall.p50.toFixed(1)} ms, p99 ${overall.p99.toFixed(1)} ms (${all.length} requests)`,
    );
    const result = {
      at: new Date().toISOString(),
      host: hostname(),
      jobs: TOTAL,
      runs: RUNS,
      repeat: REPEAT,
      seedSeconds: Math.round(seedMs / 1000),
      boxSpeedMs: { start: speedAtStart, end: speedAtEnd },
      overall,
      requests: rows,
    };
    const dir = join(ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `console-${stamp}.json`), `${JSON.stringify(result, null, 2)}\n`);
    const md = [
      `# Console requests with ${TOTAL.toLocaleString('en')} jobs stored`,
      '',
      `${result.at}, ${hostname()}. ${RUNS.toLocaleString('en')} runs and fires over the last day, 20,000 skipped occurrences, ` +
        `${TENANTS} tenants (the tenant token sees ${(TOTAL / TENANTS).toLocaleString('en')} jobs). Each request ${REPEAT} times, ` +
        'one at a time, after 3 warm-ups, against one API process (no scheduler or executor running).',
      describeBoxSpeed(speedAtStart, speedAtEnd),
      '',
      `**Every console request: p50 ${overall.p50.toFixed(1)} ms, p99 ${overall.p99.toFixed(1)} ms, max ${overall.max.toFixed(1)} ms.**`,
      '',
      '| request | p50 ms | p99 ms | max ms |',
      '|---|---:|---:|---:|',
      ...rows.map((r) => `| ${r.name} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.max.toFixed(1)} |`),
      '',
    ].join('\n');
    writeFileSync(join(dir, `console-${stamp}.md`), md);
    console.log(`wrote bench/results/console-${stamp}.{json,md}`);
  } finally {
    api.kill('SIGTERM');
    await pool.end();
    await dropDatabase();
  }
}

async function dropDatabase(): Promise<void> {
  if (process.env.BENCH_KEEP_DB) return;
  const admin = createPool(adminUrl, { max: 1 });
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => undefined);
  await admin.end();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
