/**
 * npm run bench — Tickwork side by side with BullMQ, pg-boss and Graphile Worker on this box.
 * Runs W2 (herds), W3 (rate steps), W1/W4 (store scale, idle cost) and W5 (recurring), each
 * system in turn (W2's large herd interleaved across systems) with the same budget (2 worker
 * processes, handler concurrency 100), and writes bench/results/<date>-<host>.{md,json} and PNG
 * charts. BENCH_QUICK=1 is a smoke run of a few minutes;
 * the sizes and the selection are overridable (see config.ts and bench/suite/README.md).
 */
import { cpus, hostname, totalmem } from 'node:os';
import { BullmqContender } from './bullmq';
import { config } from './config';
import { applySuiteSettings } from './databases';
import type { Contender } from './contender';
import { GraphileContender } from './graphile';
import { ExecutionRouter } from './lateness';
import { PgBossContender } from './pgboss';
import { noteContender, writeReport, type SuiteResults } from './report';
import { peerStoreScale, tickworkStoreScale } from './store-scale';
import { TickworkContender } from './tickwork';
import { herd, medianRun, rateStep, recurring, type HerdResult } from './workloads';
import { boxSpeedMs } from '../box-speed';

// Each line of the log carries the time since the suite began: the log shows where its time goes.
const suiteStart = Date.now();
const print = console.log.bind(console);
console.log = (...args: unknown[]) => {
  const s = Math.floor((Date.now() - suiteStart) / 1000);
  print(`[${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}]`, ...args);
};

const router = new ExecutionRouter();
const wanted = (c: Contender) => !config.only || config.only.includes(c.system);
/** The contenders of the full comparison: Tickwork, and each peer at its high-throughput settings. */
const primary = (): Contender[] =>
  [
    new TickworkContender('kafka'),
    new BullmqContender(true),
    new PgBossContender(true),
    new GraphileContender(true),
  ].filter(wanted);

async function w2(results: SuiteResults): Promise<void> {
  const all: [Contender, boolean][] = [
    [new TickworkContender('kafka'), true],
    [new TickworkContender('webhook'), true],
    [new BullmqContender(false), false],
    [new BullmqContender(true), true],
    [new PgBossContender(false), false],
    [new PgBossContender(true), true],
    [new GraphileContender(false), false],
    [new GraphileContender(true), true],
  ];
  const { small, large, runs, warmups } = config.w2;
  const forLarge: Contender[] = [];
  // A smoke run skips the defaults variants: they only add waiting.
  for (const [c, isPrimary] of all.filter(([c, p]) => wanted(c) && (p || !config.quick))) {
    console.log(`W2 ${c.label}`);
    const entry: SuiteResults['w2'][string] = { small: [] };
    results.w2[c.label] = entry;
    await c.start(router.record);
    try {
      noteContender(results, c);
      // Defaults get one measured run: they show the out-of-the-box behaviour, not the best case.
      const plan = isPrimary
        ? [...Array<boolean>(warmups).fill(true), ...Array<boolean>(runs).fill(false)]
        : [false];
      for (let i = 0; i < plan.length; i++) {
        const r = await herd(c, router, small, { warmup: plan[i] });
        logHerd(r);
        entry.small.push(r);
        if (r.drained) continue;
        // Jobs left in the system would run during the next herd: start afresh. A system that
        // cannot drain the herd before the deadline gets one measured run, not three.
        await c.stop();
        await c.start(router.record);
        if (r.warmup) plan.splice(i + 2);
        else break;
      }
      const measured = entry.small.filter((r) => !r.warmup);
      const best = Math.min(...measured.map((r) => (r.drained ? r.drainMs : Infinity)));
      const projectedMs = (best * large) / small;
      if (!isPrimary) entry.largeSkipped = 'defaults variant: small herd only';
      else if (c.label === 'Tickwork (webhook target)')
        entry.largeSkipped =
          'the webhook target is compared on the small herd; the large herd runs with the Kafka target';
      else if (!Number.isFinite(best) || projectedMs > 90_000)
        entry.largeSkipped = `the ${small} herd ${Number.isFinite(best) ? `drained at ${Math.round((small * 1000) / best)}/s, so ${large} would take ~${Math.round(projectedMs / 1000)} s` : 'did not drain in time'}; skipped to keep the suite within its budget`;
      else forLarge.push(c);
    } finally {
      await c.stop();
    }
    await writeReport(results);
  }
  await largeHerds(results, forLarge);
}

/**
 * The large herd, interleaved: round i runs every system's i-th herd in turn, so a change in the
 * shared box's speed during the suite falls on all systems alike rather than on whichever ran
 * first. All of them run (idle) throughout; each is warmed up by one small herd after its start.
 */
async function largeHerds(results: SuiteResults, contenders: Contender[]): Promise<void> {
  if (contenders.length === 0) return;
  console.log(`W2 large herd, interleaved: ${contenders.map((c) => c.label).join(', ')}`);
  const started: Contender[] = [];
  try {
    for (const c of contenders) {
      await c.start(router.record);
      started.push(c);
      results.w2[c.label]!.largeRuns = [];
    }
    for (const c of contenders) {
      const w = await herd(c, router, config.w2.small, { warmup: true, vacuumAfter: true });
      console.log(`  ${c.label}: warm-up herd ${w.size}, p99 ${w.lateness.p99} ms`);
    }
    let active = [...contenders];
    for (let round = 0; round < config.w2.largeRuns && active.length > 0; round++) {
      for (const c of [...active]) {
        const r = await herd(c, router, config.w2.large, { deadlineMs: 90_000, vacuumAfter: true });
        console.log(`  round ${round + 1}, ${c.label}:`);
        logHerd(r);
        results.w2[c.label]!.largeRuns!.push(r);
        if (r.drained) continue;
        // Jobs it left would run during its next herd: no more runs for it; the others go on
        // without its leftovers competing for the box.
        active = active.filter((x) => x !== c);
        await c.stop();
        started.splice(started.indexOf(c), 1);
      }
    }
  } finally {
    for (const c of started) await c.stop();
  }
  for (const c of contenders) results.w2[c.label]!.large = medianRun(results.w2[c.label]!.largeRuns!);
  await writeReport(results);
}

function logHerd(r: HerdResult): void {
  const l = r.lateness;
  console.log(
    `  ${r.warmup ? 'warm-up ' : ''}herd ${r.size}${r.settle && r.settle.waitedMs > 1_500 ? ` (box quiet after ${(r.settle.waitedMs / 1000).toFixed(1)} s${r.settle.quiet ? '' : ': NOT quiet'})` : ''}: stored at ${r.preloadPerSec}/s, ${r.drained ? `drained in ${(r.drainMs / 1000).toFixed(2)} s` : `NOT drained (${l.missing} missing)`}, lateness p50 ${l.p50} p99 ${l.p99} max ${l.max} ms, dup ${l.duplicates}`,
  );
}

async function w3(results: SuiteResults): Promise<void> {
  for (const c of primary()) {
    console.log(`W3 ${c.label}`);
    results.w3[c.label] = [];
    await c.start(router.record);
    noteContender(results, c);
    try {
      // Processes start fresh for W3: one unmeasured step first, as every workload has a warm-up.
      const first = config.w3.steps[0];
      if (first !== undefined && config.w3.warmupSeconds > 0) {
        const w = await rateStep(c, router, first, config.w3.warmupSeconds);
        console.log(`  warm-up ${first}/s for ${config.w3.warmupSeconds} s: p99 ${w.lateness.p99} ms`);
      }
      for (const perSec of config.w3.steps) {
        const step = await rateStep(c, router, perSec, config.w3.stepSeconds);
        results.w3[c.label]!.push(step);
        console.log(
          `  ${perSec}/s: achieved ${step.achievedPerSec}/s, p99 ${step.lateness.p99} ms, missing ${step.lateness.missing}, ${step.keptUp ? 'kept up' : 'FELL BEHIND'}`,
        );
        // Higher steps cannot keep up either; the next contender gets the time.
        if (!step.keptUp) break;
      }
    } finally {
      await c.stop();
    }
    await writeReport(results);
  }
}

async function w1w4(results: SuiteResults): Promise<void> {
  for (const c of primary()) {
    console.log(`W1/W4 ${c.label}`);
    results.w1w4[c.label] =
      c instanceof TickworkContender ? await tickworkStoreScale(c, router) : await peerStoreScale(c, router);
    noteContender(results, c);
    await writeReport(results);
  }
}

async function w5(results: SuiteResults): Promise<void> {
  for (const c of primary()) {
    if (!c.recurring) {
      results.w5[c.label] = {
        skipped: `${c.system} has only minute-level cron (no second-level pattern); not measurable in a short run`,
      };
      continue;
    }
    console.log(`W5 ${c.label}`);
    await c.start(router.record);
    noteContender(results, c);
    try {
      // Processes start fresh for W5: one unmeasured herd first, as every workload has a warm-up.
      if (config.w5.warmupHerd > 0) {
        const w = await herd(c, router, config.w5.warmupHerd, { warmup: true });
        console.log(`  warm-up herd ${config.w5.warmupHerd}: p99 ${w.lateness.p99} ms`);
      }
      const r = await recurring(c, router, config.w5);
      results.w5[c.label] = r;
      console.log(
        `  ${r.schedules} × ${r.pattern}: created in ${r.createMs} ms; ${r.lateness.executed}/${r.lateness.expected} occurrences, p99 ${r.lateness.p99} ms, dup ${r.lateness.duplicates}`,
      );
    } finally {
      await c.stop();
    }
    await writeReport(results);
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const results: SuiteResults = {
    boxSpeedMs: { start: boxSpeedMs() },
    date: new Date().toISOString(),
    host: hostname(),
    cpus: cpus().length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    quick: config.quick,
    config: {
      w1: config.w1,
      w2: config.w2,
      w3: config.w3,
      w4: config.w4,
      w5: config.w5,
      analyzeHerd: config.analyzeHerd,
    },
    contenders: {},
    w2: {},
    w3: {},
    w1w4: {},
    w5: {},
    durationsSec: {},
  };
  const workloads: [string, (r: SuiteResults) => Promise<void>][] = [
    ['W2', w2],
    ['W3', w3],
    ['W1', w1w4],
    ['W5', w5],
  ];
  const postgres = await applySuiteSettings(config.pgSettings);
  results.postgres = postgres.note;
  try {
    for (const [name, run] of workloads) {
      if (!config.workloads.includes(name) && !(name === 'W1' && config.workloads.includes('W4'))) continue;
      const t = Date.now();
      await run(results);
      results.durationsSec[name === 'W1' ? 'W1/W4' : name] = Math.round((Date.now() - t) / 1000);
    }
  } finally {
    await postgres.restore();
  }
  results.durationsSec.total = Math.round((Date.now() - started) / 1000);
  results.boxSpeedMs.end = boxSpeedMs();
  const files = await writeReport(results, { charts: true });
  console.log(`\nsuite took ${results.durationsSec.total} s; wrote ${files.join(', ')}`);
}

main()
  .then(() => process.exit(0))
  .catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
