/** REST: jobs. */
import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { jobToWire, type JsonValue, type Run } from '@tickwork/domain';
import { JobService } from '@tickwork/jobs';

@Controller(['v1/jobs', 'jobs'])
export class JobsController {
  constructor(private readonly jobs: JobService) {}

  @Post()
  @HttpCode(201)
  async create(@Body() body: unknown): Promise<Record<string, JsonValue>> {
    return jobToWire(await this.jobs.createJob(body));
  }

  @Get(':jobId')
  async get(@Param('jobId') jobId: string): Promise<Record<string, JsonValue>> {
    const { job, recentRuns } = await this.jobs.getJob(jobId);
    return { ...jobToWire(job), last_run: recentRuns[0] ? runToWire(recentRuns[0]) : null };
  }
}

function runToWire(run: Run): Record<string, JsonValue> {
  return {
    fire_id: run.fireId,
    fence_token: run.fenceToken,
    status: run.status,
    attempt: run.attempt,
    nominal_time: run.nominalTime.toISOString(),
    scheduled_for: run.scheduledFor.toISOString(),
    started_at: run.startedAt?.toISOString() ?? null,
    finished_at: run.finishedAt?.toISOString() ?? null,
    http_status: run.httpStatus,
    error: run.error,
  };
}
