#!/usr/bin/env node
// `npm run bench:prune`: keeps only each benchmark's latest results in bench/results/ (the files
// of its newest run: .md, .json and any charts); older runs live in git history
// (`git log --stat -- bench/results/`). Run it after committing a new run, or after merging
// branches that each added one. `--dry-run` lists what it would delete.
import { readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DIR = join(dirname(fileURLToPath(import.meta.url)), 'results');
// A run's timestamp, as the writers stamp it: 2026-12-01T22-21-23-112Z, 2026-12-02T18-27-53Z,
// 2026-12-02-0849 (the suite), or a bare date.
const STAMP = /\d{4}-\d{2}-\d{2}(?:T[\d-]+Z|-\d{4})?/;
// A suite run's charts carry the workload after the host: 2026-12-02-0849-vm-w2-herd-large.png.
const CHART = /-w\d[\w-]*$/;

/** The benchmark a results file belongs to (its name without the run's stamp) and the stamp. */
export function runOf(file) {
  const m = STAMP.exec(file);
  if (!m) return null;
  const kind = file
    .replace(m[0], '<run>')
    .replace(/\.(md|json|png|svg)$/, '')
    .replace(CHART, '');
  return { kind, stamp: m[0] };
}

/** The files of every run but each benchmark's newest. */
export function superseded(files) {
  const newest = new Map();
  for (const f of files) {
    const r = runOf(f);
    if (r && !(newest.get(r.kind) >= r.stamp)) newest.set(r.kind, r.stamp);
  }
  return files.filter((f) => {
    const r = runOf(f);
    return r !== null && r.stamp !== newest.get(r.kind);
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dryRun = process.argv.includes('--dry-run');
  const files = readdirSync(DIR).filter((f) => statSync(join(DIR, f)).isFile());
  const old = superseded(files);
  for (const f of old) if (!dryRun) rmSync(join(DIR, f));
  console.log(
    `${dryRun ? 'would delete' : 'deleted'} ${old.length} of ${files.length} files in bench/results/`,
  );
  if (dryRun) for (const f of old) console.log(`  ${f}`);
}
