/**
 * npm run test:faults — the fault suite: real schedulers, executors and an API on a private
 * PostgreSQL and Kafka, a recording webhook receiver, and an oracle of expected occurrences. Each
 * scenario injects one fault and checks its bounds (docs/faults.md). Prints a table, writes
 * bench/results/faults-<timestamp>.{md,json}, and exits 1 if any bound was violated.
 *
 *   npm run test:faults                       the full suite (~25 min)
 *   npm run test:faults -- --short            the CI version (fewer rounds, shorter windows)
 *   npm run test:faults -- --only a,b         only these scenarios (names: --list)
 * Environment: FAULTS_SHORT=1, FAULTS_ONLY=a,b, FAULTS_KEEP_DB=1 (keep each scenario's database),
 * FAULTS_PG_PORT / FAULTS_KAFKA_PORT / FAULTS_KAFKA_CONTROLLER_PORT (else free ports),
 * SCHEMA_REGISTRY_URL (default the shared one on 127.0.0.1:8081; a private one starts if none answers).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { log, scoped } from './harness/log';
import { PrivateStack, ROOT } from './harness/private-stack';
import { failures, LoadSampler, suiteMeta, table, writeReport } from './harness/report';
import type { ScenarioResult } from './harness/scenario';
import { SCENARIOS } from './scenarios';

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  if (i >= 0) return process.argv[i + 1];
  const eq = process.argv.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

async function main(): Promise<number> {
  if (process.argv.includes('--list')) {
    for (const s of SCENARIOS)
      console.log(`${s.name.padEnd(24)} ${s.title}\n${''.padEnd(24)} bound: ${s.bound}`);
    return 0;
  }
  const short =
    process.argv.includes('--short') || ['1', 'true', 'yes'].includes(process.env.FAULTS_SHORT ?? '');
  const only = (option('--only') ?? process.env.FAULTS_ONLY ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = only.filter((n) => !SCENARIOS.some((s) => s.name === n));
  if (unknown.length > 0) {
    console.error(
      `unknown scenario(s): ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`,
    );
    return 2;
  }
  const selected = only.length ? SCENARIOS.filter((s) => only.includes(s.name)) : SCENARIOS;
  if (!existsSync(join(ROOT, 'dist', 'apps', 'scheduler', 'src', 'main.js'))) {
    console.error('dist/ is missing: run npm run build (npm run test:faults does)');
    return 2;
  }

  const startedAt = Date.now();
  const sampler = new LoadSampler();
  const dir = join(ROOT, '.stack', 'faults');
  const runDir = join(dir, 'runs', new Date(startedAt).toISOString().replace(/[:.]/g, '-'));
  mkdirSync(runDir, { recursive: true });
  log(
    'suite',
    `${short ? 'short' : 'full'} run of ${selected.map((s) => s.name).join(', ')}; app logs in ${runDir}`,
  );

  const stack = await PrivateStack.start(dir, scoped('stack'));
  let stopping = false;
  const interrupt = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log('suite', `${signal}: stopping the private stack`);
    void stack.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', () => interrupt('SIGINT'));
  process.once('SIGTERM', () => interrupt('SIGTERM'));

  const results: ScenarioResult[] = [];
  try {
    for (const scenario of selected) {
      const scope = scoped(scenario.name);
      // A scenario that failed half-way must not leave the next one without a broker or a database.
      if (!(await stack.kafka.answers())) {
        scope('the private broker does not answer: starting it again');
        await stack.kafka.stop('SIGKILL');
        await stack.kafka.start();
      }
      if (!(await stack.postgres.accepting())) {
        scope('the private PostgreSQL does not answer: starting it again');
        await stack.postgres.start();
      }
      scope(`start: ${scenario.title}`);
      const result = await scenario.run({ stack, short, runDir, log: scope });
      results.push(result);
      scope(`${result.error ? 'ERROR' : result.passed ? 'passed' : 'FAILED'} in ${result.durationSec} s`);
    }
  } finally {
    await stack.stop();
  }

  const meta = suiteMeta(startedAt, short ? 'short' : 'full', sampler.stop());
  const [md, json] = writeReport(meta, results);
  console.log(`\n${table(results)}\n`);
  const failed = failures(results);
  if (failed.length > 0) {
    console.log(`${failed.length} bound(s) violated:`);
    for (const f of failed) console.log(`  - ${f}`);
  } else {
    console.log('every bound held');
  }
  console.log(`\nreport: ${md}\n        ${json}`);
  return failed.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: Error) => {
    console.error(e.stack ?? e.message);
    process.exit(1);
  },
);
