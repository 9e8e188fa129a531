/**
 * The results: bench/results/<date>-<host>.json (every raw figure) and .md (tables per workload
 * with versions, settings and durability, Tickwork/peer ratios from the same run, and plain
 * statements of where Tickwork loses), plus the PNG charts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeBoxSpeed } from '../box-speed';
import { renderCharts } from './charts';
import { config } from './config';
import type { Contender } from './contender';
import type { StoreScaleResult } from './store-scale';
import { medianRun, type HerdResult, type RateStep, type RecurringResult } from './workloads';

export interface SuiteResults {
  /** bench/box-speed.ts at the start and end of the run: how fast the (shared) box was. */
  boxSpeedMs: { start: number; end?: number };
  /** PostgreSQL's autovacuum and JIT during the run, for every system (absent before 2026-12-02 04:00). */
  postgres?: string;
  date: string;
  host: string;
  cpus: number;
  memoryGb: number;
  node: string;
  quick: boolean;
  /** The sizes of the run; `analyzeHerd` absent in results before 2026-12-02 08:45 (none was run). */
  config: { readonly analyzeHerd?: boolean; readonly [workload: string]: unknown };
  contenders: Record<string, { system: string; version: string; settings: string; durability: string }>;
  w2: Record<
    string,
    {
      small: HerdResult[];
      /** The large herd's measured runs, and the one with the median drain. */
      largeRuns?: HerdResult[];
      large?: HerdResult;
      largeSkipped?: string;
    }
  >;
  w3: Record<string, RateStep[]>;
  w1w4: Record<string, StoreScaleResult>;
  w5: Record<string, RecurringResult | { skipped: string }>;
  durationsSec: Record<string, number>;
}

/** Records who ran, with the durability it reported once started. */
export function noteContender(results: SuiteResults, c: Contender): void {
  results.contenders[c.label] = {
    system: c.system,
    version: c.version,
    settings: c.settings,
    durability: c.durability,
  };
}

const TICKWORK = 'Tickwork (Kafka target)';
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.floor((s.length - 1) / 2)]! + s[Math.ceil((s.length - 1) / 2)]!) / 2 : NaN;
};
const sec = (ms: number) => (Number.isFinite(ms) ? (ms / 1000).toFixed(2) : '—');
const ms = (x: number) => (Number.isFinite(x) ? `${Math.round(x)}` : '—');
const ratio = (t: number, p: number) =>
  Number.isFinite(t) && Number.isFinite(p) && p > 0 ? `${(t / p).toFixed(2)}×` : '—';

/** Median and range over the measured (non-warm-up) herds. */
function herdFigures(runs: HerdResult[]) {
  const m = runs.filter((r) => !r.warmup);
  const drains = m.map((r) => r.drainMs);
  const pick = (f: (r: HerdResult) => number) => median(m.map(f));
  return {
    runs: m.length,
    drainMedian: drains.some((d) => !Number.isFinite(d)) ? NaN : median(drains),
    drainRange:
      drains.every(Number.isFinite) && m.length > 1
        ? `${sec(Math.min(...drains))}–${sec(Math.max(...drains))}`
        : '',
    p50: pick((r) => r.lateness.p50),
    p99: pick((r) => r.lateness.p99),
    max: Math.max(...m.map((r) => r.lateness.max)),
    missing: m.reduce((a, r) => a + r.lateness.missing, 0),
    duplicates: m.reduce((a, r) => a + r.lateness.duplicates, 0),
    preloadPerSec: pick((r) => r.preloadPerSec),
    cpu: pick((r) => r.resources.cpuPctTotalMean),
    // Results files before 2026-12-02 have no box figure.
    boxCpuPer1k: pick((r) => ((r.resources.boxCpuSec ?? NaN) * 1000) / r.size),
    boxSpeed: pick((r) => r.boxSpeedMs ?? NaN),
  };
}

/** The large herd's measured runs (results files before 2026-12-01 18:00 UTC hold one, as `large`). */
function largeRunsOf(e: SuiteResults['w2'][string]): HerdResult[] {
  return e.largeRuns ?? (e.large ? [e.large] : []);
}

/** The large herd round by round (the rounds interleave the systems): drain, box speed, wait for quiet. */
function roundsTable(r: SuiteResults): string[] {
  const systems = Object.entries(r.w2).filter(([, e]) => (e.largeRuns?.length ?? 0) > 0);
  const rounds = Math.max(0, ...systems.map(([, e]) => e.largeRuns!.length));
  if (systems.length < 2 || rounds === 0) return [];
  const cell = (h: HerdResult | undefined) =>
    !h
      ? '—'
      : `${h.drained ? `${sec(h.drainMs)} s` : 'not drained'}${h.boxSpeedMs ? `, box ${ms(h.boxSpeedMs)} ms` : ''}${h.settle && h.settle.waitedMs > 1_500 ? `, quiet after ${sec(h.settle.waitedMs)} s${h.settle.quiet ? '' : ' (never quiet)'}` : ''}`;
  return [
    `The ${config.w2.large.toLocaleString('en')} herd round by round (each round runs the systems in this order, one after another; drain, the box speed just before it, and the wait for a quiet box where it took over 1.5 s):`,
    '',
    `| round | ${systems.map(([label]) => label).join(' | ')} |`,
    `|---|${systems.map(() => '---').join('|')}|`,
    ...Array.from(
      { length: rounds },
      (_, i) => `| ${i + 1} | ${systems.map(([, e]) => cell(e.largeRuns![i])).join(' | ')} |`,
    ),
    '',
  ];
}

/** The interleaved rounds of the large herd in which a peer drained faster than Tickwork did in the same round. */
function roundLosses(r: SuiteResults): string[] {
  const tw = r.w2[TICKWORK]?.largeRuns;
  if (!tw || tw.length < 2) return [];
  const out: string[] = [];
  for (const [label, e] of Object.entries(r.w2)) {
    if (label.startsWith('Tickwork')) continue;
    (e.largeRuns ?? []).forEach((peer, i) => {
      const mine = tw[i];
      if (mine && peer.drained && (!mine.drained || peer.drainMs < mine.drainMs))
        out.push(
          `W2 ${peer.size.toLocaleString('en')}, round ${i + 1}: ${label} drains the herd faster (${sec(peer.drainMs)} s vs ${mine.drained ? `${sec(mine.drainMs)} s` : 'not drained'}).`,
        );
    });
  }
  return out;
}

function w2Section(r: SuiteResults, losses: string[]): string[] {
  const lines = ['## W2 — herd: N one-shot jobs all due at T0', ''];
  const tw = r.w2[TICKWORK];
  for (const size of ['small', 'large'] as const) {
    const n = size === 'small' ? config.w2.small : config.w2.large;
    lines.push(
      `### ${n.toLocaleString('en')} jobs`,
      '',
      '| system | runs | drain (last start − T0) median (range) s | lateness p50 / p99 / max ms | missing | duplicates | store rate jobs/s | CPU % (workers + driver) | box CPU-s per 1k jobs (store + run, all processes) | box speed ms | Tickwork/this drain |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
    );
    const twf = tw ? herdFigures(size === 'small' ? tw.small : largeRunsOf(tw)) : undefined;
    for (const [label, e] of Object.entries(r.w2)) {
      const runs = size === 'small' ? e.small : largeRunsOf(e);
      if (runs.length === 0) {
        if (size === 'large')
          lines.push(`| ${label} | — | skipped: ${e.largeSkipped ?? ''} | | | | | | | | |`);
        continue;
      }
      const f = herdFigures(runs);
      const drain = Number.isFinite(f.drainMedian)
        ? `${sec(f.drainMedian)}${f.drainRange ? ` (${f.drainRange})` : ''}`
        : 'not drained';
      lines.push(
        `| ${label} | ${f.runs} | ${drain} | ${ms(f.p50)} / ${ms(f.p99)} / ${ms(f.max)} | ${f.missing} | ${f.duplicates} | ${ms(f.preloadPerSec)} | ${f.cpu.toFixed(0)} | ${Number.isFinite(f.boxCpuPer1k) ? f.boxCpuPer1k.toFixed(2) : '—'} | ${ms(f.boxSpeed)} | ${label === TICKWORK ? '' : ratio(twf?.drainMedian ?? NaN, f.drainMedian)} |`,
      );
      if (twf && label !== TICKWORK && !label.startsWith('Tickwork')) {
        if (Number.isFinite(f.drainMedian) && !(twf.drainMedian <= f.drainMedian))
          losses.push(
            `W2 ${n.toLocaleString('en')}: ${label} drains the herd faster (${sec(f.drainMedian)} s vs ${sec(twf.drainMedian)} s).`,
          );
        if (f.p99 < twf.p99 && f.missing === 0)
          losses.push(
            `W2 ${n.toLocaleString('en')}: ${label} has lower p99 lateness (${ms(f.p99)} ms vs ${ms(twf.p99)} ms).`,
          );
      }
    }
    lines.push('');
  }
  lines.push(...roundsTable(r));
  losses.push(...roundLosses(r));
  for (const [label, e] of Object.entries(r.w2)) {
    const runs = [...e.small.filter((x) => !x.warmup), ...largeRunsOf(e)];
    for (const run of runs.filter((x) => x.stages))
      lines.push(
        `${label}, herd of ${run.size.toLocaleString('en')}: where the lateness accrues (cumulative p50 / p99 ms): ` +
          Object.entries(run.stages!)
            .map(([stage, v]) => `${stage} ${ms(v.p50)} / ${ms(v.p99)}`)
            .join(' → ') +
          ` → handler ${ms(run.lateness.p50)} / ${ms(run.lateness.p99)}.`,
        '',
      );
  }
  const cpuLines = Object.entries(r.w2).flatMap(([label, e]) => {
    const run = medianRun(largeRunsOf(e));
    const spent = run?.resources.cpuSec;
    if (!run || !spent || run.resources.boxCpuSec === undefined) return [];
    const parts = Object.entries(spent)
      .filter(([, v]) => v >= 0.1)
      .sort((a, b) => b[1] - a[1])
      .map(([name, v]) => `${name} ${v.toFixed(1)}`);
    return [`- ${label}: ${parts.join(', ')}; whole box ${run.resources.boxCpuSec.toFixed(1)} CPU-s.`];
  });
  if (cpuLines.length > 0)
    lines.push(
      `Where the CPU of the ${config.w2.large.toLocaleString('en')}-job herd went (the run with the median drain; CPU-seconds from the start of storing the herd to 1 s after it drained, on ${r.cpus} cores; the whole box includes processes of no system, such as idle services):`,
      '',
      ...cpuLines,
      '',
    );
  lines.push(
    `Missing = jobs of the herd that had not run by the deadline (T0 + ${config.w2.deadlineMs / 1000} s, or 1 ms per job up to 60 s; 90 s for the large herd); a system that did not drain is restarted with fresh state before its next run. Box speed = bench/box-speed.ts just before each herd was stored (median over the runs; lower is faster): the shared VM changes speed within a run as well, so a drain compares fairly only with one of a close box speed.`,
    '',
  );
  if (Object.values(r.contenders).some((c) => c.system === 'pg-boss'))
    lines.push(
      // Read in pg-boss 10's src/worker.js: the loop sleeps (interval − time taken) after every fetch.
      "pg-boss's worker waits out its polling interval after every fetch, whether the batch was full or not, so one work() call runs at most batchSize jobs per interval: within the budget (2 workers × batchSize 50) that is 200 jobs/s tuned (0.5 s, pg-boss's shortest interval) and 50 jobs/s at defaults (2 s). A herd of 10,000 takes it ~50 s; a drain it misses is this ceiling, not a fault of the run.",
      '',
    );
  return lines;
}

function w3Section(r: SuiteResults, losses: string[]): string[] {
  const lines = [
    `## W3 — sustained open-loop rate (${config.w3.stepSeconds} s per step)`,
    '',
    `Jobs become due at the step rate, each stored ~1 s before its due time; a step is kept up when every job ran within 3 s of the step end and p99 lateness < 1 s. Stepping stops at the first step not kept up. Each system starts W3 with fresh processes and gets one unmeasured warm-up step (${config.w3.warmupSeconds} s at ${config.w3.steps[0]}/s) first.`,
    '',
    '| system | highest step kept up | ' +
      config.w3.steps.map((s) => `${s}/s: achieved, p99 ms`).join(' | ') +
      ' |',
    '|---|---|' + config.w3.steps.map(() => '---|').join(''),
  ];
  const highest = (steps: RateStep[]) =>
    Math.max(0, ...steps.filter((s) => s.keptUp).map((s) => s.targetPerSec));
  const tw = r.w3[TICKWORK];
  for (const [label, steps] of Object.entries(r.w3)) {
    const cells = config.w3.steps.map((rate) => {
      const s = steps.find((x) => x.targetPerSec === rate);
      return s ? `${s.achievedPerSec}, ${ms(s.lateness.p99)}${s.keptUp ? '' : ' ✗'}` : 'not run';
    });
    lines.push(`| ${label} | ${highest(steps) || 'none'} | ${cells.join(' | ')} |`);
    if (tw && label !== TICKWORK && highest(steps) > highest(tw))
      losses.push(`W3: ${label} keeps up with a higher rate (${highest(steps)}/s vs ${highest(tw)}/s).`);
  }
  lines.push('');
  const staged = (tw ?? []).filter((s) => s.stages);
  if (staged.length > 0) {
    lines.push(
      "Where Tickwork's lateness accrues in each step (ms after the due time, p50 / p99, cumulative): " +
        staged
          .map(
            (s) =>
              `${s.targetPerSec}/s: ` +
              [...Object.entries(s.stages!), ['handler', s.lateness] as const]
                .map(([name, v]) => `${name} ${ms(v.p50)} / ${ms(v.p99)}`)
                .join(', '),
          )
          .join('; ') +
        '.',
      '',
    );
  }
  return lines;
}

function w1w4Section(r: SuiteResults, losses: string[]): string[] {
  const lines = [
    '## W1 / W4 — store scale and cost of a big store',
    '',
    `Idle: ${config.w4.idleSeconds} s sampled once every system's processes have run ${config.w4.settleSeconds} s after they were ready. The herd on top follows an unmeasured warm-up herd of ${config.w4.warmupHerd.toLocaleString('en')} (the processes started fresh for the idle window); a system whose warm-up herd did not drain shows that herd (marked), as a second one would find its leftover jobs.`,
    '',
    '| system | stored | bulk store rate /s | idle CPU % of a core (workers) | idle Redis cmd/s | idle PG xact/s | herd of ' +
      `${config.w4.herd.toLocaleString('en')} on top: drain s, p99 ms | RSS max MB (per process) |`,
    '|---|---|---|---|---|---|---|---|',
  ];
  const tw = r.w1w4[TICKWORK];
  for (const [label, e] of Object.entries(r.w1w4)) {
    const rss = Object.entries(e.idle.rssMbMax)
      .map(([n, v]) => `${n.replace(/^\S+ /, '')} ${v}`)
      .join(', ');
    lines.push(
      `| ${label} | ${e.background.toLocaleString('en')} | ${e.preloadPerSec} | ${e.idle.cpuPctTotalMean} | ${e.idle.redisOpsPerSecMean} | ${e.idle.pgXactPerSecMean} | ${sec(e.herdOnTop.drainMs)}, ${ms(e.herdOnTop.lateness.p99)}${e.herdOnTop.warmup ? ' (warm-up herd)' : ''} | ${rss} |`,
    );
    if (tw && label !== TICKWORK) {
      if (e.preloadPerSec > tw.preloadPerSec)
        losses.push(`W1: ${label} stores faster (${e.preloadPerSec}/s vs ${tw.preloadPerSec}/s).`);
      if (e.idle.cpuPctTotalMean < tw.idle.cpuPctTotalMean)
        losses.push(
          `W4: ${label} idles cheaper (${e.idle.cpuPctTotalMean}% vs ${tw.idle.cpuPctTotalMean}% of a core).`,
        );
      if (e.herdOnTop.drained && !(tw.herdOnTop.drainMs <= e.herdOnTop.drainMs))
        losses.push(
          `W4: ${label} drains the herd over the big store faster (${sec(e.herdOnTop.drainMs)} s vs ${sec(tw.herdOnTop.drainMs)} s).`,
        );
    }
  }
  lines.push('');
  if (tw?.dueScans) {
    const [a, b] = tw.dueScans;
    lines.push(
      `Tickwork due-scan (the claim path's tenant walk + fair fetch, ${a?.due} due, rolled back): ` +
        tw.dueScans
          .map(
            (s) =>
              `${s.stored.toLocaleString('en')} stored: p50 ${s.p50Ms.toFixed(1)} ms, p99 ${s.p99Ms.toFixed(1)} ms`,
          )
          .join('; ') +
        (a && b
          ? `; ratio ${(b.p50Ms / a.p50Ms).toFixed(2)}× for ${(b.stored / a.stored).toFixed(0)}× the rows (target ≤ 2×). Growth loaded at ${tw.growPerSec}/s.`
          : ''),
      '',
    );
  }
  return lines;
}

function w5Section(r: SuiteResults, losses: string[]): string[] {
  const lines = [
    `## W5 — native recurring schedules (${config.w5.schedules.toLocaleString('en')} on \`${config.w5.pattern}\`)`,
    '',
    `Each system starts W5 with fresh processes and gets one unmeasured warm-up herd (${config.w5.warmupHerd.toLocaleString('en')} one-shot jobs) before the schedules are created.`,
    '',
    '| system | created in ms | occurrences run / expected | lateness p50 / p99 / max ms | duplicates |',
    '|---|---|---|---|---|',
  ];
  const tw = r.w5[TICKWORK];
  for (const [label, e] of Object.entries(r.w5)) {
    if ('skipped' in e) {
      lines.push(`| ${label} | skipped: ${e.skipped} | | | |`);
      continue;
    }
    const l = e.lateness;
    lines.push(
      `| ${label} | ${e.createMs} | ${l.executed} / ${l.expected} | ${ms(l.p50)} / ${ms(l.p99)} / ${ms(l.max)} | ${l.duplicates} |`,
    );
    if (tw && !('skipped' in tw) && label !== TICKWORK && l.p99 < tw.lateness.p99)
      losses.push(
        `W5: ${label} fires its recurring schedules closer to time (p99 ${ms(l.p99)} ms vs ${ms(tw.lateness.p99)} ms).`,
      );
  }
  lines.push('');
  return lines;
}

/** The largest stage of Tickwork's lateness in its largest herd: the apparent reason it is late. */
function whereTheTimeGoes(r: SuiteResults): string[] {
  const e = r.w2[TICKWORK];
  const run = e?.large ?? e?.small.filter((x) => !x.warmup && x.stages).at(-1);
  if (!run?.stages) return [];
  const stages = [...Object.entries(run.stages), ['handler', run.lateness] as const];
  // Stages done before T0 (the lookahead's claim) cost the herd nothing; the shares are of the
  // time after T0.
  const ahead: string[] = [];
  let prev = 0;
  const steps: { name: string; ms: number }[] = [];
  for (const [name, v] of stages) {
    if (steps.length === 0 && v.p50 <= 0) {
      ahead.push(`${name} ${ms(-v.p50)} ms before T0`);
      continue;
    }
    steps.push({ name, ms: v.p50 - prev });
    prev = v.p50;
  }
  if (steps.length === 0) return [];
  const worst = steps.reduce((a, b) => (b.ms > a.ms ? b : a));
  return [
    `Where Tickwork's time goes (herd of ${run.size.toLocaleString('en')}, p50 lateness): ` +
      (ahead.length > 0 ? `${ahead.join(', ')}; after T0, ` : '') +
      steps.map((x) => `${x.name} +${ms(x.ms)} ms`).join(', ') +
      `. The largest share is "${worst.name}" (${Math.round((100 * worst.ms) / Math.max(1, prev))}% of ${ms(prev)} ms).`,
    '',
  ];
}

const runsNote = (n: number) => (n > 1 ? ` (median of ${n})` : '');

/** The targets issue 6 sets for Tickwork, each with its figure from this run. */
function targetsSection(r: SuiteResults): string[] {
  const check = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'met' : '**missed**');
  const lines = ['## Targets (issue 6)', '', '| target | this run | |', '|---|---|---|'];
  const large = r.w2[TICKWORK]?.large;
  if (large) {
    const peers = Object.entries(r.w2).filter(([l]) => !l.startsWith('Tickwork'));
    const beaten = peers.every(([, e]) => !e.large || !e.large.drained || large.drainMs < e.large.drainMs);
    // Faster by median is not enough: a peer that drained faster in one round, on the same box at
    // the same time, can do it.
    const lostRounds = roundLosses(r).length;
    const ok =
      large.drained &&
      large.drainMs <= 15_000 &&
      large.lateness.duplicates === 0 &&
      beaten &&
      lostRounds === 0;
    const versus = !beaten
      ? 'a peer was faster'
      : lostRounds > 0
        ? `faster than every peer by median, but a peer was faster in ${lostRounds} round${lostRounds > 1 ? 's' : ''}`
        : 'faster than every peer that ran it';
    lines.push(
      `| W2: ${large.size.toLocaleString('en')} herd drained ≤ 15 s, 0 missing, 0 duplicates, faster than every peer | ${large.drained ? `${sec(large.drainMs)} s` : 'not drained'}${runsNote(largeRunsOf(r.w2[TICKWORK]!).length)}, ${large.lateness.missing} missing, ${large.lateness.duplicates} duplicates, ${versus} | ${check(ok)} |`,
    );
  } else lines.push(`| W2: large herd ≤ 15 s | — | ${check(undefined)} |`);
  const steps = r.w3[TICKWORK];
  const highest = steps
    ? Math.max(0, ...steps.filter((s) => s.keptUp).map((s) => s.targetPerSec))
    : undefined;
  lines.push(
    `| W3: ≥ 10,000 fires/s sustained with p99 < 1 s | ${highest === undefined ? '—' : `${highest}/s kept up`} | ${check(highest === undefined ? undefined : highest >= 10_000)} |`,
  );
  const scans = r.w1w4[TICKWORK]?.dueScans;
  const scanRatio = scans && scans.length === 2 ? scans[1]!.p50Ms / scans[0]!.p50Ms : undefined;
  lines.push(
    `| W1: due-scan at ${scans?.[1]?.stored.toLocaleString('en') ?? '10M'} within 2× of ${scans?.[0]?.stored.toLocaleString('en') ?? '1M'} | ${scanRatio === undefined ? '—' : `${scanRatio.toFixed(2)}×`} | ${check(scanRatio === undefined ? undefined : scanRatio <= 2)} |`,
  );
  const idleCpu = r.w1w4[TICKWORK]?.idle.cpuPctTotalMean;
  lines.push(
    `| W4: idle CPU with ${r.w1w4[TICKWORK]?.background.toLocaleString('en') ?? '1M'} loaded < 5% of a core | ${idleCpu === undefined ? '—' : `${idleCpu}%`} | ${check(idleCpu === undefined ? undefined : idleCpu < 5)} |`,
    '',
  );
  return lines;
}

export async function writeReport(r: SuiteResults, opts: { charts?: boolean } = {}): Promise<string[]> {
  // Smoke runs go to bench/results/tmp (ignored by git): their figures are not to be quoted.
  const dir = config.resultsDir ?? join(config.root, 'bench', 'results', ...(r.quick ? ['tmp'] : []));
  mkdirSync(dir, { recursive: true });
  const base = `${r.date.slice(0, 10)}-${r.host}${r.quick ? '-quick' : ''}`;
  const losses: string[] = [];
  const sections = [
    ...(Object.keys(r.w2).length ? w2Section(r, losses) : []),
    ...(Object.keys(r.w3).length ? w3Section(r, losses) : []),
    ...(Object.keys(r.w1w4).length ? w1w4Section(r, losses) : []),
    ...(Object.keys(r.w5).length ? w5Section(r, losses) : []),
  ];
  const charts = opts.charts ? await renderCharts(r, dir, base) : [];
  const md = [
    `# Tickwork side by side — ${r.date} on ${r.host} (${r.cpus} CPUs, ${r.memoryGb} GB, Node ${r.node})`,
    '',
    `Reproduce: \`npm run bench\`${r.quick ? ' (this was a BENCH_QUICK smoke run: tiny sizes, not figures to quote)' : ''}. Same box, same services, one run, systems in turn. ` +
      'Budget for everyone: 2 worker processes, total handler concurrency 100; payload ~200 bytes. ' +
      'Lateness = handler start − nominal scheduled time, recorded in an HDR histogram (hdr-histogram-js); every job id is counted, so missing and duplicate executions are too. ' +
      `Runs: ${config.w2.warmups} warm-up + ${config.w2.runs} measured runs for the ${config.w2.small.toLocaleString('en')} herd (defaults variants: 1 run); ` +
      `${config.w2.largeRuns} measured runs for the ${config.w2.large.toLocaleString('en')} herd, interleaved: round i runs each system's i-th herd in turn, with every system started (idle when not measured) and warmed up by one small herd, so a change in the box's speed falls on all alike; ` +
      '1 run for the other expensive workloads (W1/W4, W3 steps, W5), to fit the suite in ~15 minutes. Within a system, runs share its processes and use fresh job ids; each system starts from a fresh database / Redis db.',
    '',
    describeBoxSpeed(r.boxSpeedMs.start, r.boxSpeedMs.end),
    ...(r.postgres
      ? [
          '',
          `PostgreSQL, for every system that uses it: ${r.postgres}. ` +
            (r.config.analyzeHerd === undefined
              ? ''
              : r.config.analyzeHerd
                ? "Once a herd is stored, its system's jobs table is analyzed (ANALYZE), as autovacuum would have done by T0 for a herd created well ahead; in the interleaved rounds each system's database is vacuumed after its herd, so that its autovacuum does not run during the next system's herd."
                : 'Herds were not analyzed after storing (BENCH_HERD_ANALYZE=0): planners may see the jobs table as it was before the herd.'),
        ]
      : []),
    '',
    '| system | version | settings | durability |',
    '|---|---|---|---|',
    ...Object.entries(r.contenders).map(
      ([label, c]) => `| ${label} | ${c.version} | ${c.settings} | ${c.durability} |`,
    ),
    '',
    ...charts.map((f) => `![${f}](${f})`),
    '',
    ...targetsSection(r),
    '## Where Tickwork loses',
    '',
    ...(losses.length ? losses.map((l) => `- ${l}`) : ['- Nowhere in this run.']),
    '',
    ...whereTheTimeGoes(r),
    ...sections,
    `Durations (s): ${Object.entries(r.durationsSec)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}.`,
    '',
  ].join('\n');
  writeFileSync(join(dir, `${base}.json`), JSON.stringify(r, null, 2));
  writeFileSync(join(dir, `${base}.md`), md);
  return [`${base}.md`, `${base}.json`, ...charts];
}
