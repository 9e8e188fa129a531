/** REST: label-wide control, `POST /v1/bulk-actions` (the same service as gRPC BulkAction). */
import { Body, Controller, Headers, HttpCode, Post } from '@nestjs/common';
import type { JsonValue } from '@tickwork/domain';
import {
  BulkActionService,
  JobService,
  UnauthenticatedError,
  type BulkActionResult,
  type Caller,
} from '@tickwork/jobs';
import { Authenticator } from '../auth';

/** A bulk action's answer as REST JSON. */
export function bulkActionJson(r: BulkActionResult): Record<string, JsonValue> {
  return {
    bulk_action_id: r.bulkActionId,
    action: r.action,
    dry_run: r.dryRun,
    matched: r.matched,
    changed: r.changed,
    unchanged: r.unchanged,
    failed: r.failed,
    sample_job_ids: [...r.sampleJobIds],
    failures: r.failures.map((f) => ({ job_id: f.jobId, code: f.code, message: f.message })),
  };
}

@Controller('v1')
export class BulkActionsController {
  constructor(
    private readonly bulk: BulkActionService,
    private readonly jobs: JobService,
    private readonly auth: Authenticator,
  ) {}

  /** Pauses, resumes, triggers or deletes every job matching a label selector (or, dry_run, counts them). */
  @Post('bulk-actions')
  @HttpCode(200)
  async run(
    @Headers('authorization') authz: string | undefined,
    @Body() body: unknown,
  ): Promise<Record<string, JsonValue>> {
    let caller: Caller;
    try {
      caller = this.auth.authenticate(authz, 'rest');
    } catch (e) {
      if (e instanceof UnauthenticatedError)
        return this.jobs.refuseUnauthenticated('rest', 'BulkAction', null, e);
      throw e;
    }
    return bulkActionJson(await this.bulk.run(caller, body));
  }
}
