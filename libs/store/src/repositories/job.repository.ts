/** Jobs: create, read, list and change state, as the API and the command consumer need. */
import type { Pool } from 'pg';
import { policiesToWire, scheduleToWire, targetToWire, type Job, type JobDefinition, type PlannedOccurrence } from '@tickwork/domain';
import { JOB_COLUMNS, jobFromRow, type JobRow } from './rows';

export class JobAlreadyExistsError extends Error {
  constructor(readonly jobId: string) {
    super(`job ${jobId} already exists`);
    this.name = 'JobAlreadyExistsError';
  }
}

export interface NewJob {
  readonly definition: JobDefinition;
  readonly shard: number;
  /** The first occurrence; null when the schedule has none (the job is stored COMPLETED). */
  readonly next: PlannedOccurrence | null;
}

export class JobRepository {
  constructor(private readonly pool: Pool) {}

  /** Stores a new job; throws JobAlreadyExistsError when the id is taken. */
  async insertJob(job: NewJob): Promise<Job> {
    const d = job.definition;
    try {
      const { rows } = await this.pool.query<JobRow>(
        `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, time_zone, status, next_run_at, next_nominal_at, target, payload, policies, labels)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         RETURNING ${JOB_COLUMNS}`,
        [
          d.jobId,
          d.tenantId,
          job.shard,
          d.schedule.kind,
          JSON.stringify(scheduleToWire(d.schedule)),
          d.schedule.kind === 'cron' ? d.schedule.timeZone : 'UTC',
          job.next ? 'SCHEDULED' : 'COMPLETED',
          job.next?.scheduledFor ?? null,
          job.next?.nominalTime ?? null,
          JSON.stringify(targetToWire(d.target)),
          JSON.stringify(d.payload),
          JSON.stringify(policiesToWire(d.policies)),
          JSON.stringify(d.labels),
        ],
      );
      return jobFromRow(rows[0]!);
    } catch (e) {
      if ((e as { code?: string }).code === '23505') throw new JobAlreadyExistsError(d.jobId);
      throw e;
    }
  }

  /** One job by id, or null. */
  async findJob(jobId: string): Promise<Job | null> {
    const { rows } = await this.pool.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE job_id = $1`, [jobId]);
    return rows[0] ? jobFromRow(rows[0]) : null;
  }
}
