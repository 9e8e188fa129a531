/**
 * Sizes and connections of the suite, from the environment. The defaults fit the whole suite in
 * about 15 minutes on a 2-core box; BENCH_QUICK=1 shrinks everything to a smoke run.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

const QUICK = process.env.BENCH_QUICK === '1';
const SCALE = Number(process.env.BENCH_SCALE ?? 1);

function int(name: string, full: number, quick: number): number {
  const raw = process.env[name];
  if (raw !== undefined && raw !== '') return Number(raw);
  return Math.round((QUICK ? quick : full) * SCALE);
}

/** The repository root (results go to its bench/results), found upwards from the compiled file. */
function repoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir))
    if (existsSync(join(dir, 'package.json'))) return dir;
  return process.cwd();
}

export const config = {
  quick: QUICK,
  root: repoRoot(__dirname),
  /** The build whose apps Tickwork runs: the dist next to this compiled file unless told otherwise. */
  tickworkDist: process.env.TICKWORK_BENCH_DIST ?? join(__dirname, '..', '..'),
  adminDatabaseUrl: process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  redis: {
    host: process.env.BENCH_REDIS_HOST ?? '127.0.0.1',
    port: Number(process.env.BENCH_REDIS_PORT ?? 6379),
    /** A database index of its own: the suite flushes only this one. */
    db: Number(process.env.BENCH_REDIS_DB ?? 5),
    /**
     * Tuned BullMQ runs with Redis's append-only file fsynced every second (PostgreSQL runs with
     * synchronous_commit on, Kafka with acks=all); 0 leaves Redis's persistence as configured.
     */
    tunedAof: process.env.BENCH_BULLMQ_AOF !== '0',
  },
  /**
   * ANALYZE a PostgreSQL-backed system's jobs table once a herd is stored, as autovacuum would have
   * by T0 for a herd created well ahead (0: leave it to autovacuum; see bench/suite/README.md).
   */
  analyzeHerd: process.env.BENCH_HERD_ANALYZE !== '0',
  /** PostgreSQL with autovacuum on and JIT off for the run (0: leave it as configured); see databases.ts. */
  pgSettings: process.env.BENCH_PG_SETTINGS !== '0',
  kafkaBrokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
  schemaRegistryUrl: process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7',
  kafkaLogDir: process.env.BENCH_KAFKA_LOG_DIR ?? join(repoRoot(__dirname), '.stack', 'kafka', 'data'),
  /** Where results go instead of bench/results (experiments that are not to overwrite the committed run). */
  resultsDir: process.env.BENCH_RESULTS_DIR || undefined,
  /** Which systems and workloads to run (comma lists), e.g. BENCH_ONLY=tickwork,bullmq BENCH_WORKLOADS=W2,W3. */
  only: process.env.BENCH_ONLY?.split(',').filter(Boolean),
  workloads: (process.env.BENCH_WORKLOADS ?? 'W1,W2,W3,W4,W5').split(',').filter(Boolean),
  /** Total handler concurrency per system, split over its two worker processes. */
  concurrency: 100,
  payloadBytes: 200,
  w1: {
    stored: int('BENCH_W1_STORED', 1_000_000, 20_000),
    // 9M rows of bulk load: about 1.5 minutes of the suite on a 2-core box.
    grownTo: int('BENCH_W1_GROW', 10_000_000, 60_000),
    due: int('BENCH_W1_DUE', 1_000, 200),
    peerPreload: int('BENCH_W1_PEER_PRELOAD', 1_000_000, 20_000),
  },
  w2: {
    small: int('BENCH_W2_SMALL', 10_000, 1_000),
    large: int('BENCH_W2_LARGE', 100_000, 2_000),
    runs: Number(process.env.BENCH_RUNS ?? (QUICK ? 1 : 3)),
    /** Measured runs of the large herd (after the small herd's runs, which warm it up). */
    largeRuns: Number(process.env.BENCH_W2_LARGE_RUNS ?? (QUICK ? 1 : 3)),
    warmups: Number(process.env.BENCH_WARMUPS ?? (QUICK ? 0 : 1)),
    /** A herd that has not run this long after T0 (at least; 1 ms per job up to 60 s) counts as not drained. */
    deadlineMs: Number(process.env.BENCH_W2_DEADLINE_MS ?? (QUICK ? 6_000 : 15_000)),
  },
  w3: {
    steps: (process.env.BENCH_W3_STEPS ?? (QUICK ? '1000' : '2500,5000,10000,20000')).split(',').map(Number),
    stepSeconds: Number(process.env.BENCH_W3_SECONDS ?? (QUICK ? 3 : 10)),
    /** An unmeasured step at the first rate before the measured ones: every system starts W3 warm. */
    warmupSeconds: Number(process.env.BENCH_W3_WARMUP_SECONDS ?? (QUICK ? 1 : 5)),
  },
  w4: {
    background: int('BENCH_W4_BACKGROUND', 1_000_000, 20_000),
    herd: int('BENCH_W4_HERD', 10_000, 1_000),
    /** An unmeasured herd before the measured one (after the idle window): every system runs it warm. */
    warmupHerd: int('BENCH_W4_WARMUP_HERD', 10_000, 1_000),
    idleSeconds: Number(process.env.BENCH_W4_IDLE_SECONDS ?? (QUICK ? 3 : 20)),
    /** Every system's processes run this long before the idle window opens. */
    settleSeconds: Number(process.env.BENCH_W4_SETTLE_SECONDS ?? (QUICK ? 1 : 5)),
  },
  w5: {
    schedules: int('BENCH_W5_SCHEDULES', 10_000, 500),
    /** Every 5 s: a second-level pattern every system that has one can express. */
    pattern: process.env.BENCH_W5_PATTERN ?? '*/5 * * * * *',
    periodMs: 5_000,
    seconds: Number(process.env.BENCH_W5_SECONDS ?? (QUICK ? 5 : 15)),
    /** An unmeasured herd before the schedules are created: every system starts W5 warm. */
    warmupHerd: int('BENCH_W5_WARMUP_HERD', 2_000, 500),
  },
};

export type SuiteConfig = typeof config;
