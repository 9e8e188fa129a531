/**
 * Business calendars: create, read, list, update and delete, with tenancy (a tenant writes its own;
 * shared calendars are written by admins and read by everyone), ETags, audit rows, holidays generated
 * from the pinned `date-holidays` library at write time, and the re-plan of every job that uses a
 * calendar after it changes.
 */
import { createRequire } from 'node:module';
import {
  calendarNameProblem,
  CompiledCalendars,
  firstPlannedOccurrence,
  parseCalendarPolicy,
  parseCalendarDefinition,
  ValidationError,
  type CalendarHoliday,
  type HolidayRequest,
  type HolidaySource,
  type JobCalendars,
  type StoredCalendar,
  type CalendarWrite,
} from '@tickwork/domain';
import { tenantScope, type Caller } from './caller';
import type { JobService } from './job-service';
import type { CalendarStore } from './ports';
import { AlreadyExistsError, NotFoundError, PermissionDeniedError, PreconditionFailedError } from './errors';

/** How many jobs one re-plan statement batch reads. */
export const REPLAN_BATCH = 500;
/** Most calendars one list page holds. */
export const MAX_CALENDAR_PAGE = 500;

/** The holiday library and the exact version pinned in package.json: its data version. */
export const HOLIDAY_LIBRARY = 'date-holidays';

interface HolidaysLib {
  new (): {
    getCountries(): Record<string, string>;
    getStates(country: string): Record<string, string> | undefined;
  };
  new (
    country: string,
    region?: string,
  ): {
    getHolidays(year: number, lang?: string): { date: string; name: string; type: string }[];
  };
}

const load = createRequire(__filename);
let holidaysLib: { Holidays: HolidaysLib; version: string } | undefined;
function holidays(): { Holidays: HolidaysLib; version: string } {
  holidaysLib ??= {
    Holidays: load('date-holidays') as HolidaysLib,
    version: (load('date-holidays/package.json') as { version: string }).version,
  };
  return holidaysLib;
}

/**
 * Public and bank holidays of a country (and region) for some years, from date-holidays, with the
 * library's version; an unknown country or region is refused naming its field.
 */
export function generateHolidays(req: HolidayRequest): {
  holidays: CalendarHoliday[];
  source: HolidaySource;
} {
  const { Holidays, version } = holidays();
  const index = new Holidays();
  if (!Object.hasOwn(index.getCountries(), req.country))
    throw new ValidationError([
      {
        field: 'holiday_source.country',
        message: `${req.country} is not a country ${HOLIDAY_LIBRARY} knows`,
      },
    ]);
  if (req.region !== undefined && !Object.hasOwn(index.getStates(req.country) ?? {}, req.region))
    throw new ValidationError([
      {
        field: 'holiday_source.region',
        message: `${req.region} is not a region of ${req.country} that ${HOLIDAY_LIBRARY} knows`,
      },
    ]);
  const lib = req.region !== undefined ? new Holidays(req.country, req.region) : new Holidays(req.country);
  const seen = new Set<string>();
  const out: CalendarHoliday[] = [];
  for (const year of req.years)
    for (const h of lib.getHolidays(year, 'en')) {
      // Observances (Mother's Day) and optional days close nothing.
      if (h.type !== 'public' && h.type !== 'bank') continue;
      const date = h.date.slice(0, 10);
      if (seen.has(date)) continue;
      seen.add(date);
      out.push({ date, name: h.name });
    }
  return {
    holidays: out,
    source: {
      library: HOLIDAY_LIBRARY,
      libraryVersion: version,
      country: req.country,
      ...(req.region !== undefined ? { region: req.region } : {}),
      years: [...req.years],
    },
  };
}

/** The etag of a calendar version: `v<version>`. */
export function calendarEtag(c: Pick<StoredCalendar, 'version'>): string {
  return `v${c.version}`;
}

/** Which calendar a call is about: a tenant's own (tenantId) or the shared one (null). */
interface CalendarScope {
  readonly tenantId: string | null;
}

export class CalendarService {
  constructor(
    private readonly calendars: CalendarStore,
    private readonly jobs: JobService,
    private readonly opts: { readonly herdJitterMs: number; readonly now?: () => Date },
  ) {}

  private now(): Date {
    return this.opts.now?.() ?? new Date();
  }

  /**
   * Whose calendar a write is about: `shared` ones are admins'; otherwise the caller's tenant (an admin
   * names it with tenant_id).
   */
  private writeScope(caller: Caller, shared: boolean, tenantId: string | undefined): CalendarScope {
    if (shared) {
      if (caller.tenantId !== null)
        throw new PermissionDeniedError(`caller of tenant ${caller.tenantId} may not write shared calendars`);
      if (tenantId !== undefined && tenantId !== '')
        throw new ValidationError([{ field: 'tenant_id', message: 'a shared calendar has no tenant' }]);
      return { tenantId: null };
    }
    const scope = tenantScope(caller, tenantId, 'tenant_id');
    if (scope === undefined)
      throw new ValidationError([
        { field: 'tenant_id', message: 'is required for an admin (or write a shared calendar: shared=true)' },
      ]);
    return { tenantId: scope };
  }

  /**
   * Creates a calendar; its holidays are generated now when it has a holiday_source. Jobs that named
   * the name before (through a shared calendar this one now comes before) are re-planned.
   */
  async create(caller: Caller, raw: unknown, opts: { shared?: boolean } = {}): Promise<StoredCalendar> {
    const body =
      raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
    const name = typeof body.name === 'string' ? body.name : null;
    return this.jobs.audited(
      caller,
      'CreateCalendar',
      null,
      { details: { calendar: name } },
      async (meta) => {
        if (!raw || typeof raw !== 'object' || Array.isArray(raw))
          throw new ValidationError([{ field: 'body', message: 'must be a JSON object' }]);
        const problem = calendarNameProblem(body.name);
        if (problem) throw new ValidationError([{ field: 'name', message: problem }]);
        const shared = opts.shared === true || body.shared === true;
        const scope = this.writeScope(
          caller,
          shared,
          typeof body.tenant_id === 'string' ? body.tenant_id : undefined,
        );
        const write = this.written(raw, 'shared');
        const created = await this.calendars.write(meta.audit, scope.tenantId, name!, (current) => {
          if (current) throw new AlreadyExistsError(`calendar ${name} already exists`);
          return write;
        });
        // Jobs already naming it (a shared one of that name, which this tenant calendar now shadows)
        // plan through it from now on.
        await this.replan(created.tenantId, created.name);
        return created;
      },
    );
  }

  /** Parses a definition and generates its holidays (the write's new state). */
  private written(raw: unknown, ...ignored: string[]): CalendarWrite {
    const body = { ...(raw as Record<string, unknown>) };
    for (const k of ignored) delete body[k];
    const parsed = parseCalendarDefinition(body);
    if (!parsed.ok) throw new ValidationError(parsed.violations);
    const generated = parsed.value.holidaySource ? generateHolidays(parsed.value.holidaySource) : null;
    return { definition: parsed.value, generated };
  }

  /**
   * A calendar the caller may see: the shared one (`shared`), or the tenant's own, else the shared one
   * of that name (what a job of the tenant naming it gets).
   */
  async get(
    caller: Caller,
    name: string,
    opts: { shared?: boolean; tenantId?: string } = {},
  ): Promise<StoredCalendar> {
    const problem = calendarNameProblem(name);
    if (problem) throw new ValidationError([{ field: 'name', message: problem }]);
    if (opts.shared) return this.found(await this.calendars.find(null, name), name);
    const tenant = tenantScope(caller, opts.tenantId, 'tenant_id');
    if (tenant === undefined) return this.found(await this.calendars.find(null, name), name);
    const own = await this.calendars.find(tenant, name);
    return this.found(own ?? (await this.calendars.find(null, name)), name);
  }

  private found(c: StoredCalendar | null, name: string): StoredCalendar {
    if (!c) throw new NotFoundError(`calendar ${name} not found`);
    return c;
  }

  /**
   * A preview's calendars: `names` (a job's policies.calendars) resolved as for a job of the caller's
   * tenant (an admin: `tenantId`'s, else the shared ones), and the rule; undefined when none named.
   */
  async forPreview(
    caller: Caller,
    names: unknown,
    rule: unknown,
    tenantId?: string,
  ): Promise<JobCalendars | undefined> {
    const parsed = parseCalendarPolicy(names, rule);
    if (!parsed) return undefined;
    const tenant = tenantScope(caller, tenantId, 'tenant_id');
    // No tenant is named '': an admin without tenant_id sees the shared calendars only.
    const found = await this.calendars.resolve(tenant ?? '', parsed.names);
    const violations = parsed.names.flatMap((n, i) =>
      found.has(n)
        ? []
        : [
            {
              field: `calendars[${i}]`,
              message: `names no calendar ${tenant ? `of tenant ${tenant} ` : ''}nor a shared one`,
            },
          ],
    );
    if (violations.length > 0) throw new ValidationError(violations);
    return { calendars: new CompiledCalendars(parsed.names.map((n) => found.get(n)!)), rule: parsed.rule };
  }

  /** The calendars the caller may see (its tenant's and the shared ones; an admin: all, or one tenant's and shared). */
  async list(
    caller: Caller,
    q: { tenantId?: string; pageSize?: number; after?: string },
  ): Promise<{ calendars: StoredCalendar[]; next: string }> {
    const tenant = tenantScope(caller, q.tenantId, 'tenant_id');
    const size = q.pageSize ?? 100;
    if (!Number.isInteger(size) || size < 1 || size > MAX_CALENDAR_PAGE)
      throw new ValidationError([
        { field: 'page_size', message: `must be an integer from 1 to ${MAX_CALENDAR_PAGE}` },
      ]);
    if (q.after !== undefined && q.after !== '') {
      const problem = calendarNameProblem(q.after);
      if (problem)
        throw new ValidationError([{ field: 'page_token', message: 'is not a page token of this list' }]);
    }
    const rows = await this.calendars.list({
      ...(tenant !== undefined ? { tenantId: tenant } : {}),
      ...(q.after ? { afterName: q.after } : {}),
      limit: size + 1,
    });
    const page = rows.slice(0, size);
    return { calendars: page, next: rows.length > size ? page[page.length - 1]!.name : '' };
  }

  /**
   * Replaces a calendar's definition (If-Match: its etag), bumping its version, then re-plans every
   * job that uses it. Returns the calendar and how many jobs were re-planned.
   */
  async update(
    caller: Caller,
    name: string,
    raw: unknown,
    opts: { etag?: string; shared?: boolean; tenantId?: string } = {},
  ): Promise<{ calendar: StoredCalendar; replanned: number }> {
    const updated = await this.jobs.audited(
      caller,
      'UpdateCalendar',
      null,
      { details: { calendar: name } },
      async (meta) => {
        const problem = calendarNameProblem(name);
        if (problem) throw new ValidationError([{ field: 'name', message: problem }]);
        if (!raw || typeof raw !== 'object' || Array.isArray(raw))
          throw new ValidationError([{ field: 'body', message: 'must be a JSON object' }]);
        const body = raw as Record<string, unknown>;
        if (body.name !== undefined && body.name !== name)
          throw new ValidationError([
            { field: 'name', message: `must be ${name} (a calendar is not renamed)` },
          ]);
        const scope = this.writeScope(caller, opts.shared === true, opts.tenantId);
        const expected = opts.etag !== undefined ? calendarVersionOfEtag(opts.etag) : undefined;
        const write = this.written(raw, 'shared', 'tenant_id');
        return this.calendars.write(meta.audit, scope.tenantId, name, (current) => {
          if (!current) throw new NotFoundError(`calendar ${name} not found`);
          if (expected !== undefined && expected !== current.version)
            throw new PreconditionFailedError(
              `calendar ${name} is at version ${current.version}, not ${expected} (etag ${opts.etag})`,
            );
          return write;
        });
      },
    );
    return { calendar: updated, replanned: await this.replan(updated.tenantId, name) };
  }

  /** Deletes a calendar no job uses (If-Match: its etag). */
  async delete(
    caller: Caller,
    name: string,
    opts: { etag?: string; shared?: boolean; tenantId?: string } = {},
  ): Promise<void> {
    await this.jobs.audited(caller, 'DeleteCalendar', null, { details: { calendar: name } }, async (meta) => {
      const problem = calendarNameProblem(name);
      if (problem) throw new ValidationError([{ field: 'name', message: problem }]);
      const scope = this.writeScope(caller, opts.shared === true, opts.tenantId);
      const expected = opts.etag !== undefined ? calendarVersionOfEtag(opts.etag) : undefined;
      const gone = await this.calendars.delete(meta.audit, scope.tenantId, name, (current, users) => {
        if (expected !== undefined && expected !== current.version)
          throw new PreconditionFailedError(
            `calendar ${name} is at version ${current.version}, not ${expected} (etag ${opts.etag})`,
          );
        if (users.count > 0)
          throw new PreconditionFailedError(
            `calendar ${name} is used by ${users.count} job(s) (${users.sample.join(', ')}): change their policies.calendars first`,
          );
      });
      if (!gone) throw new NotFoundError(`calendar ${name} not found`);
    });
  }

  /**
   * Recomputes the next occurrence of every live job that uses calendar `name` (of `tenantId`, or the
   * shared one), from now, in batches of REPLAN_BATCH. Returns how many were re-planned.
   */
  async replan(tenantId: string | null, name: string): Promise<number> {
    let after = '';
    let n = 0;
    for (;;) {
      const batch = await this.calendars.jobsUsing(tenantId, name, after, REPLAN_BATCH);
      for (const job of batch) {
        const next = firstPlannedOccurrence(job, this.now(), this.opts.herdJitterMs, job.firesCount);
        if (await this.calendars.replan(job, next)) n++;
      }
      if (batch.length < REPLAN_BATCH) return n;
      after = batch[batch.length - 1]!.jobId;
    }
  }
}

/** The version an etag `v<n>` (quoted or not, W/ or not) names; refused naming If-Match otherwise. */
export function calendarVersionOfEtag(etag: string): number {
  const m = /^(?:W\/)?"?v(\d{1,15})"?$/.exec(etag.trim());
  if (!m || !Number.isSafeInteger(Number(m[1])))
    throw new ValidationError([
      { field: 'If-Match', message: 'must be an etag of this calendar ("v<version>")' },
    ]);
  return Number(m[1]);
}
