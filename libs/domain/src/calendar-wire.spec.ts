import {
  businessCalendarOf,
  calendarDefinitionFromStore,
  calendarDefinitionToStore,
  calendarToWire,
  parseCalendarDefinition,
  type StoredCalendar,
} from './calendar-wire';
import { parseCalendarPolicy, parseJobDefinition } from './job-wire';
import { ValidationError } from './validation';

const fields = (raw: unknown) => {
  const r = parseCalendarDefinition(raw);
  return r.ok ? [] : r.violations.map((v) => v.field);
};

describe('calendar definitions on the wire', () => {
  it('defaults to a Saturday-Sunday weekend and sorts the weekdays', () => {
    const r = parseCalendarDefinition({ name: 'x' });
    expect(r.ok && r.value.closedWeekdays).toEqual([0, 6]);
    const f = parseCalendarDefinition({ closed_weekdays: ['FRIDAY', 'SATURDAY'] });
    expect(f.ok && f.value.closedWeekdays).toEqual([5, 6]);
    const none = parseCalendarDefinition({ closed_weekdays: [] });
    expect(none.ok && none.value.closedWeekdays).toEqual([]);
  });

  it('names every bad field', () => {
    expect(
      fields({
        closed_weekdays: ['FUNDAY', 'MONDAY', 'MONDAY'],
        holidays: [{ date: '2026-02-29', name: 'x' }, { date: '2026-12-25' }],
        closed_dates: ['2026-1-1'],
        open_dates: 'soon',
        holiday_source: { country: 'de', years: [2026, 1900] },
        colour: 'red',
      }),
    ).toEqual([
      'colour',
      'closed_weekdays[0]',
      'closed_weekdays[2]',
      'holidays[0].date',
      'holidays[1].name',
      'closed_dates[0]',
      'open_dates',
      'holiday_source.country',
      'holiday_source.years[1]',
    ]);
    expect(
      fields({
        closed_weekdays: ['SUNDAY', 'MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY'],
      }),
    ).toEqual(['closed_weekdays']);
    expect(fields({ holiday_source: { country: 'DE', years: [] } })).toEqual(['holiday_source.years']);
  });

  it('round-trips through the store and shows hand-listed and generated holidays apart', () => {
    const parsed = parseCalendarDefinition({
      description: 'Berlin',
      holidays: [{ date: '2026-12-24', name: 'Christmas Eve' }],
      holiday_source: { country: 'DE', region: 'BE', years: [2027, 2026] },
    });
    if (!parsed.ok) throw new Error('refused');
    const generated = {
      holidays: [{ date: '2026-12-25', name: 'Christmas Day' }],
      source: {
        library: 'date-holidays',
        libraryVersion: '3.37.0',
        country: 'DE',
        region: 'BE',
        years: [2026, 2027],
      },
    };
    const back = calendarDefinitionFromStore(
      JSON.parse(JSON.stringify(calendarDefinitionToStore(parsed.value, generated))),
    );
    expect(back.definition).toEqual(parsed.value);
    expect(back.generated).toEqual(generated);
    const stored: StoredCalendar = {
      tenantId: null,
      name: 'de-be',
      version: 4,
      ...back,
      createdAt: new Date(0),
      updatedAt: new Date(0),
    };
    expect(businessCalendarOf(stored).holidays.map((h) => h.date)).toEqual(['2026-12-24', '2026-12-25']);
    expect(calendarToWire(stored)).toMatchObject({
      shared: true,
      tenant_id: null,
      closed_weekdays: ['SUNDAY', 'SATURDAY'],
      holidays: [{ date: '2026-12-24', name: 'Christmas Eve' }],
      generated_holidays: [{ date: '2026-12-25', name: 'Christmas Day' }],
      holiday_source: { country: 'DE', region: 'BE', years: [2026, 2027], library_version: '3.37.0' },
    });
  });
});

describe('a job naming calendars', () => {
  const ctx = {
    now: new Date('2026-12-01T00:00:00Z'),
    limits: { minIntervalMs: 1_000, maxPayloadBytes: 65_536, maxJitterMs: 3_600_000 },
    newJobId: () => 'j',
    tenantId: 'acme',
  };
  const job = (schedule: unknown, policies: unknown) => ({
    job_id: 'j',
    schedule,
    target: { type: 'kafka', topic: 'out' },
    policies,
  });

  it('keeps calendars and the rule (default SKIP) in its policies', () => {
    const r = parseJobDefinition(job({ kind: 'cron', expression: '0 9 * * *' }, { calendars: ['ops'] }), ctx);
    expect(r.ok && r.value.policies).toMatchObject({ calendars: ['ops'], calendarRule: 'SKIP' });
    const none = parseJobDefinition(job({ kind: 'cron', expression: '0 9 * * *' }, {}), ctx);
    expect(none.ok && none.value.policies.calendars).toBeUndefined();
  });

  it('refuses calendars on a once schedule, a bad rule, a bad or repeated name', () => {
    const once = parseJobDefinition(
      job({ kind: 'once', at: '2099-01-01T00:00:00Z' }, { calendars: ['ops'] }),
      ctx,
    );
    expect(!once.ok && once.violations.map((v) => v.field)).toEqual(['policies.calendars']);
    const bad = parseJobDefinition(
      job(
        { kind: 'cron', expression: '0 9 * * *' },
        { calendars: ['ops', 'ops', 'Ops'], calendar_rule: 'MAYBE' },
      ),
      ctx,
    );
    expect(!bad.ok && bad.violations.map((v) => v.field)).toEqual([
      'policies.calendars[1]',
      'policies.calendars[2]',
      'policies.calendar_rule',
    ]);
  });

  it("parses a preview's calendars, naming fields without the policies prefix", () => {
    expect(parseCalendarPolicy(['a'], 'NEXT_BUSINESS_DAY')).toEqual({
      names: ['a'],
      rule: 'NEXT_BUSINESS_DAY',
    });
    expect(parseCalendarPolicy(undefined, undefined)).toBeUndefined();
    expect(() => parseCalendarPolicy(['a'], 'X')).toThrow(ValidationError);
  });
});
