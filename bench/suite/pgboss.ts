/**
 * pg-boss on PostgreSQL: jobs stored with insert() and startAfter, two worker processes each
 * fetching batches of 50 and running them at once (50 in flight per process). "defaults" polls
 * at pg-boss's default 2 s; "tuned" at the documented minimum, 0.5 s.
 */
import PgBoss from 'pg-boss';
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
import { dropDatabase, freshDatabase, postgresDurability, databaseUrl } from './databases';
import type { Execution } from './lateness';
import { PeerProcesses } from './peer-processes';
import type { WorkerRunner } from './peer-worker';
import { versionOf } from './versions';

const QUEUE = 'bench';
const DATABASE = 'pgboss';

export class PgBossContender implements Contender {
  readonly system = 'pg-boss' as const;
  readonly version = versionOf('pg-boss');
  readonly label: string;
  readonly settings: string;
  readonly database = { name: DATABASE, jobsTable: 'pgboss.job' };
  durability = 'PostgreSQL';
  private boss?: PgBoss;
  private readonly workers: PeerProcesses;

  constructor(tuned: boolean) {
    this.label = `pg-boss (${tuned ? 'tuned' : 'defaults'})`;
    const polling = tuned ? 0.5 : 2;
    this.settings = `insert() with startAfter, 2 workers × work({batchSize: 50${tuned ? ', pollingIntervalSeconds: 0.5' : ''}}) (polls every ${polling} s)`;
    this.workers = new PeerProcesses('pg-boss', {
      batchSize: config.concurrency / 2,
      pollingIntervalSeconds: polling,
    });
  }

  async start(sink: (e: Execution) => void): Promise<void> {
    const url = await freshDatabase(DATABASE);
    this.durability = await postgresDurability(url);
    this.boss = new PgBoss({ connectionString: url, max: 4 });
    this.boss.on('error', (e) => console.error(`pg-boss: ${e.message}`));
    await this.boss.start();
    await this.boss.createQueue(QUEUE);
    await this.workers.start(sink);
  }

  async enqueue(jobs: readonly BenchJob[]): Promise<void> {
    for (let start = 0; start < jobs.length; start += 1_000)
      await this.boss!.insert(
        jobs.slice(start, start + 1_000).map((job) => ({
          name: QUEUE,
          data: payloadOf(job),
          startAfter: new Date(job.dueAt),
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
    await this.boss?.stop({ graceful: false, wait: true });
    await dropDatabase(DATABASE);
  }
}

export const runPgBossWorker: WorkerRunner = async (options, report) => {
  const boss = new PgBoss({ connectionString: databaseUrl(DATABASE), max: 4 });
  boss.on('error', (e) => console.error(`pg-boss worker: ${e.message}`));
  await boss.start();
  await boss.work<BenchPayload>(
    QUEUE,
    { batchSize: Number(options.batchSize), pollingIntervalSeconds: Number(options.pollingIntervalSeconds) },
    async (jobs) => {
      // The batch's handlers run at once: 50 in flight per process.
      await Promise.all(jobs.map(async (job) => report(job.data)));
    },
  );
  return () => boss.stop({ graceful: false, wait: true });
};
