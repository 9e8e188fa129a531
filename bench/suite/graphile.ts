/**
 * Graphile Worker on PostgreSQL: jobs stored with addJobs and runAt, two worker processes at
 * concurrency 50. "defaults" polls future jobs every 2 s (its default); "tuned" uses the
 * documented throughput settings: pollInterval 250 ms, a local queue, completeJobBatchDelay 0.
 */
import { Logger, makeWorkerUtils, run, type WorkerUtils } from 'graphile-worker';
import { config } from './config';
import {
  FAR_AWAY,
  inParallel,
  payloadOf,
  type BenchJob,
  type BenchPayload,
  type Contender,
  type NamedProcess,
} from './contender';
import { databaseUrl, dropDatabase, freshDatabase, postgresDurability } from './databases';
import type { Execution } from './lateness';
import { PeerProcesses } from './peer-processes';
import type { WorkerRunner } from './peer-worker';
import { versionOf } from './versions';

const DATABASE = 'graphile';
// Graphile logs every job at info level; only errors matter here.
const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error') console.error(`graphile-worker: ${message}`);
});

export class GraphileContender implements Contender {
  readonly system = 'graphile-worker' as const;
  readonly version = versionOf('graphile-worker');
  readonly label: string;
  readonly settings: string;
  readonly database = { name: DATABASE, jobsTable: 'graphile_worker._private_jobs' };
  durability = 'PostgreSQL';
  private utils?: WorkerUtils;
  private readonly workers: PeerProcesses;

  constructor(tuned: boolean) {
    this.label = `Graphile Worker (${tuned ? 'tuned' : 'defaults'})`;
    this.settings = tuned
      ? 'addJobs with runAt, 2 workers × concurrency 50, pollInterval 250 ms, localQueue size 100, completeJobBatchDelay 0'
      : 'addJobs with runAt, 2 workers × concurrency 50, otherwise defaults (pollInterval 2 s)';
    this.workers = new PeerProcesses('graphile-worker', { tuned, concurrency: config.concurrency / 2 });
  }

  async start(sink: (e: Execution) => void): Promise<void> {
    const url = await freshDatabase(DATABASE);
    this.durability = await postgresDurability(url);
    this.utils = await makeWorkerUtils({ connectionString: url, logger: quietLogger });
    await this.utils.migrate();
    await this.workers.start(sink);
  }

  async enqueue(jobs: readonly BenchJob[]): Promise<void> {
    for (let start = 0; start < jobs.length; start += 1_000)
      await this.utils!.addJobs(
        jobs.slice(start, start + 1_000).map((job) => ({
          identifier: 'fire',
          payload: payloadOf(job),
          runAt: new Date(job.dueAt),
        })),
      );
  }

  async preloadBackground(n: number): Promise<void> {
    await inParallel(n, 10_000, (from, to) =>
      this.enqueue(
        Array.from({ length: to - from }, (_, k) => ({ run: 0, index: from + k, dueAt: FAR_AWAY })),
      ),
    );
  }

  processes(): NamedProcess[] {
    return this.workers.processes();
  }

  async stop(): Promise<void> {
    await this.workers.stop();
    await this.utils?.release();
    await dropDatabase(DATABASE);
  }
}

export const runGraphileWorker: WorkerRunner = async (options, report) => {
  const tuned = Boolean(options.tuned);
  const runner = await run({
    connectionString: databaseUrl(DATABASE),
    concurrency: Number(options.concurrency),
    noHandleSignals: true,
    logger: quietLogger,
    ...(tuned ? { pollInterval: 250 } : {}),
    ...(tuned ? { preset: { worker: { localQueue: { size: 100 }, completeJobBatchDelay: 0 } } } : {}),
    taskList: {
      fire: async (payload) => report(payload as BenchPayload),
    },
  });
  return () => runner.stop();
};
