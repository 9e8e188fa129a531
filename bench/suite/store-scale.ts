/**
 * W1 (store scale) and W4 (cost of a big store), run together because both need the big store:
 * Tickwork bulk-loads the background, times its due-scan with 1k due rows, then runs idle and a
 * herd over it, then grows the store tenfold and scans again. Peers preload the same number of
 * delayed jobs (their preload rate is W1's figure), then run idle and the same herd.
 */
import { config } from './config';
import type { Contender } from './contender';
import type { ExecutionRouter } from './lateness';
import type { TickworkContender } from './tickwork';
import { quietBox, type ResourceSummary } from './sampler';
import { herd, idle, newRun, type HerdResult } from './workloads';

export interface DueScan {
  readonly stored: number;
  readonly due: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface StoreScaleResult {
  readonly background: number;
  readonly preloadPerSec: number;
  readonly idle: ResourceSummary;
  /** The unmeasured herd before `herdOnTop`: every system runs its measured herd warm. */
  readonly warmupOnTop?: HerdResult;
  readonly herdOnTop: HerdResult;
  /** Tickwork only: the due-scan at the loaded and at the grown size, and the growth load rate. */
  readonly dueScans?: DueScan[];
  readonly growPerSec?: number;
}

const SCANS = 21;
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function timedScan(t: TickworkContender, stored: number): Promise<DueScan> {
  const run = newRun();
  const due = config.w1.due;
  await t.enqueue(Array.from({ length: due }, (_, index) => ({ run, index, dueAt: Date.now() - 1_000 })));
  await t.pool!.query('ANALYZE jobs');
  // Autovacuum works through a freshly loaded table for a while: scans timed during it read 2-3x slower.
  await quietBox();
  await t.dueScanMs(2 * due, 3); // warm the cache
  const ms = await t.dueScanMs(2 * due, SCANS);
  await t.forget(run);
  return { stored, due, p50Ms: pct(ms, 50), p99Ms: pct(ms, 99), maxMs: ms[ms.length - 1]! };
}

/**
 * W4's herd over the big store, after an unmeasured warm-up herd of the same size: the processes
 * started fresh for the idle window, and a first herd on fresh processes measures their start-up
 * (JIT, connections, buffers), not the big store; W2 warms up the same way. A system whose
 * warm-up does not drain gets no second herd (its leftover jobs would run in it): its warm-up is
 * reported, marked as such.
 */
async function herdsOnTop(
  c: Contender,
  router: ExecutionRouter,
): Promise<{ warmupOnTop?: HerdResult; herdOnTop: HerdResult }> {
  const size = config.w4.herd;
  if (config.w4.warmupHerd > 0) {
    const warmupOnTop = await herd(c, router, config.w4.warmupHerd, { warmup: true });
    if (!warmupOnTop.drained) {
      console.log(`  warm-up herd of ${config.w4.warmupHerd} on top: NOT drained; no measured herd`);
      return { herdOnTop: warmupOnTop };
    }
    console.log(`  warm-up herd of ${config.w4.warmupHerd} on top: drained in ${warmupOnTop.drainMs} ms`);
    const herdOnTop = await herd(c, router, size);
    console.log(`  herd of ${size} on top: drained in ${herdOnTop.drainMs} ms`);
    return { warmupOnTop, herdOnTop };
  }
  const herdOnTop = await herd(c, router, size);
  console.log(`  herd of ${size} on top: drained in ${herdOnTop.drainMs} ms`);
  return { herdOnTop };
}

export async function tickworkStoreScale(
  t: TickworkContender,
  router: ExecutionRouter,
): Promise<StoreScaleResult> {
  const { stored, grownTo } = config.w1;
  await t.openStore(router.record);
  try {
    let started = Date.now();
    await t.preloadBackground(stored);
    const preloadPerSec = Math.round((stored * 1000) / (Date.now() - started));
    console.log(`  loaded ${stored} schedules at ${preloadPerSec}/s`);
    const small = await timedScan(t, stored);
    console.log(`  due-scan with ${stored} stored: p50 ${small.p50Ms.toFixed(1)} ms`);
    await t.startApps();
    const idleCost = await idle(t, config.w4.idleSeconds, config.w4.settleSeconds);
    console.log(`  idle with ${stored} stored: ${idleCost.cpuPctTotalMean}% CPU`);
    const { warmupOnTop, herdOnTop } = await herdsOnTop(t, router);
    await t.stopApps();
    started = Date.now();
    await t.preloadBackground(grownTo - stored, stored);
    const growPerSec = Math.round(((grownTo - stored) * 1000) / (Date.now() - started));
    const large = await timedScan(t, grownTo);
    console.log(`  grew to ${grownTo} at ${growPerSec}/s; due-scan p50 ${large.p50Ms.toFixed(1)} ms`);
    return {
      background: stored,
      preloadPerSec,
      idle: idleCost,
      warmupOnTop,
      herdOnTop,
      dueScans: [small, large],
      growPerSec,
    };
  } finally {
    await t.stop();
  }
}

export async function peerStoreScale(c: Contender, router: ExecutionRouter): Promise<StoreScaleResult> {
  const n = config.w1.peerPreload;
  await c.start(router.record);
  try {
    const started = Date.now();
    await c.preloadBackground(n);
    const preloadPerSec = Math.round((n * 1000) / (Date.now() - started));
    console.log(`  preloaded ${n} delayed jobs at ${preloadPerSec}/s`);
    const idleCost = await idle(c, config.w4.idleSeconds, config.w4.settleSeconds);
    console.log(`  idle with ${n} stored: ${idleCost.cpuPctTotalMean}% CPU`);
    return { background: n, preloadPerSec, idle: idleCost, ...(await herdsOnTop(c, router)) };
  } finally {
    await c.stop();
  }
}
