/**
 * The workloads, written once against the Contender interface: W2 herds, W3 open-loop rate
 * steps, W4 idle cost and a herd over a big background, W5 recurring schedules. W1 (store scale)
 * lives in store-scale.ts: its Tickwork side scans the store itself.
 */
import { boxSpeedMs } from '../box-speed';
import { config } from './config';
import { maintainDatabase } from './databases';
import type { BenchJob, Contender, StageLateness } from './contender';
import { LatenessRecorder, type ExecutionRouter, type LatenessSummary } from './lateness';
import { quietBox, ResourceSampler, type ResourceSummary } from './sampler';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let nextRun = 1;
/** Every run gets its own number: job ids never repeat within a contender's state. */
export const newRun = () => nextRun++;

export interface HerdResult {
  readonly size: number;
  readonly warmup: boolean;
  /** How long storing the herd took, and whether it finished before T0. */
  readonly preloadMs: number;
  readonly preloadPerSec: number;
  readonly preloadOverrunMs: number;
  /** Last execution start − T0; NaN when it did not drain before the deadline. */
  readonly drainMs: number;
  readonly drained: boolean;
  readonly lateness: LatenessSummary;
  readonly resources: ResourceSummary;
  /** Tickwork only: where the lateness accrues along its path. */
  readonly stages?: StageLateness;
  /**
   * PostgreSQL-backed systems: how long the ANALYZE of the jobs table after storing the herd took,
   * and the VACUUM of the database after it, where one ran (absent before 2026-12-02 08:45).
   */
  readonly maintenanceMs?: { readonly analyze?: number; readonly vacuum?: number };
  /**
   * bench/box-speed.ts just before the herd was stored: the shared box's speed changes within a
   * run too, so each system's herds carry their own (absent in results before 2026-12-02).
   */
  readonly boxSpeedMs?: number;
  /**
   * How long the herd waited for the box to go quiet before it was stored (a system's trailing
   * work, or another's, is not measured in it), and whether it did within 30 s (absent before
   * 2026-12-02 03:30).
   */
  readonly settle?: { waitedMs: number; quiet: boolean };
}

/** The measured run with the median drain (runs that did not drain count as slowest). */
export function medianRun(runs: readonly HerdResult[]): HerdResult | undefined {
  const m = runs.filter((r) => !r.warmup).sort((a, b) => (a.drainMs || Infinity) - (b.drainMs || Infinity));
  return m[Math.floor((m.length - 1) / 2)];
}

/** What a contender's herds have shown about its insert rate, to pick the next herd's lead time. */
const insertRates = new Map<string, number>();

/** N one-shot jobs all due at one T0, stored beforehand; waits until all ran or the deadline. */
export async function herd(
  c: Contender,
  router: ExecutionRouter,
  size: number,
  opts: { warmup?: boolean; deadlineMs?: number; vacuumAfter?: boolean } = {},
): Promise<HerdResult> {
  const settle = await quietBox();
  const speed = boxSpeedMs(1);
  const run = newRun();
  const recorder = router.open(run, size);
  const rate = insertRates.get(c.label) ?? 10_000;
  // Enough lead for the whole herd to be stored before it is due (1.5× the insert time seen so
  // far), and for a PostgreSQL-backed system, analyzed.
  const lead = 1_500 + (1.5 * size * 1000) / rate + (c.database && config.analyzeHerd ? 1_000 : 0);
  const t0 = Math.ceil((Date.now() + lead) / 1000) * 1000;
  const sampler = new ResourceSampler(
    [...c.processes(), { name: 'bench driver', pid: process.pid }],
    c.kafkaTopicPrefix?.(),
  );
  sampler.start();
  const started = Date.now();
  const jobs: BenchJob[] = Array.from({ length: size }, (_, index) => ({ run, index, dueAt: t0 }));
  await c.enqueue(jobs);
  const preloadMs = Date.now() - started;
  // A herd is created well ahead of its time in production, and by T0 autovacuum has analyzed the
  // table it went into; the suite stores it seconds before, so it runs that ANALYZE itself. Without
  // it a planner may still see the nearly empty table of before (Graphile Worker's fetch then sorts
  // every due job for each batch of 100: see bench/suite/README.md).
  const analyzeMs =
    c.database && config.analyzeHerd
      ? await maintainDatabase(c.database.name, { analyze: c.database.jobsTable })
      : undefined;
  // The slowest rate seen: one fast store must not shorten the next herd's lead below its store
  // time (the shared box's speed changes from one herd to the next).
  const seen = (size * 1000) / Math.max(1, preloadMs);
  insertRates.set(c.label, Math.min(seen, insertRates.get(c.label) ?? Infinity));
  const deadline = t0 + (opts.deadlineMs ?? Math.min(60_000, Math.max(config.w2.deadlineMs, size)));
  while (recorder.executed < size && Date.now() < deadline) await sleep(50);
  // A moment more to catch duplicates that trail the last first execution.
  await sleep(1_000);
  router.close(run);
  const resources = await sampler.stop();
  const lateness = recorder.summary();
  const drained = lateness.missing === 0;
  const stages = await c.stageLateness?.(run);
  // Where another system's herd comes next, this one's dead rows are vacuumed now, not by an
  // autovacuum that would start during that herd.
  const vacuumMs =
    c.database && opts.vacuumAfter ? await maintainDatabase(c.database.name, 'VACUUM') : undefined;
  return {
    size,
    warmup: opts.warmup ?? false,
    preloadMs,
    preloadPerSec: Math.round((size * 1000) / Math.max(1, preloadMs)),
    preloadOverrunMs: Math.max(0, started + preloadMs - t0),
    drainMs: drained ? lateness.lastStartedAt - t0 : NaN,
    drained,
    lateness,
    resources,
    ...(stages ? { stages } : {}),
    boxSpeedMs: speed,
    settle,
    ...(c.database ? { maintenanceMs: { analyze: analyzeMs, vacuum: vacuumMs } } : {}),
  };
}

export interface RateStep {
  readonly targetPerSec: number;
  readonly seconds: number;
  /** Executions whose job was due in the step, per second of the step. */
  readonly achievedPerSec: number;
  /** Whether the feeder managed to store each job before it was due. */
  readonly feederBehindMs: number;
  readonly keptUp: boolean;
  readonly lateness: LatenessSummary;
  readonly resources: ResourceSummary;
  /** Tickwork only: where the lateness accrues along its path. */
  readonly stages?: StageLateness;
}

/**
 * Open-loop rate: jobs become due at `perSec` for `seconds`, each stored about 1 s before it is
 * due (a feeder every 100 ms), whatever the system does. Kept up = every job ran within 3 s of
 * the step's end and p99 lateness < 1 s.
 */
export async function rateStep(
  c: Contender,
  router: ExecutionRouter,
  perSec: number,
  seconds: number,
): Promise<RateStep> {
  const run = newRun();
  const total = perSec * seconds;
  const recorder = router.open(run, total);
  const sampler = new ResourceSampler(
    [...c.processes(), { name: 'bench driver', pid: process.pid }],
    c.kafkaTopicPrefix?.(),
  );
  sampler.start();
  const start = Math.ceil((Date.now() + 1_500) / 1000) * 1000;
  const end = start + seconds * 1000;
  let stored = 0;
  let behind = 0;
  while (stored < total) {
    // Store everything due up to 1 s from now.
    const upTo = Math.min(total, Math.floor(((Date.now() + 1_000 - start) / 1000) * perSec));
    if (upTo > stored) {
      const jobs: BenchJob[] = [];
      for (let index = stored; index < upTo; index++)
        jobs.push({ run, index, dueAt: start + Math.floor((index * 1000) / perSec) });
      await c.enqueue(jobs);
      behind = Math.max(behind, Date.now() - jobs[0]!.dueAt);
      stored = upTo;
    }
    await sleep(100);
  }
  while (recorder.executed < total && Date.now() < end + 3_000) await sleep(50);
  await sleep(500);
  router.close(run);
  const resources = await sampler.stop();
  const lateness = recorder.summary();
  const stages = await c.stageLateness?.(run);
  return {
    targetPerSec: perSec,
    seconds,
    achievedPerSec: Math.round(lateness.executed / seconds),
    feederBehindMs: Math.max(0, behind),
    keptUp: lateness.missing === 0 && lateness.p99 < 1_000,
    lateness,
    resources,
    ...(stages ? { stages } : {}),
  };
}

/**
 * Resources while nothing is due: what a loaded but idle system costs. Sampling starts
 * `settleSeconds` after the processes are up, so their start-up work (module loading, compiling
 * hot code, group joins) is not counted as idle cost.
 */
export async function idle(c: Contender, seconds: number, settleSeconds = 0): Promise<ResourceSummary> {
  await sleep(settleSeconds * 1000);
  const sampler = new ResourceSampler(c.processes(), c.kafkaTopicPrefix?.());
  sampler.start();
  await sleep(seconds * 1000);
  return sampler.stop();
}

export interface RecurringResult {
  readonly schedules: number;
  readonly pattern: string;
  readonly seconds: number;
  readonly createMs: number;
  /** Occurrences whose nominal time fell in the measured window, and how they ran. */
  readonly lateness: LatenessSummary;
  readonly resources: ResourceSummary;
}

/**
 * N recurring schedules on one second-level cron pattern, created through the system's native
 * API; every occurrence with a nominal time in the measured window is expected exactly once.
 */
export async function recurring(
  c: Contender,
  router: ExecutionRouter,
  w: { schedules: number; pattern: string; periodMs: number; seconds: number },
): Promise<RecurringResult> {
  const run = newRun();
  const slots = Math.floor((w.seconds * 1000) / w.periodMs);
  const created = Date.now();
  const sampler = new ResourceSampler(
    [...c.processes(), { name: 'bench driver', pid: process.pid }],
    c.kafkaTopicPrefix?.(),
  );
  sampler.start();
  // Occurrences count from the first period boundary more than 1 s after every schedule exists
  // (a schedule created late rightly misses the occurrences before it; Tickwork's contender starts
  // its schedules 1 s out so that none is due before it is stored); until then, none are recorded.
  let windowStart = Infinity;
  const recorder = new LatenessRecorder(w.schedules * slots);
  // Handlers report (run, schedule, lateness); an occurrence is told apart by its nominal time,
  // so the recorder's index is schedule × slots + slot.
  router.route(run, (e) => {
    const nominal = Math.round((e.startedAt - e.latenessMs) / 1000) * 1000;
    const slot = Math.round((nominal - windowStart) / w.periodMs);
    if (slot >= 0 && slot < slots) recorder.record({ ...e, index: e.index * slots + slot });
  });
  await c.recurring!(w.schedules, w.pattern, run);
  const createMs = Date.now() - created;
  windowStart = (Math.floor((Date.now() + 1_000) / w.periodMs) + 1) * w.periodMs;
  const end = windowStart + slots * w.periodMs;
  while (Date.now() < end + 3_000) await sleep(100);
  router.close(run);
  const resources = await sampler.stop();
  return {
    schedules: w.schedules,
    pattern: w.pattern,
    seconds: (slots * w.periodMs) / 1000,
    createMs,
    lateness: recorder.summary(),
    resources,
  };
}
