/** The suite's report: a table on stdout, and bench/results/faults-<timestamp>.{md,json}. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, hostname, loadavg } from 'node:os';
import { join } from 'node:path';
import { EARLY_TOLERANCE_MS, RECOVERY } from './oracle';
import { ROOT } from './private-stack';
import type { ScenarioResult } from './scenario';

export interface SuiteMeta {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly mode: 'short' | 'full';
  readonly commit: string;
  readonly branch: string;
  readonly host: string;
  readonly cpus: number;
  readonly node: string;
  /** 1-minute load average sampled every 10 s during the run: min / mean / max. */
  readonly load: { readonly min: number; readonly mean: number; readonly max: number };
}

const git = (...args: string[]) => {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
};

/** Samples the load average while the suite runs. */
export class LoadSampler {
  private readonly samples: number[] = [loadavg()[0]!];
  private readonly timer = setInterval(() => this.samples.push(loadavg()[0]!), 10_000);

  stop(): SuiteMeta['load'] {
    clearInterval(this.timer);
    const s = this.samples;
    return {
      min: Math.min(...s),
      mean: Number((s.reduce((a, b) => a + b, 0) / s.length).toFixed(2)),
      max: Math.max(...s),
    };
  }
}

export function suiteMeta(startedAt: number, mode: SuiteMeta['mode'], load: SuiteMeta['load']): SuiteMeta {
  return {
    startedAt: new Date(startedAt).toISOString(),
    finishedAt: new Date().toISOString(),
    mode,
    commit: git('rev-parse', '--short', 'HEAD'),
    branch: git('rev-parse', '--abbrev-ref', 'HEAD'),
    host: hostname(),
    cpus: cpus().length,
    node: process.version,
    load,
  };
}

const s = (ms: number | undefined | null) =>
  ms === undefined ? '—' : ms === null ? 'never' : `${(ms / 1000).toFixed(2)} s`;

/** The summary table (Markdown, also readable as plain text). */
export function table(results: readonly ScenarioResult[]): string {
  const head = [
    'scenario',
    'expected',
    'delivered',
    'skipped',
    'missing',
    'dup effects',
    'dup ledger ok',
    'early',
    'baseline p99',
    'p99 late',
    'max late',
    'recovery (bound)',
    'verdict',
  ];
  const rows = results.map((r) => {
    const f = r.figures;
    return [
      r.name,
      f ? String(f.expected) : '—',
      f ? String(f.delivered) : '—',
      f ? String(f.skippedByPolicy) : '—',
      f ? String(f.missing) : '—',
      f
        ? `${f.duplicateEffects}${f.duplicateSameAttempt ? ` (${f.duplicateSameAttempt} same attempt)` : ''}`
        : '—',
      String(r.duplicateLedgerSuccesses),
      f ? String(f.early) : '—',
      r.baseline ? s(r.baseline.p99) : '—',
      f ? s(f.lateness.p99) : '—',
      f ? s(f.lateness.max) : '—',
      r.recoveryMs === undefined && r.recoveryBoundMs === undefined
        ? '—'
        : `${s(r.recoveryMs)}${r.recoveryBoundMs !== undefined ? ` (≤ ${s(r.recoveryBoundMs)})` : ''}`,
      r.error ? 'ERROR' : r.passed ? 'pass' : 'FAIL',
    ];
  });
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** Every check that failed, with the scenario it belongs to. */
export function failures(results: readonly ScenarioResult[]): string[] {
  return results.flatMap((r) => [
    ...(r.error ? [`${r.name}: harness error: ${r.error.split('\n')[0]}`] : []),
    ...r.checks.filter((c) => !c.ok).map((c) => `${r.name}: ${c.name}: ${c.measured} (bound: ${c.bound})`),
  ]);
}

function markdown(meta: SuiteMeta, results: readonly ScenarioResult[]): string {
  const out: string[] = [
    `# Fault suite, ${meta.startedAt} (${meta.mode})`,
    '',
    `Commit ${meta.commit} (${meta.branch}) on ${meta.host}, ${meta.cpus} CPUs, Node ${meta.node}; 1-minute load average during the run ${meta.load.min.toFixed(1)}–${meta.load.max.toFixed(1)} (mean ${meta.load.mean}). Finished ${meta.finishedAt}.`,
    '',
    `Lateness = arrival of an occurrence's first attempt at the receiver minus its scheduled time. Early = a call more than ${EARLY_TOLERANCE_MS} ms before it. Baseline p99 = lateness p99 of the occurrences due in the window before the first fault: what on time is on this box at that moment. Recovery = from the fault's end until every occurrence due since the fault had arrived within the threshold of its time and all but ${RECOVERY.spareShare * 100}% of those due in the next ${RECOVERY.holdMs / 1000} s arrived within it; the threshold is ${RECOVERY.thresholdMs / 1000} s, or the baseline p99 when that is higher, at most ${RECOVERY.maxThresholdMs / 1000} s ("never": not within the window). The baseline is the occurrences due from the window's start to 3 s before the first fault. Dup effects = 2xx answers beyond the first per webhook-id (a call the caller cut is not an effect). Dup ledger ok = occurrences with more than one SUCCEEDED run. Skipped = occurrences the ledger records as skipped by their misfire policy.`,
    '',
    table(results),
    '',
  ];
  for (const r of results) {
    out.push(`## ${r.name}: ${r.title}`, '');
    out.push(
      `Window ${r.window.from} – ${r.window.to} (${r.window.seconds} s), workload ~${r.workloadRatePerSec} fires/s; scenario took ${r.durationSec} s.${r.baseline ? ` Baseline before the fault: ${r.baseline.count} fires, lateness p50 ${s(r.baseline.p50)}, p99 ${s(r.baseline.p99)}, max ${s(r.baseline.max)}; recovery threshold ${s(r.recoveryThresholdMs)}.` : ''}`,
      '',
    );
    if (r.error) out.push('```', r.error, '```', '');
    if (r.checks.length) {
      out.push('| check | bound | measured | |', '| --- | --- | --- | --- |');
      for (const c of r.checks)
        out.push(`| ${c.name} | ${c.bound} | ${c.measured} | ${c.ok ? 'ok' : '**FAIL**'} |`);
      out.push('');
    }
    if (r.figures && Object.keys(r.figures.missingReasons).length)
      out.push(`Missing by reason: ${JSON.stringify(r.figures.missingReasons)}`, '');
    if (r.missingSamples.length)
      out.push('Missing (first 10):', '', ...r.missingSamples.map((m) => `- ${m}`), '');
    if (r.notes.length) out.push(...r.notes.map((n) => `- ${n}`), '');
    if (r.crashes.length) {
      for (const c of r.crashes)
        out.push(
          `Crash of ${c.app} at ${new Date(c.at).toISOString()} (${c.code ?? c.signal}):`,
          '```',
          c.tail,
          '```',
          '',
        );
    }
    if (r.marks.length) out.push('Timeline:', '', ...r.marks.map((m) => `- ${m.t} ${m.what}`), '');
  }
  return out.join('\n');
}

/** Writes bench/results/faults-<timestamp>.{md,json}; returns the two paths. */
export function writeReport(meta: SuiteMeta, results: readonly ScenarioResult[]): [string, string] {
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = meta.startedAt.replace(/:/g, '-').replace(/\..*$/, 'Z');
  const base = join(dir, `faults-${stamp}${meta.mode === 'short' ? '-short' : ''}`);
  writeFileSync(`${base}.md`, markdown(meta, results));
  writeFileSync(`${base}.json`, JSON.stringify({ meta, results }, null, 2));
  return [`${base}.md`, `${base}.json`];
}
