/**
 * The workload: the mix at about 50 fires/s across two tenants — interval jobs every 5 s,
 * crons every 10 s and a stream of one-shots — stored straight into the scheduler's table (the
 * project's own bulk loader shape, test/support/seed.ts), and the expected occurrences of every
 * job in a window, computed from the definitions by plain arithmetic (not by the scheduler's code).
 */
import {
  DEFAULT_POLICIES,
  policiesToWire,
  scheduleToWire,
  shardOf,
  targetToWire,
  type JobPolicies,
  type Schedule,
} from '@tickwork/domain';
import type { Pool } from 'pg';

export interface WorkloadSpec {
  /** Job ids start with this (unique per scenario). */
  readonly prefix: string;
  readonly tenants: readonly string[];
  /** Interval jobs and their period. */
  readonly intervalJobs: number;
  readonly intervalMs: number;
  /** Cron jobs firing every `cronEverySec` seconds (a 6-field expression `*\/n * * * * *`). */
  readonly cronJobs: number;
  readonly cronEverySec: number;
  /** One-shots per second, from `start` to `oneShotsUntil`. */
  readonly oneShotsPerSec: number;
  /** No occurrence before this instant (epoch ms). */
  readonly start: number;
  readonly oneShotsUntil: number;
  /** Extra interval jobs (e.g. many 1-second ones, to keep the claim path busy). */
  readonly fastIntervalJobs?: number;
  readonly fastIntervalMs?: number;
}

/** One job of the workload, as defined. */
export interface JobDef {
  readonly jobId: string;
  readonly tenantId: string;
  readonly shard: number;
  readonly schedule: Schedule;
  /** Where its first occurrence is (nominal = due: no jitter). */
  readonly first: number;
}

/** One expected occurrence. */
export interface Occurrence {
  readonly jobId: string;
  readonly tenantId: string;
  readonly shard: number;
  /** Nominal time = scheduled time (the workload uses no jitter), epoch ms. */
  readonly nominal: number;
}

/** Retries quick enough to finish within a scenario: every backoff under the 5 s tier. */
export const WORKLOAD_POLICIES: JobPolicies = {
  ...DEFAULT_POLICIES,
  retry: {
    maxAttempts: 6,
    initialBackoffMs: 500,
    multiplier: 2,
    maxBackoffMs: 4_000,
    maxEventAgeMs: 600_000,
  },
};

const occurrencesOf = (job: JobDef, from: number, to: number): number[] => {
  const s = job.schedule;
  switch (s.kind) {
    case 'once':
      return job.first >= from && job.first <= to ? [job.first] : [];
    case 'interval': {
      const every = s.everyMs;
      const anchor = s.anchor.getTime();
      const lo = Math.max(from, job.first);
      const out: number[] = [];
      for (let t = anchor + Math.ceil((lo - anchor) / every) * every; t <= to; t += every) out.push(t);
      return out;
    }
    case 'cron': {
      // Only `*/n * * * * *` (every n seconds, UTC) is used: multiples of n seconds.
      const every = Number(/^\*\/(\d+) /.exec(s.expression)![1]) * 1_000;
      const lo = Math.max(from, job.first);
      const out: number[] = [];
      for (let t = Math.ceil(lo / every) * every; t <= to; t += every) out.push(t);
      return out;
    }
    case 'rrule':
      throw new Error('the fault workload makes no rrule jobs');
  }
};

export class Workload {
  private constructor(
    readonly spec: WorkloadSpec,
    readonly jobs: readonly JobDef[],
  ) {}

  /** The jobs of `spec` for a deployment with `shardCount` shards. */
  static plan(spec: WorkloadSpec, shardCount: number): Workload {
    const jobs: JobDef[] = [];
    const tenantOf = (i: number) => spec.tenants[i % spec.tenants.length]!;
    const add = (jobId: string, tenantId: string, schedule: Schedule, first: number) =>
      jobs.push({ jobId, tenantId, shard: shardOf(jobId, shardCount), schedule, first });
    const intervals = (count: number, everyMs: number, tag: string) => {
      // Anchors spread evenly over one period, so the fires come as a steady stream.
      const base = Math.floor(spec.start / everyMs) * everyMs;
      for (let i = 0; i < count; i++) {
        const anchor = base + Math.floor((i * everyMs) / count);
        const first = anchor + Math.ceil(Math.max(0, spec.start - anchor) / everyMs) * everyMs;
        add(
          `${spec.prefix}-${tag}-${i}`,
          tenantOf(i),
          { kind: 'interval', everyMs, anchor: new Date(anchor) },
          first,
        );
      }
    };
    intervals(spec.intervalJobs, spec.intervalMs, 'iv');
    if (spec.fastIntervalJobs) intervals(spec.fastIntervalJobs, spec.fastIntervalMs ?? 1_000, 'fast');
    const cronEvery = spec.cronEverySec * 1_000;
    for (let i = 0; i < spec.cronJobs; i++) {
      add(
        `${spec.prefix}-cron-${i}`,
        tenantOf(i),
        {
          kind: 'cron',
          expression: `*/${spec.cronEverySec} * * * * *`,
          timeZone: 'UTC',
          dstGap: 'AUTO',
          dstRepeat: 'AUTO',
        },
        Math.ceil(spec.start / cronEvery) * cronEvery,
      );
    }
    const step = 1_000 / spec.oneShotsPerSec;
    for (let i = 0, at = spec.start; at <= spec.oneShotsUntil; i++, at = spec.start + Math.round(i * step)) {
      add(`${spec.prefix}-once-${i}`, tenantOf(i), { kind: 'once', at: new Date(at) }, at);
    }
    return new Workload(spec, jobs);
  }

  /** Fires per second the workload asks for, in steady state. */
  get ratePerSec(): number {
    const s = this.spec;
    return (
      (s.intervalJobs * 1_000) / s.intervalMs +
      s.cronJobs / s.cronEverySec +
      s.oneShotsPerSec +
      ((s.fastIntervalJobs ?? 0) * 1_000) / (s.fastIntervalMs ?? 1_000)
    );
  }

  /** Stores every job, due at its first occurrence, with a webhook target at `url`. */
  async seed(pool: Pool, url: string): Promise<void> {
    const target = JSON.stringify(
      targetToWire({
        type: 'webhook',
        url,
        method: 'POST',
        headers: {},
        timeoutMs: 10_000,
        successStatus: { min: 200, max: 299 },
      }),
    );
    const policies = JSON.stringify(policiesToWire(WORKLOAD_POLICIES));
    for (let start = 0; start < this.jobs.length; start += 5_000) {
      const batch = this.jobs.slice(start, start + 5_000);
      await pool.query(
        `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
         SELECT v.id, v.tenant, v.shard, v.kind, v.schedule, 'SCHEDULED', v.at, v.at, $7::jsonb, '{"faults":true}'::jsonb, $8::jsonb
           FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::jsonb[], $6::timestamptz[]) AS v(id, tenant, shard, kind, schedule, at)`,
        [
          batch.map((j) => j.jobId),
          batch.map((j) => j.tenantId),
          batch.map((j) => j.shard),
          batch.map((j) => j.schedule.kind),
          batch.map((j) => JSON.stringify(scheduleToWire(j.schedule))),
          batch.map((j) => new Date(j.first)),
          target,
          policies,
        ],
      );
    }
  }

  /** Every occurrence of every job with a nominal time in [from, to]. */
  expected(from: number, to: number): Occurrence[] {
    const out: Occurrence[] = [];
    for (const job of this.jobs)
      for (const nominal of occurrencesOf(job, from, to))
        out.push({ jobId: job.jobId, tenantId: job.tenantId, shard: job.shard, nominal });
    return out.sort((a, b) => a.nominal - b.nominal);
  }

  job(jobId: string): JobDef | undefined {
    return this.jobs.find((j) => j.jobId === jobId);
  }
}
