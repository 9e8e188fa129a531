/**
 * What every system under test offers the workloads: start its worker processes, store jobs due
 * at given instants, store background schedules, create recurring schedules, name its processes.
 * Handlers report executions to the sink passed to `start`.
 */
import type { Execution } from './lateness';

/** One job to store: `run` and `index` identify it, `dueAt` (epoch ms) is its nominal time. */
export interface BenchJob {
  readonly run: number;
  readonly index: number;
  readonly dueAt: number;
}

/** The job payload every system carries (about 200 bytes), read back by the handler. */
export interface BenchPayload {
  readonly r: number;
  readonly i: number;
  readonly due: number;
  readonly pad: string;
}

const PAD = 'x'.repeat(150);
export const payloadOf = (job: BenchJob): BenchPayload => ({
  r: job.run,
  i: job.index,
  due: job.dueAt,
  pad: PAD,
});
export const jobKey = (job: BenchJob): string => `r${job.run}-${job.index}`;

/** What a handler reports for one execution of this payload, started now. */
export const executionOf = (p: BenchPayload, startedAt = Date.now()): Execution => ({
  run: p.r,
  index: p.i,
  latenessMs: startedAt - p.due,
  startedAt,
});

/** When background jobs are due: a year ahead, never within the bench. */
export const FAR_AWAY = Date.now() + 365 * 86_400_000;

/** Runs `load(from, to)` over [0, n) in chunks, two at a time (every system gets two writers). */
export async function inParallel(
  n: number,
  chunk: number,
  load: (from: number, to: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const writer = async () => {
    while (next < n) {
      const from = next;
      next = Math.min(n, next + chunk);
      await load(from, next);
    }
  };
  await Promise.all([writer(), writer()]);
}

export interface NamedProcess {
  readonly name: string;
  readonly pid: number;
}

/** Cumulative lateness (p50, p99 ms after the nominal time) at each stage of a system's path. */
export type StageLateness = Record<string, { p50: number; p99: number }>;

export interface Contender {
  /** e.g. "Tickwork (Kafka target)", "BullMQ (tuned)". */
  readonly label: string;
  readonly system: 'tickwork' | 'bullmq' | 'pg-boss' | 'graphile-worker';
  readonly version: string;
  readonly settings: string;
  readonly durability: string;
  /** Its suite database (see databases.ts) and the table its jobs go into, if it keeps them in PostgreSQL. */
  readonly database?: { readonly name: string; readonly jobsTable: string };
  /** The prefix of the Kafka topics of the running system, if it keeps anything in Kafka. */
  kafkaTopicPrefix?(): string;
  /** Fresh state, then the worker processes, ready to execute. */
  start(sink: (e: Execution) => void): Promise<void>;
  /** Stores these jobs (bulk); resolves once they are durable. */
  enqueue(jobs: readonly BenchJob[]): Promise<void>;
  /** Stores `n` one-shot jobs due far in the future (the idle load of W1/W4). */
  preloadBackground(n: number): Promise<void>;
  /** Creates `n` recurring schedules on this cron pattern (W5); undefined when not supported. */
  recurring?(n: number, pattern: string, run: number): Promise<void>;
  /** Where a run's lateness accrued, when the system records its stages. */
  stageLateness?(run: number): Promise<StageLateness | undefined>;
  /** The processes that do the work, for the CPU/RSS sampler. */
  processes(): NamedProcess[];
  /** Stops everything it started and drops its state. */
  stop(): Promise<void>;
}
