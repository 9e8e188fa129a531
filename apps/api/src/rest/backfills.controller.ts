/**
 * REST: backfills of a job — `POST /v1/jobs/{job_id}/backfills` (a dry run with `dry_run: true`),
 * `GET …/backfills[/{backfill_id}]`, `POST …/backfills/{backfill_id}/cancel`. The same service as
 * gRPC CreateBackfill, ListBackfills, GetBackfill and CancelBackfill.
 */
import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { ValidationError, type JsonValue } from '@tickwork/domain';
import {
  BackfillService,
  isBackfillPreview,
  JobService,
  UnauthenticatedError,
  type Caller,
} from '@tickwork/jobs';
import { Authenticator } from '../auth';
import { backfillDetailJson, backfillJson, backfillPreviewJson } from './backfill-wire';

type Wire = Record<string, JsonValue>;
type Query = Record<string, string | string[] | undefined>;

function one(q: Query, name: string): string | undefined {
  const v = q[name];
  if (Array.isArray(v)) throw new ValidationError([{ field: name, message: 'must be given once' }]);
  return v;
}

function int(q: Query, name: string): number | undefined {
  const v = one(q, name);
  if (v === undefined || v === '') return undefined;
  if (!/^\d{1,9}$/.test(v))
    throw new ValidationError([{ field: name, message: 'must be a non-negative integer' }]);
  return Number(v);
}

@Controller('v1')
export class BackfillsController {
  constructor(
    private readonly backfills: BackfillService,
    private readonly jobs: JobService,
    private readonly auth: Authenticator,
  ) {}

  private async mutator(authz: string | undefined, action: string, jobId: string): Promise<Caller> {
    try {
      return this.auth.authenticate(authz, 'rest');
    } catch (e) {
      if (e instanceof UnauthenticatedError) return this.jobs.refuseUnauthenticated('rest', action, jobId, e);
      throw e;
    }
  }

  /** A backfill of the job (201), or with `dry_run: true` the occurrences it would fire (200, nothing written). */
  @Post('jobs/:jobId/backfills')
  @HttpCode(201)
  async create(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<Wire> {
    const dry = !!body && typeof body === 'object' && (body as { dry_run?: unknown }).dry_run === true;
    const caller = dry
      ? this.auth.authenticate(authz, 'rest')
      : await this.mutator(authz, 'CreateBackfill', jobId);
    const r = await this.backfills.create(caller, jobId, body ?? {});
    if (isBackfillPreview(r)) {
      res.status(200);
      return backfillPreviewJson(r);
    }
    res.location(`/v1/jobs/${encodeURIComponent(jobId)}/backfills/${r.backfillId}`);
    return backfillJson(r);
  }

  @Get('jobs/:jobId/backfills')
  async list(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
    @Query() q: Query,
  ): Promise<Wire> {
    const page = await this.backfills.list(this.auth.authenticate(authz, 'rest'), jobId, {
      pageSize: int(q, 'page_size'),
      pageToken: one(q, 'page_token'),
    });
    return { backfills: page.backfills.map(backfillJson), next_page_token: page.nextPageToken };
  }

  @Get('jobs/:jobId/backfills/:backfillId')
  async get(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
    @Param('backfillId') backfillId: string,
  ): Promise<Wire> {
    return backfillDetailJson(
      await this.backfills.get(this.auth.authenticate(authz, 'rest'), jobId, backfillId),
    );
  }

  /** Cancels the backfill: no fire after this (those already in the outbox go out). Idempotent. */
  @Post('jobs/:jobId/backfills/:backfillId/cancel')
  @HttpCode(200)
  async cancel(
    @Headers('authorization') authz: string | undefined,
    @Param('jobId') jobId: string,
    @Param('backfillId') backfillId: string,
  ): Promise<Wire> {
    const caller = await this.mutator(authz, 'CancelBackfill', jobId);
    return backfillJson(await this.backfills.cancel(caller, jobId, backfillId));
  }
}
