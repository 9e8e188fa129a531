/**
 * What every scenario shares: start a deployment, store the workload, warm up, run the fault (the
 * scenario's own code), close the measurement window, drain, judge every expected occurrence, and
 * check the bounds every scenario has — nothing lost, nothing early, no duplicate ledger success,
 * no fire the definitions do not explain, no app crash, and a workload that really ran.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExitRecord } from './apps';
import { Deployment, type DeploymentOptions, type Mark } from './deployment';
import type { Log } from './log';
import {
  figuresOf,
  judge,
  quantile,
  readLedger,
  RECOVERY,
  type Figures,
  type Ledger,
  type Verdict,
} from './oracle';
import type { PrivateStack } from './private-stack';
import type { RecordingReceiver } from './receiver';
import { until, waitUpTo } from './wait';
import { Workload, type Occurrence, type WorkloadSpec } from './workload';

export interface ScenarioContext {
  readonly stack: PrivateStack;
  /** The CI version: fewer rounds, shorter windows. */
  readonly short: boolean;
  readonly runDir: string;
  readonly log: Log;
}

/** One bound, and whether the run kept it. */
export interface Check {
  readonly name: string;
  readonly bound: string;
  readonly measured: string;
  readonly ok: boolean;
}

export interface ScenarioResult {
  readonly name: string;
  readonly title: string;
  readonly window: { readonly from: string; readonly to: string; readonly seconds: number };
  readonly workloadRatePerSec: number;
  readonly figures: Figures | undefined;
  /** Lateness of the occurrences due from the window's start to 3 s before the first fault. */
  readonly baseline: Figures['lateness'] | undefined;
  /** The lateness that counts as on time again for recovery: max(1 s, the baseline's p99). */
  readonly recoveryThresholdMs: number | undefined;
  readonly duplicateLedgerSuccesses: number;
  readonly duplicateFires: number;
  readonly unexpectedFires: number;
  /** From the fault's end until lateness is back under the threshold (see oracle.recoveryMs); null = never. */
  readonly recoveryMs: number | null | undefined;
  readonly recoveryBoundMs: number | undefined;
  readonly checks: readonly Check[];
  readonly notes: readonly string[];
  readonly crashes: readonly ExitRecord[];
  readonly marks: readonly { readonly t: string; readonly what: string }[];
  readonly details: Record<string, unknown>;
  readonly missingSamples: readonly string[];
  readonly durationSec: number;
  readonly error?: string;
  readonly passed: boolean;
}

export interface Scenario {
  readonly name: string;
  readonly title: string;
  /** The bounds, in words, for the docs and the report. */
  readonly bound: string;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}

/** What a scenario's own checks see once the window is judged. */
export interface Judged {
  readonly verdicts: readonly Verdict[];
  readonly figures: Figures;
  /** Lateness before the first fault: what "on time" is on this box right now. */
  readonly baseline: Figures['lateness'];
  /** Recovery thresholds for this run: on time again = within max(1 s, the baseline's p99), at most 3 s. */
  readonly recovery: typeof RECOVERY;
  readonly ledger: Ledger;
  readonly from: number;
  readonly to: number;
}

/** One scenario's run: its deployment and workload, its checks and notes. */
export class Run {
  readonly checks: Check[] = [];
  readonly notes: string[] = [];
  readonly details: Record<string, unknown> = {};
  recoveryMs: number | null | undefined;
  recoveryBoundMs: number | undefined;
  windowEnd: number | undefined;
  /** When the first fault began: the baseline is what came due before it. */
  faultAt: number | undefined;
  /** How long a scenario measures the steady state before its first fault. */
  readonly baselineMs: number;
  /** Occurrences (by job id) the oracle must leave out, e.g. a poison job's own. */
  readonly excludedJobs = new Set<string>();

  constructor(
    readonly ctx: ScenarioContext,
    readonly d: Deployment,
    readonly workload: Workload,
    /** Start of the measurement window: occurrences from here on are judged. */
    readonly from: number,
  ) {
    this.baselineMs = ctx.short ? 6_000 : 10_000;
  }

  get log(): Log {
    return this.ctx.log;
  }

  /** Records a bound and whether it held. */
  check(name: string, bound: string, measured: string, ok: boolean): void {
    this.checks.push({ name, bound, measured, ok });
    this.log(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${measured} (bound: ${bound})`);
  }

  note(text: string): void {
    this.notes.push(text);
    this.log(text);
  }

  /** Closes the measurement window now (or at `at`). */
  endWindow(at = Date.now()): void {
    this.windowEnd = at;
  }

  mark(what: string, at?: number): number {
    return this.d.mark(what, at);
  }

  /** Marks the start of a fault (the first one ends the baseline). */
  fault(what: string): number {
    const at = this.mark(what);
    this.faultAt ??= at;
    return at;
  }
}

export interface ScenarioSetup {
  readonly name: string;
  readonly title: string;
  readonly deployment: Omit<DeploymentOptions, 'label'>;
  /** Workload overrides (the default is the issue's mix at ~50 fires/s over two tenants). */
  readonly workload?: Partial<WorkloadSpec>;
  /** Warm-up before the window opens (the groups settle, the JIT warms); default 10 s, 5 s short. */
  readonly warmupMs?: number;
  /** How long one-shots keep coming after the window opens (cover the whole scenario). */
  readonly plannedMs: number;
  /** Longest wait for retries and late fires after the window closes; default 90 s, 45 s short. */
  readonly drainCapMs?: number;
}

/** The workload every scenario runs unless it says otherwise. */
export function defaultWorkload(prefix: string, start: number, until: number): WorkloadSpec {
  return {
    prefix,
    tenants: ['tenant-a', 'tenant-b'],
    intervalJobs: 200,
    intervalMs: 5_000,
    cronJobs: 50,
    cronEverySec: 10,
    oneShotsPerSec: 5,
    start,
    oneShotsUntil: until,
  };
}

const iso = (t: number) => new Date(t).toISOString();
const BASELINE_MARGIN_MS = 3_000;
/** After the warm-up, how long the window may wait for fires to arrive on time. */
const STEADY_WAIT_MS = 30_000;

/** Did 90% of the first attempts that arrived in the last 2 s arrive within 1 s of their time? */
function isSteady(receiver: RecordingReceiver): boolean {
  const since = Date.now() - 2_000;
  const late: number[] = [];
  for (let i = receiver.calls.length - 1; i >= 0; i--) {
    const c = receiver.calls[i]!;
    if (c.receivedAt < since) break;
    if (c.attempt === 1) late.push(c.receivedAt - c.scheduledFor);
  }
  return late.length >= 20 && quantile(late, 0.9) <= 1_000;
}

const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/**
 * Runs a scenario: setup, `body` (the fault; it calls `run.endWindow()` and returns the
 * scenario's own checks, run once the window is judged), drain, judgement, common checks, teardown.
 */
export async function runScenario(
  ctx: ScenarioContext,
  setup: ScenarioSetup,
  body: (run: Run) => Promise<(judged: Judged) => void>,
): Promise<ScenarioResult> {
  const t0 = Date.now();
  let d: Deployment | undefined;
  let run: Run | undefined;
  let judged: Judged | undefined;
  let error: string | undefined;
  let unexpectedFires = 0;
  const missingSamples: string[] = [];
  try {
    d = await Deployment.start(ctx.stack, { label: setup.name, ...setup.deployment }, ctx.runDir, ctx.log);
    const start = Date.now() + 3_000;
    const warmupMs = setup.warmupMs ?? (ctx.short ? 5_000 : 10_000);
    const drainCapMs = setup.drainCapMs ?? (ctx.short ? 45_000 : 90_000);
    // One-shots cover the longest the window can start late (STEADY_WAIT_MS) and the scenario.
    const oneShotsUntil = start + warmupMs + STEADY_WAIT_MS + setup.plannedMs;
    const spec = { ...defaultWorkload(setup.name, start, oneShotsUntil), ...setup.workload };
    const workload = Workload.plan(spec, d.config.shardCount);
    await d.seed(workload);
    ctx.log(`workload stored: ${workload.jobs.length} jobs, ~${workload.ratePerSec.toFixed(0)} fires/s`);
    await until(start + warmupMs);
    if (d.receiver.calls.length === 0)
      throw new Error(
        `no webhook call arrived during the ${warmupMs} ms warm-up: the deployment does not fire`,
      );
    // The window opens once fires arrive on time (groups settled after the start), or after STEADY_WAIT_MS.
    const receiver = d.receiver;
    const steady = await waitUpTo(() => (isSteady(receiver) ? true : undefined), STEADY_WAIT_MS, 250);
    const from = Date.now();
    ctx.log(
      `window opens ${iso(from)}${steady ? '' : ` (fires still not on time after ${STEADY_WAIT_MS / 1000} s more: the box is loaded)`}`,
    );
    run = new Run(ctx, d, workload, from);
    const evaluate = await body(run);
    const to = run.windowEnd ?? Date.now();
    // Occurrences still to come are not in the window; wait for the last ones to be due.
    await until(to + 500);
    const expected = workload.expected(from, to).filter((o) => !run!.excludedJobs.has(o.jobId));
    await d.drain(expected, drainCapMs);
    const ledger = await readLedger(d.pool, from, to);
    const verdicts = judge(expected, ledger, d.receiver, d.partitionOf);
    const figures = figuresOf(verdicts);
    // The baseline ends 3 s before the first fault: a fire due just before it may be held up by it.
    const baseline = figuresOf(
      scheduledIn(verdicts, from, (run.faultAt ?? to) - BASELINE_MARGIN_MS),
    ).lateness;
    const recovery = {
      ...RECOVERY,
      thresholdMs: Math.min(
        RECOVERY.maxThresholdMs,
        Math.max(RECOVERY.thresholdMs, Math.ceil(baseline.p99 / 100) * 100),
      ),
    };
    judged = { verdicts, figures, ledger, from, to, baseline, recovery };
    ctx.log(
      `baseline before the fault: ${baseline.count} fires, lateness p50 ${fmt(baseline.p50)} p99 ${fmt(baseline.p99)} max ${fmt(baseline.max)}; recovery threshold ${fmt(recovery.thresholdMs)}`,
    );
    writeOccurrences(join(d.logDir, 'occurrences.csv'), verdicts);
    const expectedKeys = new Set(expected.map((o) => `${o.jobId}@${o.nominal}`));
    const ours = new Set(workload.jobs.map((j) => j.jobId));
    unexpectedFires = [...ledger.fires.keys()].filter(
      (k) =>
        ours.has(k.slice(0, k.lastIndexOf('@'))) &&
        !run!.excludedJobs.has(k.slice(0, k.lastIndexOf('@'))) &&
        !expectedKeys.has(k),
    ).length;
    for (const v of verdicts.filter((x) => x.missing).slice(0, 10))
      missingSamples.push(`${v.occ.jobId} @ ${iso(v.occ.nominal)} (shard ${v.occ.shard}): ${v.missing}`);

    // The bounds every scenario has.
    const planned = workload.ratePerSec * ((to - from) / 1000);
    run.check(
      'workload ran',
      `expected ≥ 80% of ${planned.toFixed(0)} planned occurrences`,
      `${figures.expected} expected`,
      figures.expected > 0 && figures.expected >= 0.8 * planned,
    );
    run.check('no lost fire', 'missing = 0', `${figures.missing} missing`, figures.missing === 0);
    run.check('no early fire', `early = 0 (tolerance 5 ms)`, `${figures.early} early`, figures.early === 0);
    run.check(
      'no duplicate ledger success',
      '0 occurrences with > 1 SUCCEEDED run',
      `${ledger.duplicateSuccesses}`,
      ledger.duplicateSuccesses === 0,
    );
    run.check(
      'no unexplained fire',
      '0 fires at a time the definitions do not give',
      `${unexpectedFires}`,
      unexpectedFires === 0,
    );
    evaluate(judged);
    const crashes = d.crashes();
    run.check(
      'no crash',
      'every app the suite did not stop is alive',
      crashes.length === 0 ? 'none' : crashes.map((c) => `${c.app} (${c.code ?? c.signal})`).join(', '),
      crashes.length === 0,
    );
    ctx.log(
      `figures: expected ${figures.expected}, delivered ${figures.delivered}, skipped ${figures.skippedByPolicy}, missing ${figures.missing}, dup effects ${figures.duplicateEffects}, early ${figures.early}, lateness p50 ${fmt(figures.lateness.p50)} p99 ${fmt(figures.lateness.p99)} max ${fmt(figures.lateness.max)}`,
    );
  } catch (e) {
    error = (e as Error).stack ?? String(e);
    ctx.log(`ERROR: ${(e as Error).message}`);
  } finally {
    await d?.stop().catch((e: Error) => ctx.log(`teardown: ${e.message}`));
  }
  const checks = run?.checks ?? [];
  return {
    name: setup.name,
    title: setup.title,
    window: judged
      ? { from: iso(judged.from), to: iso(judged.to), seconds: Math.round((judged.to - judged.from) / 1000) }
      : { from: '', to: '', seconds: 0 },
    workloadRatePerSec: run ? Math.round(run.workload.ratePerSec) : 0,
    figures: judged?.figures,
    baseline: judged?.baseline,
    recoveryThresholdMs: judged?.recovery.thresholdMs,
    duplicateLedgerSuccesses: judged?.ledger.duplicateSuccesses ?? 0,
    duplicateFires: judged?.ledger.duplicateFires ?? 0,
    unexpectedFires,
    recoveryMs: run?.recoveryMs,
    recoveryBoundMs: run?.recoveryBoundMs,
    checks,
    notes: run?.notes ?? [],
    crashes: d?.crashes() ?? [],
    marks: (d?.marks ?? []).map((m: Mark) => ({ t: iso(m.at), what: m.what })),
    details: run?.details ?? {},
    missingSamples,
    durationSec: Math.round((Date.now() - t0) / 1000),
    ...(error ? { error } : {}),
    passed: !error && checks.length > 0 && checks.every((c) => c.ok),
  };
}

/** Every judged occurrence, one CSV line each, next to the apps' logs (for looking into a run). */
function writeOccurrences(path: string, verdicts: readonly Verdict[]): void {
  const lines = [
    'job_id,tenant,shard,partition,nominal,scheduled,first_arrival,lateness_ms,calls,effects,skipped,run_status,run_owner,claimed_by,missing',
  ];
  for (const v of verdicts)
    lines.push(
      [
        v.occ.jobId,
        v.occ.tenantId,
        v.occ.shard,
        v.partition,
        iso(v.occ.nominal),
        iso(v.scheduled),
        v.firstArrival === undefined ? '' : iso(v.firstArrival),
        v.firstArrival === undefined ? '' : v.firstArrival - v.scheduled,
        v.calls.length,
        v.effects,
        v.skippedReason ?? '',
        v.runStatus ?? '',
        v.runOwner ?? '',
        v.claimedBy ?? '',
        v.missing ?? '',
      ].join(','),
    );
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/** The occurrences of `verdicts` scheduled in [from, to). */
export function scheduledIn(verdicts: readonly Verdict[], from: number, to: number): Verdict[] {
  return verdicts.filter((v) => v.scheduled >= from && v.scheduled < to);
}

export const seconds = fmt;
export type { Occurrence };
