/**
 * npm run bench:scheduler — one scheduler instance against a herd.
 * Loads BENCH_TOTAL jobs (default 1,000,000) of which BENCH_DUE (default 100,000) are due at the
 * same second, then measures: due-scan latency with 100k and with 1M jobs stored, claim+enqueue
 * throughput of one real scheduler process, and lateness (enqueued_at − scheduled_for).
 * Prints the figures and writes bench/results/scheduler-<date>.{json,md}.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_POLICIES, policiesToWire, scheduleToWire, shardOf, targetToWire } from '@tickwork/domain';
import { createPool, ensureDatabase, migrate, type Pool } from '@tickwork/store';
import { dueScanMs } from './due-scan-timer';
import { boxSpeedMs, describeBoxSpeed } from './box-speed';

const TOTAL = Number(process.env.BENCH_TOTAL ?? 1_000_000);
const DUE = Number(process.env.BENCH_DUE ?? 100_000);
const SHARDS = Number(process.env.BENCH_SHARDS ?? 12);
// Compiled to <out>/bench/scheduler.js: the apps are built beside it, the results go to the repository.
const OUT = join(__dirname, '..');
const ROOT = process.cwd();
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const dbName = `tickwork_bench_sched_${Date.now()}`;
const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const databaseUrl = adminUrl.replace(/\/[^/]*$/, `/${dbName}`);
const prefix = `bench.sched.${Date.now()}`;

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function load(
  pool: Pool,
  from: number,
  to: number,
  at: (i: number) => Date,
  tenants: number,
): Promise<void> {
  const schedule = JSON.stringify(scheduleToWire({ kind: 'once', at: new Date(0) }));
  const target = JSON.stringify(
    targetToWire({ type: 'kafka', topic: `${prefix}.sink`, key: null, headers: {} }),
  );
  const policies = JSON.stringify(policiesToWire(DEFAULT_POLICIES));
  for (let start = from; start < to; start += 10_000) {
    const ids: string[] = [];
    const shards: number[] = [];
    const tenantIds: string[] = [];
    const ats: Date[] = [];
    for (let i = start; i < Math.min(to, start + 10_000); i++) {
      const id = `job-${i}`;
      ids.push(id);
      shards.push(shardOf(id, SHARDS));
      tenantIds.push(`tenant-${i % tenants}`);
      ats.push(at(i));
    }
    await pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
       SELECT v.id, v.tenant, v.shard, 'once', $5::jsonb, 'SCHEDULED', v.at, v.at, $6::jsonb, '{"bench":true}'::jsonb, $7::jsonb
         FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[]) AS v(id, tenant, shard, at)`,
      [ids, tenantIds, shards, ats, schedule, target, policies],
    );
  }
  await pool.query('ANALYZE jobs');
}

async function main(): Promise<void> {
  const speedAtStart = boxSpeedMs();
  await ensureDatabase(databaseUrl);
  const pool = createPool(databaseUrl, { max: 4, statementTimeoutMs: 600_000 });
  await migrate(pool);
  const t0 = new Date(Math.ceil((Date.now() + 5_000) / 1000) * 1000);
  const far = new Date(Date.now() + 365 * 86_400_000);
  const TENANTS = 20;

  console.log(`loading ${DUE} due jobs ...`);
  let t = Date.now();
  // Due jobs are loaded with a due time in the past for the scan measurement, then moved to T0.
  await load(pool, 0, DUE, () => new Date(Date.now() - 1_000), TENANTS);
  const loadDueMs = Date.now() - t;
  const scanSmall = await dueScanMs(pool, SHARDS, 2_000, 7);
  console.log(`due-scan with ${DUE} stored: p50 ${pct(scanSmall, 50).toFixed(1)} ms`);

  console.log(`loading ${TOTAL - DUE} future jobs ...`);
  t = Date.now();
  await load(pool, DUE, TOTAL, () => far, TENANTS);
  const loadRestMs = Date.now() - t;
  const scanLarge = await dueScanMs(pool, SHARDS, 2_000, 7);
  console.log(`due-scan with ${TOTAL} stored: p50 ${pct(scanLarge, 50).toFixed(1)} ms`);

  // A freshly bulk-loaded table is not what a scheduler meets in production: this box runs
  // PostgreSQL with autovacuum off, and 1M inserted rows leave a checkpoint due. Vacuum (hint
  // bits, visibility map, statistics) and checkpoint before the herd, as a live store would be.
  await pool.query('VACUUM (ANALYZE) jobs');
  await pool.query('CHECKPOINT');
  const herdAt = new Date(Math.ceil((Date.now() + 8_000) / 1000) * 1000);
  await pool.query(
    `UPDATE jobs SET next_run_at = $1, next_nominal_at = $1 WHERE next_run_at < now() + interval '1 day'`,
    [herdAt],
  );
  void t0;

  const env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: databaseUrl,
    TICKWORK_TOPIC_PREFIX: prefix,
    TICKWORK_SHARDS: String(SHARDS),
    TICKWORK_CLAIM_BATCH: process.env.BENCH_BATCH ?? '5000',
    ...(process.env.BENCH_LANES ? { TICKWORK_CLAIM_LANES: process.env.BENCH_LANES } : {}),
    TICKWORK_TICK_MS: '100',
    TICKWORK_SCHEDULER_PORT: '0',
    TICKWORK_INSTANCE_ID: 'bench-scheduler',
    KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092',
    SCHEMA_REGISTRY_URL: process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7',
  };
  console.log(`starting one scheduler; herd of ${DUE} due at ${herdAt.toISOString()}`);
  // BENCH_NODE_FLAGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the scheduler process.
  const flags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((f) => f.length > 0);
  const child = spawn(process.execPath, [...flags, join(OUT, 'apps', 'scheduler', 'src', 'main.js')], {
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    const deadline = Date.now() + 180_000;
    for (;;) {
      const { rows } = await pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM fire_log WHERE enqueued_at IS NOT NULL`,
      );
      if (Number(rows[0]!.n) >= DUE) break;
      if (Date.now() > deadline) throw new Error(`only ${rows[0]!.n} of ${DUE} fires enqueued after 180 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    child.kill('SIGTERM');
  }
  const { rows: lat } = await pool.query<{ ms: number }>(
    `SELECT extract(epoch FROM (enqueued_at - scheduled_for)) * 1000 AS ms FROM fire_log ORDER BY 1`,
  );
  const lateness = lat.map((r) => Number(r.ms));
  const { rows: span } = await pool.query<{ first: Date; last: Date; lastc: Date }>(
    `SELECT min(claimed_at) AS first, max(enqueued_at) AS last, max(claimed_at) AS lastc FROM fire_log`,
  );
  const drainMs = span[0]!.last.getTime() - herdAt.getTime();
  const throughput = DUE / ((span[0]!.last.getTime() - span[0]!.first.getTime()) / 1000);

  const results = {
    benchmark: 'scheduler',
    host: hostname(),
    boxSpeedMs: { start: speedAtStart, end: boxSpeedMs() },
    date: new Date().toISOString(),
    setup: {
      totalJobs: TOTAL,
      dueJobs: DUE,
      shards: SHARDS,
      tenants: TENANTS,
      claimBatch: Number(env.TICKWORK_CLAIM_BATCH),
      instances: 1,
    },
    loadRowsPerSec: Math.round(TOTAL / ((loadDueMs + loadRestMs) / 1000)),
    dueScanMs: {
      [`stored_${DUE}`]: { p50: pct(scanSmall, 50), max: scanSmall[scanSmall.length - 1] },
      [`stored_${TOTAL}`]: { p50: pct(scanLarge, 50), max: scanLarge[scanLarge.length - 1] },
    },
    claimEnqueueFiresPerSec: Math.round(throughput),
    herdDrainMs: drainMs,
    latenessMs: { p50: pct(lateness, 50), p99: pct(lateness, 99), max: lateness[lateness.length - 1] },
  };
  await pool.end();
  const admin = createPool(adminUrl, { max: 1 });
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  await admin.end();

  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const md = [
    `# bench:scheduler — ${results.date} on ${results.host}`,
    '',
    `One scheduler instance, ${SHARDS} shards, ${TENANTS} tenants, claim batch ${results.setup.claimBatch}; Kafka, PostgreSQL and the registry on the same 2-core box.`,
    '',
    describeBoxSpeed(results.boxSpeedMs.start, results.boxSpeedMs.end),
    '',
    '| metric | value |',
    '|---|---|',
    `| jobs stored / due at one second | ${TOTAL} / ${DUE} |`,
    `| due-scan (batch of 2,000) with ${DUE} stored, p50 | ${results.dueScanMs[`stored_${DUE}`]!.p50.toFixed(1)} ms |`,
    `| due-scan (batch of 2,000) with ${TOTAL} stored, p50 | ${results.dueScanMs[`stored_${TOTAL}`]!.p50.toFixed(1)} ms |`,
    `| claim + enqueue throughput | ${results.claimEnqueueFiresPerSec} fires/s |`,
    `| herd drained (last enqueue − T0) | ${(drainMs / 1000).toFixed(2)} s |`,
    `| lateness (enqueued − scheduled) p50 / p99 / max | ${results.latenessMs.p50.toFixed(0)} / ${results.latenessMs.p99.toFixed(0)} / ${results.latenessMs.max!.toFixed(0)} ms |`,
    `| bulk load | ${results.loadRowsPerSec} rows/s |`,
    '',
  ].join('\n');
  writeFileSync(join(dir, `scheduler-${stamp}.json`), JSON.stringify(results, null, 2));
  writeFileSync(join(dir, `scheduler-${stamp}.md`), md);
  console.log(md);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
