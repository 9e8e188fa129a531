/**
 * Deterministic jitter: spreads fires that share a nominal instant (thousands of `0 * * * *` jobs) over a
 * window, without state. The offset is a hash of (job, nominal), so a re-claim or a replay after fail-over
 * computes the same fire time.
 */

import { compileCron } from './cron-expression';
import { compileRrule } from './rrule';
import type { Schedule } from './schedule';

const { floor, imul, min, max } = Math;
const MINUTE_MS = 60_000;
const TWO_POW_32 = 4_294_967_296;

/** Deterministic offset in [0, windowMs) for this job's occurrence at `nominal`; 0 when windowMs < 1. */
export function jitterOffsetMs(jobId: string, nominal: Date, windowMs: number): number {
  const window = floor(windowMs);
  if (!(window >= 1)) return 0;
  // Multiply-shift (not modulo) keeps the result uniform for any window below 2^32 ms (~50 days).
  return floor((occurrenceHash(jobId, nominal.getTime()) / TWO_POW_32) * window);
}

/**
 * The herd-window offset in [0, spreadMs) of a job's occurrence at `nominal` (with its dst_gap SHIFT, which
 * tells apart two occurrences at one instant): a stable hash of (job, occurrence), so every claim, re-claim
 * and preview computes the same slot. Hashed apart from jitter (another key), so the two never correlate.
 */
export function spreadOffsetMs(jobId: string, nominal: Date, spreadMs: number, dstShiftMs = 0): number {
  const window = floor(spreadMs);
  if (!(window >= 1)) return 0;
  const key = dstShiftMs === 0 ? `spread|${jobId}` : `spread|${jobId}|${dstShiftMs}`;
  return floor((occurrenceHash(key, nominal.getTime()) / TWO_POW_32) * window);
}

/** The instant a jittered fire runs: nominal + jitterOffsetMs. */
export function jitteredFireTime(jobId: string, nominal: Date, windowMs: number): Date {
  return new Date(nominal.getTime() + jitterOffsetMs(jobId, nominal, windowMs));
}

/**
 * The herd window to apply when a job set no jitter of its own: `clusterDefaultMs` for recurring schedules
 * (cron and interval) whose occurrence lands on a whole minute (UTC and every real zone agree on that, since
 * offsets are whole minutes) — where crowds of jobs collide — and 0 otherwise. One-shots keep their exact
 * instant. Capped at half the schedule's shortest spacing, so a jittered fire never passes the next occurrence.
 */
export function defaultHerdWindowMs(schedule: Schedule, nominal: Date, clusterDefaultMs: number): number {
  if (schedule.kind === 'once' || clusterDefaultMs <= 0) return 0;
  if (nominal.getTime() % MINUTE_MS !== 0) return 0;
  const spacing =
    schedule.kind === 'interval'
      ? schedule.everyMs
      : schedule.kind === 'cron'
        ? compileCron(schedule.expression, schedule.hashSeed).minimumSpacingMs()
        : compileRrule(schedule.rule, schedule.dtstart, schedule.exdates).minimumSpacingMs();
  return max(0, min(floor(clusterDefaultMs), floor(spacing / 2)));
}

/** FNV-1a over the UTF-16 code units of `${jobId}|${nominalMs}`, then murmur3's finalizer to spread the bits. */
function occurrenceHash(jobId: string, nominalMs: number): number {
  let hash = 0x811c9dc5;
  const key = `${jobId}|${nominalMs}`;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
