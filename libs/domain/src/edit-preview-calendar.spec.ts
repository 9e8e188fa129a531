import { previewEdit, stateAfterEdit } from './edit-preview';
import type { Job } from './job';
import { DEFAULT_POLICIES } from './policies';
import type { BusinessCalendar } from './schedule/business-calendar';

const weekend: BusinessCalendar = {
  name: 'weekend',
  version: 2,
  closedWeekdays: [0, 6],
  holidays: [],
  closedDates: [],
  openDates: [],
};
const DAY = 86_400_000;
const now = new Date('2026-12-04T10:00:00Z'); // a Friday, after its 09:00
const job: Job = {
  jobId: 'daily',
  tenantId: 't',
  schedule: { kind: 'cron', expression: '0 9 * * *', timeZone: 'UTC', dstGap: 'AUTO', dstRepeat: 'AUTO' },
  target: { type: 'kafka', topic: 'x', key: null, headers: {} },
  payload: null,
  policies: DEFAULT_POLICIES,
  labels: {},
  shard: 0,
  status: 'SCHEDULED',
  nextRunAt: new Date('2026-12-05T09:00:00Z'),
  nextNominalAt: new Date('2026-12-05T09:00:00Z'),
  fenceToken: 3,
  firesCount: 3,
  version: 1,
  createdAt: new Date(0),
  updatedAt: new Date(0),
};
const withCalendar = {
  jobId: job.jobId,
  schedule: job.schedule,
  policies: { ...DEFAULT_POLICIES, calendars: ['weekend'], calendarRule: 'NEXT_BUSINESS_DAY' as const },
  calendars: [weekend],
};
const iso = (d: Date) => d.toISOString();

describe('the edit preview of business calendars', () => {
  it('adding a calendar re-plans through it: the weekend moves onto Monday, three occurrences there', () => {
    const state = stateAfterEdit(job, withCalendar, now, 0);
    expect(state !== 'keep' && iso(state.next!.nominalTime)).toBe('2026-12-07T09:00:00.000Z');
    expect(state !== 'keep' && state.next!.calendarShiftMs).toBe(2 * DAY);

    const impact = previewEdit(job, withCalendar, now, { maxCatchUp: 10, herdJitterMs: 0, count: 4 });
    expect(impact.replanned).toBe(true);
    expect(impact.before.occurrences.map((o) => iso(o.nominalTime))).toEqual([
      '2026-12-05T09:00:00.000Z',
      '2026-12-06T09:00:00.000Z',
      '2026-12-07T09:00:00.000Z',
      '2026-12-08T09:00:00.000Z',
    ]);
    expect(impact.after.occurrences.map((o) => [iso(o.nominalTime), (o.calendarShiftMs ?? 0) / DAY])).toEqual(
      [
        ['2026-12-07T09:00:00.000Z', 2],
        ['2026-12-07T09:00:00.000Z', 1],
        ['2026-12-07T09:00:00.000Z', 0],
        ['2026-12-08T09:00:00.000Z', 0],
      ],
    );
    // Saturday's and Sunday's own instants disappear; their moved copies on Monday appear.
    expect(impact.disappearing.map((o) => iso(o.nominalTime))).toEqual([
      '2026-12-05T09:00:00.000Z',
      '2026-12-06T09:00:00.000Z',
    ]);
    expect(impact.appearing.map((o) => (o.calendarShiftMs ?? 0) / DAY)).toEqual([2, 1]);
  });

  it('a calendar rule change alone changes the timing', () => {
    const skip = { ...withCalendar, policies: { ...withCalendar.policies, calendarRule: 'SKIP' as const } };
    const calendarJob: Job = { ...job, policies: withCalendar.policies, calendars: [weekend] };
    const impact = previewEdit(calendarJob, skip, now, { maxCatchUp: 10, herdJitterMs: 0, count: 2 });
    expect(impact.replanned).toBe(true);
    // Under SKIP the weekend's occurrences are not listed (they do not fire).
    expect(impact.after.occurrences.map((o) => iso(o.nominalTime))).toEqual([
      '2026-12-07T09:00:00.000Z',
      '2026-12-08T09:00:00.000Z',
    ]);
  });
});
