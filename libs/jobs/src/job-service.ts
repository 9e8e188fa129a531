/**
 * The jobs application service: the one path by which a job is created or changed, shared by
 * REST, gRPC and the Kafka commands consumer, so every entry point validates and stores alike.
 */
import { randomUUID } from 'node:crypto';
import {
  firstFireAtOrAfter,
  occurrenceAt,
  parseJobDefinition,
  shardOf,
  ValidationError,
  type Job,
  type JobDefinitionLimits,
  type Run,
} from '@tickwork/domain';
import type { JobRepository, RunRepository } from '@tickwork/store';

export class JobNotFoundError extends Error {
  constructor(readonly jobId: string) {
    super(`job ${jobId} not found`);
    this.name = 'JobNotFoundError';
  }
}

export interface JobServiceOptions {
  readonly shardCount: number;
  readonly limits: JobDefinitionLimits;
  /** The cluster's herd jitter window (see occurrenceAt). */
  readonly herdJitterMs: number;
  /** The clock used for defaults such as an interval's anchor; due-ness uses the database clock. */
  readonly now?: () => Date;
}

export class JobService {
  private readonly now: () => Date;

  constructor(
    private readonly jobs: JobRepository,
    private readonly runs: RunRepository,
    private readonly opts: JobServiceOptions,
  ) {
    this.now = opts.now ?? (() => new Date());
  }

  /** Validates and stores a new job; throws ValidationError naming each bad field. */
  async createJob(raw: unknown, ctx: { tenantId?: string } = {}): Promise<Job> {
    const now = this.now();
    const parsed = parseJobDefinition(raw, { now, limits: this.opts.limits, newJobId: randomUUID, ...ctx });
    if (!parsed.ok) throw new ValidationError(parsed.violations);
    const definition = parsed.value;
    const first = firstFireAtOrAfter(definition.schedule, now);
    const next = first && occurrenceAt(definition.jobId, definition.schedule, definition.policies.jitterMs, first, this.opts.herdJitterMs);
    return this.jobs.insertJob({ definition, shard: shardOf(definition.jobId, this.opts.shardCount), next });
  }

  /** A job and its most recent runs. */
  async getJob(jobId: string, opts: { runs?: number } = {}): Promise<{ job: Job; recentRuns: Run[] }> {
    const job = await this.jobs.findJob(jobId);
    if (!job) throw new JobNotFoundError(jobId);
    const recentRuns = await this.runs.listRuns(jobId, opts.runs ?? 1);
    return { job, recentRuns };
  }
}
