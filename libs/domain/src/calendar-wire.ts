/**
 * Business calendars on the wire: what a client writes (validated, each problem naming its field)
 * and what the API shows. Holidays generated from a holiday library arrive here as dates.
 */
import { CALENDAR_NAME_PATTERN } from './job-wire';
import type { ClaimableJob, JsonValue } from './job';
import {
  civilDateDays,
  type BusinessCalendar,
  type CalendarHoliday,
  type HolidaySource,
} from './schedule/business-calendar';
import { FieldReader, type FieldViolation } from './validation';

export const WEEKDAY_NAMES = [
  'SUNDAY',
  'MONDAY',
  'TUESDAY',
  'WEDNESDAY',
  'THURSDAY',
  'FRIDAY',
  'SATURDAY',
] as const;
export type WeekdayName = (typeof WEEKDAY_NAMES)[number];

/** Most dates one list of a calendar holds (holidays, closed dates, open dates). */
export const MAX_CALENDAR_DATES = 2_000;
/** Most years one holiday generation covers. */
export const MAX_HOLIDAY_YEARS = 20;
/** The years a holiday generation may ask for. */
export const HOLIDAY_YEAR_RANGE = { min: 1970, max: 2200 } as const;
const COUNTRY = /^[A-Z]{2}$/;
const REGION = /^[A-Za-z0-9-]{1,10}$/;

/** What a client asks the API to generate holidays from: a country (ISO 3166-1), a region, years. */
export interface HolidayRequest {
  readonly country: string;
  readonly region?: string;
  readonly years: readonly number[];
}

/** A calendar's definition as written: everything but name, tenant and version. */
export interface CalendarDefinition {
  readonly description: string;
  readonly closedWeekdays: readonly number[];
  /** Holidays listed by hand. */
  readonly holidays: readonly CalendarHoliday[];
  readonly closedDates: readonly string[];
  readonly openDates: readonly string[];
  /** Holidays to generate (API side) for a country/region and years; null: none. */
  readonly holidaySource: HolidayRequest | null;
}

/** A stored calendar: its definition, the generated holidays and where they came from. */
export interface StoredCalendar {
  readonly tenantId: string | null;
  readonly name: string;
  readonly version: number;
  readonly definition: CalendarDefinition;
  /** Generated holidays (empty without a holiday source) and the library version that made them. */
  readonly generated: {
    readonly holidays: readonly CalendarHoliday[];
    readonly source: HolidaySource;
  } | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** A calendar write's new state; `generated` holds the holidays made from the definition's source. */
export interface CalendarWrite {
  readonly definition: CalendarDefinition;
  readonly generated: StoredCalendar['generated'];
}

/** A job to re-plan after a calendar change: what the claim reads, with its calendars resolved. */
export type ReplanJob = ClaimableJob;

/** The domain calendar of a stored one: hand-listed and generated holidays together. */
export function businessCalendarOf(c: StoredCalendar): BusinessCalendar {
  return {
    name: c.name,
    version: c.version,
    closedWeekdays: c.definition.closedWeekdays,
    holidays: [...c.definition.holidays, ...(c.generated?.holidays ?? [])],
    closedDates: c.definition.closedDates,
    openDates: c.definition.openDates,
    holidaySource: c.generated?.source ?? null,
  };
}

/** Whether `name` is a valid calendar name (what jobs' policies.calendars hold). */
export function isCalendarName(name: string): boolean {
  return CALENDAR_NAME_PATTERN.test(name);
}

/** Validates a calendar's name (path parameter or body field). */
export function calendarNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || !CALENDAR_NAME_PATTERN.test(name))
    return 'must be a calendar name: lower-case letters, digits, ".", "_" or "-", starting with a letter or digit, at most 63';
  return undefined;
}

function dateList(raw: unknown, field: string, r: FieldReader): string[] | undefined {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    r.fail(field, 'must be an array of dates YYYY-MM-DD');
    return undefined;
  }
  if (raw.length > MAX_CALENDAR_DATES) {
    r.fail(field, `must hold at most ${MAX_CALENDAR_DATES} dates`);
    return undefined;
  }
  let ok = true;
  raw.forEach((d, i) => {
    if (typeof d !== 'string' || civilDateDays(d) === undefined) {
      r.fail(`${field}[${i}]`, 'must be a civil date YYYY-MM-DD');
      ok = false;
    }
  });
  return ok ? (raw as string[]) : undefined;
}

/** Parses a calendar definition a client wrote (create, or the whole of an update). */
export function parseCalendarDefinition(
  raw: unknown,
): { ok: true; value: CalendarDefinition } | { ok: false; violations: readonly FieldViolation[] } {
  const r = new FieldReader();
  const body = r.object(raw, 'calendar', true) ?? {};
  r.noUnknownKeys(
    body,
    [
      'name',
      'tenant_id',
      'description',
      'closed_weekdays',
      'holidays',
      'closed_dates',
      'open_dates',
      'holiday_source',
      'version',
      'created_at',
      'updated_at',
      'generated_holidays',
    ],
    '',
  );
  const description = r.string(body.description ?? '', 'description', { maxLength: 1_000 }) ?? '';

  let closedWeekdays: number[] | undefined = [0, 6];
  if (body.closed_weekdays !== undefined && body.closed_weekdays !== null) {
    if (!Array.isArray(body.closed_weekdays)) {
      r.fail('closed_weekdays', `must be an array of ${WEEKDAY_NAMES.join(', ')}`);
      closedWeekdays = undefined;
    } else {
      closedWeekdays = [];
      (body.closed_weekdays as unknown[]).forEach((w, i) => {
        const at = WEEKDAY_NAMES.indexOf(w as WeekdayName);
        if (at < 0) r.fail(`closed_weekdays[${i}]`, `must be one of ${WEEKDAY_NAMES.join(', ')}`);
        else if (closedWeekdays!.includes(at)) r.fail(`closed_weekdays[${i}]`, `names ${String(w)} twice`);
        else closedWeekdays!.push(at);
      });
      if (closedWeekdays.length === 7)
        r.fail('closed_weekdays', 'closes every weekday: the calendar would have no business day');
    }
  }

  const holidays: CalendarHoliday[] = [];
  if (body.holidays !== undefined && body.holidays !== null) {
    if (!Array.isArray(body.holidays)) r.fail('holidays', 'must be an array of {date, name}');
    else if (body.holidays.length > MAX_CALENDAR_DATES)
      r.fail('holidays', `must hold at most ${MAX_CALENDAR_DATES} holidays`);
    else
      (body.holidays as unknown[]).forEach((h, i) => {
        const f = `holidays[${i}]`;
        const o = r.object(h, f, true);
        if (!o) return;
        r.noUnknownKeys(o, ['date', 'name'], f);
        const date = r.string(o.date, `${f}.date`, { required: true });
        if (date !== undefined && civilDateDays(date) === undefined)
          r.fail(`${f}.date`, 'must be a civil date YYYY-MM-DD');
        const name = r.string(o.name, `${f}.name`, { required: true, maxLength: 200 });
        if (date !== undefined && name !== undefined) holidays.push({ date, name });
      });
  }
  const closedDates = dateList(body.closed_dates, 'closed_dates', r);
  const openDates = dateList(body.open_dates, 'open_dates', r);

  let holidaySource: HolidayRequest | null = null;
  if (body.holiday_source !== undefined && body.holiday_source !== null) {
    const s = r.object(body.holiday_source, 'holiday_source', true);
    if (s) {
      r.noUnknownKeys(s, ['country', 'region', 'years', 'library', 'library_version'], 'holiday_source');
      const country = r.string(s.country, 'holiday_source.country', {
        required: true,
        pattern: COUNTRY,
        hint: 'must be an ISO 3166-1 alpha-2 country code (DE, US, …)',
      });
      const region = r.string(s.region, 'holiday_source.region', {
        pattern: REGION,
        hint: 'must be a region code of the country (BE, CA, …)',
      });
      let years: number[] | undefined;
      if (!Array.isArray(s.years) || s.years.length === 0 || s.years.length > MAX_HOLIDAY_YEARS)
        r.fail('holiday_source.years', `must be an array of 1 to ${MAX_HOLIDAY_YEARS} years`);
      else {
        years = [];
        (s.years as unknown[]).forEach((y, i) => {
          const v = r.integer(y, `holiday_source.years[${i}]`, HOLIDAY_YEAR_RANGE);
          if (v !== undefined) years!.push(v);
        });
      }
      if (country !== undefined && years !== undefined && years.length === (s.years as unknown[]).length)
        holidaySource = {
          country,
          ...(region !== undefined ? { region } : {}),
          years: [...new Set(years)].sort(),
        };
    }
  }
  if (r.violations.length > 0 || !closedWeekdays || !closedDates || !openDates)
    return { ok: false, violations: r.violations };
  return {
    ok: true,
    value: {
      description,
      closedWeekdays: closedWeekdays.sort(),
      holidays,
      closedDates,
      openDates,
      holidaySource,
    },
  };
}

/** A stored calendar as the API shows it. */
export function calendarToWire(c: StoredCalendar): Record<string, JsonValue> {
  return {
    name: c.name,
    tenant_id: c.tenantId,
    shared: c.tenantId === null,
    version: c.version,
    description: c.definition.description,
    closed_weekdays: c.definition.closedWeekdays.map((d) => WEEKDAY_NAMES[d]!),
    holidays: c.definition.holidays.map((h) => ({ date: h.date, name: h.name })),
    closed_dates: [...c.definition.closedDates],
    open_dates: [...c.definition.openDates],
    holiday_source: c.generated
      ? {
          country: c.generated.source.country,
          ...(c.generated.source.region !== undefined ? { region: c.generated.source.region } : {}),
          years: [...c.generated.source.years],
          library: c.generated.source.library,
          library_version: c.generated.source.libraryVersion,
        }
      : null,
    generated_holidays: (c.generated?.holidays ?? []).map((h) => ({ date: h.date, name: h.name })),
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}

/** The definition as stored (jsonb): the written definition plus the generated holidays. */
export function calendarDefinitionToStore(
  d: CalendarDefinition,
  generated: StoredCalendar['generated'],
): Record<string, JsonValue> {
  return {
    description: d.description,
    closed_weekdays: [...d.closedWeekdays],
    holidays: d.holidays.map((h) => ({ date: h.date, name: h.name })),
    closed_dates: [...d.closedDates],
    open_dates: [...d.openDates],
    holiday_request: d.holidaySource
      ? {
          country: d.holidaySource.country,
          ...(d.holidaySource.region ? { region: d.holidaySource.region } : {}),
          years: [...d.holidaySource.years],
        }
      : null,
    generated: generated
      ? {
          holidays: generated.holidays.map((h) => ({ date: h.date, name: h.name })),
          source: {
            library: generated.source.library,
            library_version: generated.source.libraryVersion,
            country: generated.source.country,
            ...(generated.source.region !== undefined ? { region: generated.source.region } : {}),
            years: [...generated.source.years],
          },
        }
      : null,
  };
}

/** A stored definition (jsonb written by calendarDefinitionToStore) back to its parts. */
export function calendarDefinitionFromStore(w: Record<string, unknown>): {
  definition: CalendarDefinition;
  generated: StoredCalendar['generated'];
} {
  const req = w.holiday_request as { country: string; region?: string; years: number[] } | null;
  const g = w.generated as {
    holidays: CalendarHoliday[];
    source: { library: string; library_version: string; country: string; region?: string; years: number[] };
  } | null;
  return {
    definition: {
      description: (w.description ?? '') as string,
      closedWeekdays: (w.closed_weekdays ?? []) as number[],
      holidays: (w.holidays ?? []) as CalendarHoliday[],
      closedDates: (w.closed_dates ?? []) as string[],
      openDates: (w.open_dates ?? []) as string[],
      holidaySource: req ?? null,
    },
    generated: g
      ? {
          holidays: g.holidays,
          source: {
            library: g.source.library,
            libraryVersion: g.source.library_version,
            country: g.source.country,
            ...(g.source.region !== undefined ? { region: g.source.region } : {}),
            years: g.source.years,
          },
        }
      : null,
  };
}
