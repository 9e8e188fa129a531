/**
 * The fire SLO sweep: every few seconds, for each shard this scheduler holds, judge the scheduled
 * fires claimed since the last sweep and the ones still undecided (LATE / MISSED into the ledger,
 * once per fire), then read the opted-in jobs' last success for the dead-man gauges. It runs in the
 * scheduler, not the executor, so a MISSED occurrence is recorded when no executor runs at all; the
 * shard's owner does it, so each fire has one judge, and a new owner goes on from the shard's mark.
 */
import {
  effectiveToleranceMs,
  judgeOccurrence,
  missedDeadline,
  nominalIntervalSeconds,
  type FireSloDefaults,
  type SloCandidate,
  type SloJudgement,
  type SloMetricJob,
  type SloSweepResult,
} from '@tickwork/domain';
import type { SloStore } from './ports';
import type { ShardOwnership } from './shard-ownership';

export interface SloSweeperOptions {
  readonly owner: string;
  readonly defaults: FireSloDefaults;
  /** How often to sweep. */
  readonly sweepMs: number;
  /** Batches younger than this are left for the next sweep (their fires are still being started). */
  readonly settleMs: number;
  /** Most batches, and most watched fires, per shard per sweep. */
  readonly batchLimit: number;
  /** Most fires of new batches judged per shard per sweep (whole batches). */
  readonly maxFiresPerSweep: number;
  /** Most opted-in jobs this instance exports per-job series for. */
  readonly maxMetricJobs: number;
}

export interface SloSweeperEvents {
  onSwept?(shard: number, result: SloSweepResult): void;
  onMetricJobs?(jobs: readonly SloMetricJob[], now: Date): void;
  onError?(error: Error): void;
}

/**
 * Judges one fire: the tolerance and deadline it was given when first watched, or those of its
 * job's current definition (policies.tolerance_ms, or the deployment's default). A fire of a
 * deleted job that nobody watched is not judged.
 */
export function judgeCandidate(c: SloCandidate, now: Date, defaults: FireSloDefaults): SloJudgement {
  let toleranceMs: number;
  let deadline: Date;
  if (c.watched) {
    ({ toleranceMs, deadline } = c.watched);
  } else {
    if (!c.schedule) return { verdict: 'IGNORED' };
    toleranceMs = effectiveToleranceMs(c.policies?.toleranceMs, defaults);
    deadline = missedDeadline(
      c.schedule,
      { nominal: c.nominalTime, dstShiftMs: c.dstShiftMs },
      toleranceMs,
      defaults.missedAfterMs,
    );
  }
  const v = judgeOccurrence({
    nominal: c.nominalTime,
    firstStartedAt: c.firstStartedAt,
    toleranceMs,
    deadline,
    now,
  });
  switch (v.verdict) {
    case 'ON_TIME':
      return v;
    case 'PENDING':
      return { verdict: 'PENDING', toleranceMs, deadline };
    case 'LATE':
    case 'MISSED':
      return { verdict: v.verdict, latenessMs: v.latenessMs, toleranceMs, deadline };
  }
}

/** The dead-man figures of an opted-in job (epoch seconds of its last success, its interval). */
export function deadManSample(
  job: SloMetricJob,
  now: Date,
): { lastSuccessSeconds: number; intervalSeconds: number | null } {
  return {
    lastSuccessSeconds: (job.lastSuccessAt ?? job.createdAt).getTime() / 1000,
    intervalSeconds: nominalIntervalSeconds(job.schedule, now),
  };
}

export class SloSweeper {
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly repo: SloStore,
    private readonly ownership: Pick<ShardOwnership, 'claimable'>,
    private readonly opts: SloSweeperOptions,
    private readonly events: SloSweeperEvents = {},
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Finishes the sweep in hand and stops. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }

  /** One sweep of every held shard (a shard with a full page is swept again at once), then the gauges. */
  async sweepOnce(): Promise<void> {
    const held = this.ownership.claimable();
    for (const { shard, epoch } of held) {
      // A shard far behind (after an outage) is caught up a page at a time, 100 pages per sweep at most.
      for (let page = 0; page < 100; page++) {
        const result = await this.repo.sweepShard(
          {
            shard,
            epoch,
            owner: this.opts.owner,
            settleMs: this.opts.settleMs,
            limit: this.opts.batchLimit,
            maxFires: this.opts.maxFiresPerSweep,
          },
          (c, now) => judgeCandidate(c, now, this.opts.defaults),
        );
        this.events.onSwept?.(shard, result);
        if (!result.held || !result.more) break;
      }
    }
    if (this.events.onMetricJobs) {
      const jobs = await this.repo.metricJobs(
        held.map((h) => h.shard),
        this.opts.maxMetricJobs,
      );
      this.events.onMetricJobs(jobs, new Date());
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.sweepOnce();
      } catch (e) {
        this.events.onError?.(e as Error);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.opts.sweepMs);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }
}
