import {
  firstCalendarOccurrence,
  planCalendarOccurrences,
  planClaimedJob,
  type JobCalendars,
} from './calendar-planner';
import type { Job } from './job';
import { DEFAULT_POLICIES } from './policies';
import { CompiledCalendars, type BusinessCalendar } from './schedule/business-calendar';

const workweek: BusinessCalendar = {
  name: 'ops',
  version: 7,
  closedWeekdays: [0, 6],
  holidays: [{ date: '2026-12-25', name: 'Christmas Day' }],
  closedDates: [],
  openDates: [],
};
const DAY = 86_400_000;
const iso = (d: Date) => d.toISOString();

/** A daily 09:00 UTC cron job whose cursor is at `schedulePoint`, moved by `shiftMs`. */
function dailyJob(
  schedulePoint: string,
  shiftMs = 0,
  rule: Job['policies']['calendarRule'] = 'NEXT_BUSINESS_DAY',
): Job {
  const at = new Date(Date.parse(schedulePoint) + shiftMs);
  return {
    jobId: 'payroll',
    tenantId: 't',
    schedule: { kind: 'cron', expression: '0 9 * * *', timeZone: 'UTC', dstGap: 'AUTO', dstRepeat: 'AUTO' },
    target: { type: 'kafka', topic: 'x', key: null, headers: {} },
    payload: null,
    policies: { ...DEFAULT_POLICIES, calendars: ['ops'], calendarRule: rule },
    calendars: [workweek],
    labels: {},
    shard: 0,
    status: 'SCHEDULED',
    nextRunAt: at,
    nextNominalAt: at,
    nextCalendarShiftMs: shiftMs,
    fenceToken: 1,
    firesCount: 0,
    version: 1,
    createdAt: new Date(0),
    updatedAt: new Date(0),
  };
}
const cal = (rule: JobCalendars['rule']): JobCalendars => ({
  calendars: new CompiledCalendars([workweek]),
  rule,
});
const opts = { maxCatchUp: 10, herdJitterMs: 0 };

describe('planCalendarOccurrences', () => {
  it("moves Saturday's and Sunday's occurrences onto Monday, where Monday's own also fires: three occurrences", () => {
    // Friday 2026-12-04 fired; the cursor is Saturday's point moved two days.
    const job = dailyJob('2026-12-05T09:00:00Z', 2 * DAY);
    const p = planCalendarOccurrences(
      job,
      cal('NEXT_BUSINESS_DAY'),
      new Date('2026-12-07T09:00:00.100Z'),
      opts,
    );
    expect(p.fires.map((f) => [iso(f.nominalTime), f.calendarShiftMs ?? 0, f.calendar])).toEqual([
      ['2026-12-07T09:00:00.000Z', 2 * DAY, 'ops@7'],
      ['2026-12-07T09:00:00.000Z', DAY, 'ops@7'],
      ['2026-12-07T09:00:00.000Z', 0, undefined],
    ]);
    expect(p.skips).toEqual([]);
    expect(iso(p.next!.nominalTime)).toBe('2026-12-08T09:00:00.000Z');
  });

  it('plans nothing before the moved instant: a claim at the schedule instant only re-plans', () => {
    const job = dailyJob('2026-12-05T09:00:00Z');
    const p = planCalendarOccurrences(
      job,
      cal('NEXT_BUSINESS_DAY'),
      new Date('2026-12-05T09:00:00.100Z'),
      opts,
    );
    expect(p.fires).toEqual([]);
    expect(iso(p.next!.nominalTime)).toBe('2026-12-07T09:00:00.000Z');
    expect(p.next!.calendarShiftMs).toBe(2 * DAY);
  });

  it('records CALENDAR_SKIP ranges with the calendar version under SKIP', () => {
    const job = dailyJob('2026-12-05T09:00:00Z', 0, 'SKIP');
    // Claimed late on Monday (FIRE_ONCE, on time): Saturday and Sunday are one skipped range.
    const p = planCalendarOccurrences(job, cal('SKIP'), new Date('2026-12-07T09:00:00.100Z'), opts);
    expect(p.skips).toEqual([
      {
        reason: 'CALENDAR_SKIP',
        firstNominal: new Date('2026-12-05T09:00:00Z'),
        lastNominal: new Date('2026-12-06T09:00:00Z'),
        occurrences: 2,
        calendar: 'ops@7',
      },
    ]);
    expect(p.fires.map((f) => iso(f.nominalTime))).toEqual(['2026-12-07T09:00:00.000Z']);
  });

  it('moves Christmas (Friday) back to Thursday under PREVIOUS_BUSINESS_DAY, after Thursday’s own', () => {
    const first = firstCalendarOccurrence(
      dailyJob('2026-12-24T09:00:00Z'),
      cal('PREVIOUS_BUSINESS_DAY'),
      new Date('2026-12-24T08:00:00Z'),
      0,
    );
    expect(iso(first!.nominalTime)).toBe('2026-12-24T09:00:00.000Z');
    const job = dailyJob('2026-12-24T09:00:00Z', 0, 'PREVIOUS_BUSINESS_DAY');
    const p = planCalendarOccurrences(
      job,
      cal('PREVIOUS_BUSINESS_DAY'),
      new Date('2026-12-24T09:00:00.100Z'),
      opts,
    );
    // Thursday's own, then Friday's (holiday), Saturday's and Sunday's, all moved to Thursday 09:00.
    expect(p.fires.map((f) => [iso(f.nominalTime), (f.calendarShiftMs ?? 0) / DAY])).toEqual([
      ['2026-12-24T09:00:00.000Z', 0],
      ['2026-12-24T09:00:00.000Z', -1],
      ['2026-12-24T09:00:00.000Z', -2],
      ['2026-12-24T09:00:00.000Z', -3],
    ]);
    expect(iso(p.next!.nominalTime)).toBe('2026-12-28T09:00:00.000Z');
  });

  it('passes over moves into the past when planning from now', () => {
    // Created Thursday 12:00: Friday's occurrence would move to Thursday 09:00, already past.
    const first = firstCalendarOccurrence(
      dailyJob('2026-12-24T09:00:00Z'),
      cal('PREVIOUS_BUSINESS_DAY'),
      new Date('2026-12-24T12:00:00Z'),
      0,
    );
    expect(iso(first!.nominalTime)).toBe('2026-12-28T09:00:00.000Z');
  });

  it('ONLY_CLOSED_DAYS fires on the weekend and skips the business days', () => {
    const job = dailyJob('2026-12-04T09:00:00Z', 0, 'ONLY_CLOSED_DAYS');
    const p = planCalendarOccurrences(
      job,
      cal('ONLY_CLOSED_DAYS'),
      new Date('2026-12-05T09:00:00.100Z'),
      opts,
    );
    expect(p.skips.map((s) => [s.reason, iso(s.firstNominal), s.occurrences])).toEqual([
      ['CALENDAR_SKIP', '2026-12-04T09:00:00.000Z', 1],
    ]);
    expect(p.fires.map((f) => iso(f.nominalTime))).toEqual(['2026-12-05T09:00:00.000Z']);
  });

  it('applies the misfire policy to moved instants: SKIP drops the missed ones', () => {
    const job = {
      ...dailyJob('2026-12-05T09:00:00Z', 2 * DAY),
      policies: { ...dailyJob('x').policies, misfire: 'SKIP' as const },
    };
    const p = planCalendarOccurrences(job, cal('NEXT_BUSINESS_DAY'), new Date('2026-12-07T12:00:00Z'), opts);
    expect(p.fires).toEqual([]);
    expect(p.skips).toEqual([expect.objectContaining({ reason: 'MISFIRE_SKIP', occurrences: 3 })]);
  });

  it('walks a calendar closed every day in bounded steps, skipping', () => {
    const closed: BusinessCalendar = { ...workweek, closedWeekdays: [0, 1, 2, 3, 4, 5, 6] };
    const job = { ...dailyJob('2026-12-05T09:00:00Z', 0, 'NEXT_BUSINESS_DAY'), calendars: [closed] };
    const p = planClaimedJob(job, job.nextNominalAt!, new Date('2026-12-05T09:00:00.100Z'), opts);
    expect(p.fires).toEqual([]);
    expect(p.skips.map((s) => [s.reason, s.occurrences])).toEqual([['CALENDAR_SKIP', 1]]);
    expect(iso(p.next!.nominalTime)).toBe('2026-12-06T09:00:00.000Z');
  });

  it('goes through the claim planner for a job without calendars', () => {
    const job = { ...dailyJob('2026-12-05T09:00:00Z'), calendars: [] };
    const p = planClaimedJob(job, job.nextNominalAt!, new Date('2026-12-05T09:00:00.100Z'), opts);
    expect(p.fires.map((f) => iso(f.nominalTime))).toEqual(['2026-12-05T09:00:00.000Z']);
  });
});
