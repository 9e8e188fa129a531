/**
 * How fast this box is right now: the time a fixed piece of CPU work takes (integer math, small
 * allocations, a sort and a JSON round trip — what a Node service spends its time on). A shared
 * VM's speed varies 2-3× from one hour to the next with its neighbours, so every benchmark result
 * records this figure at its start and end: two result files are comparable only when it is close.
 */
import { performance } from 'node:perf_hooks';

/** Milliseconds for the reference work, median of `runs` after one warm-up (lower is faster). */
export function boxSpeedMs(runs = 5): number {
  referenceWork();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    referenceWork();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)]!);
}

/** The sentence a results file prints about it. */
export function describeBoxSpeed(atStart: number, atEnd?: number): string {
  const end = atEnd === undefined ? '' : `, ${atEnd} ms at the end`;
  return `Box speed (bench/box-speed.ts reference work, lower is faster): ${atStart} ms at the start${end}.`;
}

function referenceWork(): number {
  let acc = 7;
  const kept: { n: number; s: string }[] = [];
  for (let i = 0; i < 3_000_000; i++) {
    acc = (acc * 31 + i) % 1_000_003;
    if ((i & 15) === 0) kept.push({ n: acc, s: String(acc) });
  }
  kept.sort((a, b) => a.n - b.n);
  const back = JSON.parse(JSON.stringify(kept.slice(0, 40_000))) as unknown[];
  return acc + back.length;
}
