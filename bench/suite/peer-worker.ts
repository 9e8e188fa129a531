/**
 * Entry of a peer's worker process: `peer-worker.js <system> <options JSON>`. Runs that system's
 * worker; every handler reports (run, index, lateness) to the parent, batched every 20 ms.
 */
import { runBullmqWorker } from './bullmq';
import { executionOf, type BenchPayload } from './contender';
import { runGraphileWorker } from './graphile';
import type { WorkerMessage } from './peer-processes';
import { runPgBossWorker } from './pgboss';

/** What a system's worker calls at the start of each handler. */
export type Report = (payload: BenchPayload) => void;
/** Starts a system's worker; resolves once it is polling; returns how to stop it. */
export type WorkerRunner = (options: Record<string, unknown>, report: Report) => Promise<() => Promise<void>>;

const runners: Record<string, WorkerRunner> = {
  bullmq: runBullmqWorker,
  'pg-boss': runPgBossWorker,
  'graphile-worker': runGraphileWorker,
};

async function main(): Promise<void> {
  const [system, json] = process.argv.slice(2);
  const runner = runners[system ?? ''];
  if (!runner || !json) throw new Error(`usage: peer-worker <${Object.keys(runners).join('|')}> <options>`);
  let pending: [number, number, number, number][] = [];
  const send = (m: WorkerMessage) => process.send!(m);
  const flush = setInterval(() => {
    if (pending.length === 0) return;
    send({ executions: pending });
    pending = [];
  }, 20);
  const stop = await runner(JSON.parse(json) as Record<string, unknown>, (payload) => {
    const e = executionOf(payload);
    pending.push([e.run, e.index, e.latenessMs, e.startedAt]);
  });
  send({ ready: true });
  process.once('SIGTERM', () => {
    clearInterval(flush);
    void stop().finally(() => process.exit(0));
  });
  // The parent going away (a crashed suite) must not leave workers behind.
  process.once('disconnect', () => process.exit(0));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
