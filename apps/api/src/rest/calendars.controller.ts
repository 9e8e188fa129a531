/** REST under /v1/calendars: business calendars (same service, validation and errors as gRPC). */
import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Put,
  Query,
  Res,
} from '@nestjs/common';
import type { Response } from 'express';
import { calendarToWire, ValidationError, type JsonValue } from '@tickwork/domain';
import { calendarEtag, CalendarService, JobService, UnauthenticatedError, type Caller } from '@tickwork/jobs';
import { Authenticator } from '../auth';

type Wire = Record<string, JsonValue>;
type Query = Record<string, string | string[] | undefined>;

function one(q: Query, name: string): string | undefined {
  const v = q[name];
  if (Array.isArray(v)) throw new ValidationError([{ field: name, message: 'must be given once' }]);
  return v;
}

/** `shared=true|false` (absent: false). */
function shared(q: Query): boolean {
  const v = one(q, 'shared');
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  throw new ValidationError([{ field: 'shared', message: 'must be true or false' }]);
}

@Controller('v1')
export class CalendarsController {
  constructor(
    private readonly calendars: CalendarService,
    private readonly jobs: JobService,
    private readonly auth: Authenticator,
  ) {}

  /** The caller of a mutating call; a refused token is audited as the action it was refused for. */
  private async mutator(authz: string | undefined, action: string): Promise<Caller> {
    try {
      return this.auth.authenticate(authz, 'rest');
    } catch (e) {
      if (e instanceof UnauthenticatedError) return this.jobs.refuseUnauthenticated('rest', action, null, e);
      throw e;
    }
  }

  /** A query parameter error of a mutating call, refused as that call (audited). */
  private async queried<T>(caller: Caller, action: string, read: () => T): Promise<T> {
    try {
      return read();
    } catch (e) {
      if (e instanceof ValidationError) return this.jobs.refuse(caller, action, null, e);
      throw e;
    }
  }

  /** Creates a calendar (?shared=true: a shared one, admins only); holidays are generated now. */
  @Post('calendars')
  @HttpCode(201)
  async create(
    @Headers('authorization') authz: string | undefined,
    @Query() q: Query,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<Wire> {
    const caller = await this.mutator(authz, 'CreateCalendar');
    const isShared = await this.queried(caller, 'CreateCalendar', () => shared(q));
    const c = await this.calendars.create(caller, body, { shared: isShared });
    res.setHeader('ETag', `"${calendarEtag(c)}"`);
    return calendarToWire(c);
  }

  @Get('calendars')
  async list(@Headers('authorization') authz: string | undefined, @Query() q: Query): Promise<Wire> {
    const caller = this.auth.authenticate(authz, 'rest');
    const size = one(q, 'page_size');
    if (size !== undefined && size !== '' && !/^\d{1,9}$/.test(size))
      throw new ValidationError([{ field: 'page_size', message: 'must be a non-negative integer' }]);
    const page = await this.calendars.list(caller, {
      tenantId: one(q, 'tenant_id'),
      ...(size ? { pageSize: Number(size) } : {}),
      after: one(q, 'page_token'),
    });
    return { calendars: page.calendars.map(calendarToWire), next_page_token: page.next };
  }

  /** A calendar: the tenant's own of that name, else the shared one (?shared=true: the shared one). */
  @Get('calendars/:name')
  async get(
    @Headers('authorization') authz: string | undefined,
    @Param('name') name: string,
    @Query() q: Query,
    @Res({ passthrough: true }) res: Response,
  ): Promise<Wire> {
    const caller = this.auth.authenticate(authz, 'rest');
    const c = await this.calendars.get(caller, name, { shared: shared(q), tenantId: one(q, 'tenant_id') });
    res.setHeader('ETag', `"${calendarEtag(c)}"`);
    return calendarToWire(c);
  }

  /**
   * Replaces a calendar's definition (If-Match guards with its etag) and re-plans every job that uses
   * it; the answer says how many (`replanned_jobs`).
   */
  @Put('calendars/:name')
  async update(
    @Headers('authorization') authz: string | undefined,
    @Headers('if-match') ifMatch: string | undefined,
    @Param('name') name: string,
    @Query() q: Query,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<Wire> {
    const caller = await this.mutator(authz, 'UpdateCalendar');
    const [isShared, tenantId] = await this.queried(
      caller,
      'UpdateCalendar',
      () => [shared(q), one(q, 'tenant_id')] as const,
    );
    const { calendar, replanned } = await this.calendars.update(caller, name, body, {
      ...(ifMatch !== undefined ? { etag: ifMatch } : {}),
      shared: isShared,
      ...(tenantId !== undefined ? { tenantId } : {}),
    });
    res.setHeader('ETag', `"${calendarEtag(calendar)}"`);
    return { ...calendarToWire(calendar), replanned_jobs: replanned };
  }

  @Delete('calendars/:name')
  @HttpCode(204)
  async remove(
    @Headers('authorization') authz: string | undefined,
    @Headers('if-match') ifMatch: string | undefined,
    @Param('name') name: string,
    @Query() q: Query,
  ): Promise<void> {
    const caller = await this.mutator(authz, 'DeleteCalendar');
    const [isShared, tenantId] = await this.queried(
      caller,
      'DeleteCalendar',
      () => [shared(q), one(q, 'tenant_id')] as const,
    );
    await this.calendars.delete(caller, name, {
      ...(ifMatch !== undefined ? { etag: ifMatch } : {}),
      shared: isShared,
      ...(tenantId !== undefined ? { tenantId } : {}),
    });
  }
}
