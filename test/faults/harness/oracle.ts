/**
 * The oracle: what should have happened (the expected occurrences from the job definitions), what
 * the ledger says happened (fires, occurrence_skips, job_runs) and what the receiver saw (calls by
 * webhook-id), joined per occurrence, and the figures the suite reports:
 *
 * - delivered: the occurrence took effect at the receiver (a 2xx answer written out to the caller);
 * - skipped by policy: the ledger records it in occurrence_skips (e.g. COALESCED under FIRE_ONCE);
 * - missing: neither (lost, or not delivered before the drain gave up);
 * - duplicate effects: more than one effect for one webhook-id (a cut call is not an effect);
 * - duplicate ledger successes: more than one SUCCEEDED run for one occurrence (job, nominal time);
 * - early: a call that arrived before the occurrence's scheduled time, beyond EARLY_TOLERANCE_MS;
 * - lateness: arrival of the occurrence's first attempt minus its scheduled time (a retry's
 *   arrival is not the fire's lateness).
 */
import type { Pool } from 'pg';
import type { ReceivedCall, RecordingReceiver } from './receiver';
import type { Occurrence } from './workload';

/** Receiver and database share this box's clock; a few ms cover the difference between their reads. */
export const EARLY_TOLERANCE_MS = 5;

interface FireRow {
  job_id: string;
  fence_token: number;
  nominal_time: Date;
  scheduled_for: Date;
  claimed_by: string;
  claimed_at: Date;
}
interface SkipRow {
  job_id: string;
  reason: string;
  first_nominal: Date;
  last_nominal: Date;
}
interface RunRow {
  job_id: string;
  fence_token: number;
  nominal_time: Date;
  status: string;
  attempt: number;
  lease_owner: string | null;
  finished_at: Date | null;
  error: string | null;
}

/** What the ledger holds about a window of nominal times. */
export interface Ledger {
  readonly fires: Map<string, FireRow>;
  readonly skips: Map<string, SkipRow[]>;
  readonly runs: Map<string, RunRow>;
  /** Occurrences (job, nominal) with more than one SUCCEEDED run, and how many extra. */
  readonly duplicateSuccesses: number;
  /** Occurrences with more than one fire row (any trigger). */
  readonly duplicateFires: number;
}

const occKey = (jobId: string, nominal: number) => `${jobId}@${nominal}`;
const runKey = (jobId: string, fence: number) => `${jobId}:${fence}`;

/** Reads fires, skips and runs of occurrences with nominal time in [from, to] (with a margin for skips). */
export async function readLedger(pool: Pool, from: number, to: number): Promise<Ledger> {
  const range = [new Date(from), new Date(to)];
  const [fires, skips, runs, dupRuns, dupFires] = await Promise.all([
    pool.query<FireRow>(
      `SELECT job_id, fence_token, nominal_time, scheduled_for, claimed_by, claimed_at
         FROM fires WHERE trigger = 'SCHEDULE' AND nominal_time BETWEEN $1 AND $2`,
      range,
    ),
    pool.query<SkipRow>(
      `SELECT job_id, reason, first_nominal, last_nominal FROM occurrence_skips
        WHERE last_nominal >= $1 AND first_nominal <= $2`,
      range,
    ),
    pool.query<RunRow>(
      `SELECT job_id, fence_token, nominal_time, status, attempt, lease_owner, finished_at, error
         FROM job_runs WHERE nominal_time BETWEEN $1 AND $2`,
      range,
    ),
    pool.query<{ extra: number }>(
      `SELECT coalesce(sum(n - 1), 0)::int AS extra FROM (
         SELECT count(*) AS n FROM job_runs WHERE status = 'SUCCEEDED' AND nominal_time BETWEEN $1 AND $2
          GROUP BY job_id, nominal_time HAVING count(*) > 1) d`,
      range,
    ),
    pool.query<{ extra: number }>(
      `SELECT coalesce(sum(n - 1), 0)::int AS extra FROM (
         SELECT count(*) AS n FROM fires WHERE nominal_time BETWEEN $1 AND $2
          GROUP BY job_id, nominal_time HAVING count(*) > 1) d`,
      range,
    ),
  ]);
  const skipMap = new Map<string, SkipRow[]>();
  for (const s of skips.rows) {
    const list = skipMap.get(s.job_id);
    if (list) list.push(s);
    else skipMap.set(s.job_id, [s]);
  }
  return {
    fires: new Map(fires.rows.map((f) => [occKey(f.job_id, f.nominal_time.getTime()), f])),
    skips: skipMap,
    runs: new Map(runs.rows.map((r) => [runKey(r.job_id, r.fence_token), r])),
    duplicateSuccesses: dupRuns.rows[0]?.extra ?? 0,
    duplicateFires: dupFires.rows[0]?.extra ?? 0,
  };
}

/** One expected occurrence, judged. */
export interface Verdict {
  readonly occ: Occurrence;
  /** The fires partition (= shard of the job id over the fires topic's partitions). */
  readonly partition: number;
  readonly fenceToken: number | undefined;
  /** Scheduled time (the fire's scheduled_for, else the nominal time). */
  readonly scheduled: number;
  readonly claimedBy: string | undefined;
  readonly skippedReason: string | undefined;
  readonly runStatus: string | undefined;
  readonly runOwner: string | undefined;
  readonly runFinishedAt: number | undefined;
  readonly calls: readonly ReceivedCall[];
  /** Arrival of the first attempt (the earliest call of the lowest attempt number). */
  readonly firstArrival: number | undefined;
  readonly effects: number;
  readonly early: boolean;
  readonly delivered: boolean;
  /** Why an undelivered, unskipped occurrence is missing. */
  readonly missing: string | undefined;
}

/** Every expected occurrence judged against the ledger and the receiver's calls. */
export function judge(
  expected: readonly Occurrence[],
  ledger: Ledger,
  receiver: RecordingReceiver,
  partitionOf: (jobId: string) => number,
): Verdict[] {
  return expected.map((occ) => {
    const fire = ledger.fires.get(occKey(occ.jobId, occ.nominal));
    const skip = (ledger.skips.get(occ.jobId) ?? []).find(
      (s) => s.first_nominal.getTime() <= occ.nominal && occ.nominal <= s.last_nominal.getTime(),
    );
    const webhookId = fire ? runKey(fire.job_id, fire.fence_token) : undefined;
    const calls = webhookId ? (receiver.byWebhookId.get(webhookId) ?? []) : [];
    const run = webhookId ? ledger.runs.get(webhookId) : undefined;
    const scheduled = fire ? fire.scheduled_for.getTime() : occ.nominal;
    const lowest = calls.reduce((m, c) => Math.min(m, c.attempt), Infinity);
    const firstArrival = calls
      .filter((c) => c.attempt === lowest)
      .reduce<
        number | undefined
      >((m, c) => (m === undefined || c.receivedAt < m ? c.receivedAt : m), undefined);
    const effects = webhookId ? receiver.effects(webhookId).length : 0;
    // Early against the definition's time, so a wrong scheduled_for cannot hide an early call.
    const early = calls.some((c) => c.receivedAt < Math.min(scheduled, occ.nominal) - EARLY_TOLERANCE_MS);
    const delivered = effects > 0;
    let missing: string | undefined;
    if (!delivered && !skip) {
      if (!fire) missing = 'not claimed';
      else if (run?.status === 'DEAD_LETTERED') missing = `dead-lettered (${(run.error ?? '').slice(0, 60)})`;
      else if (calls.length === 0) missing = 'claimed, never called';
      else missing = `called ${calls.length}x, no effect`;
    }
    return {
      occ,
      partition: partitionOf(occ.jobId),
      fenceToken: fire?.fence_token,
      scheduled,
      claimedBy: fire?.claimed_by,
      skippedReason: skip?.reason,
      runStatus: run?.status,
      runOwner: run?.lease_owner ?? undefined,
      runFinishedAt: run?.finished_at?.getTime(),
      calls,
      firstArrival,
      effects,
      early,
      delivered,
      missing,
    };
  });
}

/** The figures of a set of verdicts. */
export interface Figures {
  readonly expected: number;
  readonly delivered: number;
  readonly skippedByPolicy: number;
  readonly missing: number;
  readonly missingReasons: Record<string, number>;
  /** Effects beyond the first, summed over webhook-ids. */
  readonly duplicateEffects: number;
  /** ... of which the extra effect repeated the same attempt number. */
  readonly duplicateSameAttempt: number;
  readonly early: number;
  /** Lateness of first attempts, ms (delivered or not, as long as a call arrived). */
  readonly lateness: {
    readonly count: number;
    readonly p50: number;
    readonly p99: number;
    readonly max: number;
  };
  /** Runs the ledger recorded SUCCEEDED with no effect seen at the receiver. */
  readonly successWithoutEffect: number;
}

/** The q-quantile (0..1) of `values` (nearest rank); 0 for none. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function figuresOf(verdicts: readonly Verdict[]): Figures {
  const missingReasons: Record<string, number> = {};
  let duplicateEffects = 0;
  let duplicateSameAttempt = 0;
  const late: number[] = [];
  for (const v of verdicts) {
    if (v.missing) {
      const reason = v.missing.replace(/\d+x/, 'n×');
      missingReasons[reason] = (missingReasons[reason] ?? 0) + 1;
    }
    if (v.effects > 1) {
      duplicateEffects += v.effects - 1;
      const effects = v.calls.filter((c) => c.outcome === 'answered' && c.status < 300);
      if (new Set(effects.map((c) => c.attempt)).size < effects.length) duplicateSameAttempt += 1;
    }
    if (v.firstArrival !== undefined) late.push(v.firstArrival - v.scheduled);
  }
  return {
    expected: verdicts.length,
    delivered: verdicts.filter((v) => v.delivered).length,
    skippedByPolicy: verdicts.filter((v) => !v.delivered && v.skippedReason).length,
    missing: verdicts.filter((v) => v.missing).length,
    missingReasons,
    duplicateEffects,
    duplicateSameAttempt,
    early: verdicts.filter((v) => v.early).length,
    lateness: {
      count: late.length,
      p50: quantile(late, 0.5),
      p99: quantile(late, 0.99),
      max: late.length ? Math.max(...late) : 0,
    },
    successWithoutEffect: verdicts.filter((v) => v.runStatus === 'SUCCEEDED' && v.effects === 0).length,
  };
}

/** The thresholds that define "recovered". */
export const RECOVERY = {
  /** Lateness at or under this counts as on time again (or the baseline's p99 when higher, up to maxThresholdMs). */
  thresholdMs: 1_000,
  maxThresholdMs: 3_000,
  /** ... for the occurrences due during this long after the recovery point ... */
  holdMs: 3_000,
  /** ... all but this share of them (so one fire slowed by the box's load does not move the point). */
  spareShare: 0.05,
};

/**
 * Recovery time after a fault that ended at `from`: the earliest R ≥ `from` such that (a) every
 * occurrence scheduled before R (since `since`) had arrived (first attempt) by R + threshold — the
 * fault's backlog is out — and (b) of the occurrences scheduled in [R, R + hold], all but
 * `spareShare` arrived within `threshold` of their time, and none is missing — new fires are on
 * time again. Returns
 * R − from, or undefined when that did not happen before `windowEnd` (a missing occurrence never
 * arrives). Occurrences skipped by their misfire policy are not waited for.
 */
export function recoveryMs(
  verdicts: readonly Verdict[],
  from: number,
  since: number,
  windowEnd: number,
  {
    thresholdMs,
    holdMs,
    spareShare,
  }: Pick<typeof RECOVERY, 'thresholdMs' | 'holdMs' | 'spareShare'> = RECOVERY,
): number | undefined {
  const occ = verdicts
    .filter((v) => v.scheduled >= since && !(v.skippedReason && !v.delivered))
    .map((v) => ({ s: v.scheduled, a: v.firstArrival ?? Infinity }))
    .sort((x, y) => x.s - y.s);
  if (occ.length === 0) return undefined;
  // prefixMax[i]: latest arrival among the first i occurrences (by schedule); prefixLate[i]: how many of them were late.
  const prefixMax = [0];
  const prefixLate = [0];
  const prefixMissing = [0];
  for (const o of occ) {
    prefixMax.push(Math.max(prefixMax[prefixMax.length - 1]!, o.a));
    prefixLate.push(prefixLate[prefixLate.length - 1]! + (o.a - o.s > thresholdMs ? 1 : 0));
    prefixMissing.push(prefixMissing[prefixMissing.length - 1]! + (Number.isFinite(o.a) ? 0 : 1));
  }
  const scheds = occ.map((o) => o.s);
  const firstAtOrAfter = (x: number) => {
    let lo = 0;
    let hi = scheds.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (scheds[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const firstAfter = (x: number) => {
    let lo = 0;
    let hi = scheds.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (scheds[mid]! <= x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const candidates = [from, ...scheds.filter((s) => s >= from)];
  for (const o of occ)
    if (Number.isFinite(o.a) && o.a - thresholdMs >= from) candidates.push(o.a - thresholdMs);
  candidates.sort((a, b) => a - b);
  for (const r of candidates) {
    if (r + holdMs > windowEnd) return undefined;
    const lo = firstAtOrAfter(r);
    if (prefixMax[lo]! > r + thresholdMs) continue;
    const hi = firstAfter(r + holdMs);
    const late = prefixLate[hi]! - prefixLate[lo]!;
    if (late > Math.floor(spareShare * (hi - lo))) continue;
    // The spare share is for fires the box slowed down, not for lost ones.
    if (prefixMissing[hi]! > prefixMissing[lo]!) continue;
    return r - from;
  }
  return undefined;
}
