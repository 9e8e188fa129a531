/**
 * BullMQ on Redis: jobs stored with addBulk and a delay, two worker processes at concurrency 50
 * each. "defaults" keeps BullMQ's defaults (completed jobs kept) and Redis as configured; "tuned"
 * adds the documented throughput settings (removeOnComplete/removeOnFail, so Redis does not grow
 * with every run) and runs Redis with its append-only file fsynced every second, the durable
 * setting its figures are compared at.
 */
import { Queue, Worker } from 'bullmq';
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
import type { Execution } from './lateness';
import { PeerProcesses } from './peer-processes';
import { flushSuiteDb, redisDurability, useAofEverysec } from './redis';
import type { WorkerRunner } from './peer-worker';
import { versionOf } from './versions';

const QUEUE = 'bench';
const connection = { host: config.redis.host, port: config.redis.port, db: config.redis.db };

export class BullmqContender implements Contender {
  readonly system = 'bullmq' as const;
  readonly version = versionOf('bullmq');
  readonly label: string;
  readonly settings: string;
  durability = 'Redis (persistence as configured)';
  private queue?: Queue;
  private readonly workers: PeerProcesses;
  private restoreRedis?: () => Promise<void>;

  constructor(private readonly tuned: boolean) {
    this.label = `BullMQ (${tuned ? 'tuned' : 'defaults'})`;
    this.settings = tuned
      ? 'addBulk, 2 workers × concurrency 50, removeOnComplete/removeOnFail'
      : 'addBulk, 2 workers × concurrency 50, otherwise defaults (completed jobs kept)';
    this.workers = new PeerProcesses('bullmq', { tuned, concurrency: config.concurrency / 2 });
  }

  async start(sink: (e: Execution) => void): Promise<void> {
    await flushSuiteDb();
    if (this.tuned && config.redis.tunedAof) this.restoreRedis = await useAofEverysec();
    this.durability = await redisDurability();
    this.queue = new Queue(QUEUE, { connection });
    await this.workers.start(sink);
  }

  async enqueue(jobs: readonly BenchJob[]): Promise<void> {
    const now = Date.now();
    for (let start = 0; start < jobs.length; start += 1_000)
      await this.queue!.addBulk(
        jobs.slice(start, start + 1_000).map((job) => ({
          name: 'fire',
          data: payloadOf(job),
          opts: {
            delay: Math.max(0, job.dueAt - now),
            ...(this.tuned ? { removeOnComplete: true, removeOnFail: true } : {}),
          },
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

  async recurring(n: number, pattern: string, run: number): Promise<void> {
    for (let start = 0; start < n; start += 500)
      await Promise.all(
        Array.from({ length: Math.min(500, n - start) }, (_, k) =>
          this.queue!.upsertJobScheduler(
            `schedule-${start + k}`,
            { pattern },
            {
              name: 'fire',
              data: payloadOf({ run, index: start + k, dueAt: 0 }),
              opts: this.tuned ? { removeOnComplete: true, removeOnFail: true } : {},
            },
          ),
        ),
      );
  }

  processes(): NamedProcess[] {
    return this.workers.processes();
  }

  async stop(): Promise<void> {
    await this.workers.stop();
    await this.queue?.close();
    await flushSuiteDb();
    await this.restoreRedis?.();
    this.restoreRedis = undefined;
  }
}

/** The worker process side. A job scheduler's job carries its nominal time in opts.prevMillis. */
export const runBullmqWorker: WorkerRunner = async (options, report) => {
  const worker = new Worker<BenchPayload>(
    QUEUE,
    async (job) => {
      const data = job.data;
      report(
        data.due > 0 ? data : { ...data, due: job.opts.prevMillis ?? job.timestamp + (job.opts.delay ?? 0) },
      );
    },
    {
      connection,
      concurrency: Number(options.concurrency),
      ...(options.tuned ? { removeOnComplete: { count: 0 }, removeOnFail: { count: 0 } } : {}),
    },
  );
  await worker.waitUntilReady();
  return () => worker.close();
};
