import {
  BACKFILL_CATCH_UP_MS,
  DEFAULT_BACKFILL_RATE,
  DEFAULT_BACKFILL_SKIP_REASONS,
  MAX_BACKFILL_OCCURRENCES,
  backfillIdProblem,
  occurrencesInWindow,
  pacedFires,
  parseBackfillRequest,
  placeByCalendars,
  planBackfill,
} from './backfill';
import { CompiledCalendars, type BusinessCalendar } from './schedule/business-calendar';
import { ValidationError } from './validation';
import type { Schedule } from './schedule/schedule';

const now = new Date('2026-06-10T12:00:00Z');
const d = (s: string) => new Date(s);

function violations(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof ValidationError) return e.violations.map((v) => v.field);
    throw e;
  }
  throw new Error('expected a ValidationError');
}

describe('parseBackfillRequest', () => {
  it('reads a window with defaults: not a dry run, the default pace and skip reasons', () => {
    const r = parseBackfillRequest({ from: '2026-06-01T00:00:00Z', to: '2026-06-02T00:00:00Z' }, now);
    expect(r).toEqual({
      from: d('2026-06-01T00:00:00Z'),
      to: d('2026-06-02T00:00:00Z'),
      dryRun: false,
      maxPerSecond: DEFAULT_BACKFILL_RATE,
      skipReasons: DEFAULT_BACKFILL_SKIP_REASONS,
    });
    expect(DEFAULT_BACKFILL_SKIP_REASONS).not.toContain('INVALID_DEFINITION');
  });

  it('takes dry_run, max_per_second and skip_reasons (deduplicated)', () => {
    const r = parseBackfillRequest(
      {
        from: '2026-06-01T00:00:00+02:00',
        to: '2026-06-01T06:00:00Z',
        dry_run: true,
        max_per_second: 0.5,
        skip_reasons: ['PAUSED', 'PAUSED', 'INVALID_DEFINITION'],
      },
      now,
    );
    expect(r.dryRun).toBe(true);
    expect(r.maxPerSecond).toBe(0.5);
    expect(r.skipReasons).toEqual(['PAUSED', 'INVALID_DEFINITION']);
    expect(r.from).toEqual(d('2026-05-31T22:00:00Z'));
  });

  it.each([
    [{}, ['from', 'to']],
    [{ from: 'yesterday', to: '2026-06-01T00:00:00Z' }, ['from']],
    [{ from: '2026-06-02T00:00:00Z', to: '2026-06-01T00:00:00Z' }, ['to']],
    [{ from: '2026-06-01T00:00:00Z', to: '2026-06-01T00:00:00Z' }, ['to']],
    [{ from: '2026-06-01T00:00:00Z', to: '2026-06-11T00:00:00Z' }, ['to']],
    [{ from: '2025-01-01T00:00:00Z', to: '2026-06-01T00:00:00Z' }, ['to']],
    [{ from: '2026-06-01T00:00:00Z', to: '2026-06-02T00:00:00Z', max_per_second: 0 }, ['max_per_second']],
    [{ from: '2026-06-01T00:00:00Z', to: '2026-06-02T00:00:00Z', max_per_second: 1001 }, ['max_per_second']],
    [{ from: '2026-06-01T00:00:00Z', to: '2026-06-02T00:00:00Z', max_per_second: '5' }, ['max_per_second']],
    [{ from: '2026-06-01T00:00:00Z', to: '2026-06-02T00:00:00Z', dry_run: 'yes' }, ['dry_run']],
    [{ from: '2026-06-01T00:00:00Z', to: '2026-06-02T00:00:00Z', skip_reasons: 'PAUSED' }, ['skip_reasons']],
    [
      { from: '2026-06-01T00:00:00Z', to: '2026-06-02T00:00:00Z', skip_reasons: ['PAUSED', 'LATE'] },
      ['skip_reasons[1]'],
    ],
    [{ from: '2026-06-01T00:00:00Z', to: '2026-06-02T00:00:00Z', until: 'x' }, ['until']],
  ])('refuses %j naming %j', (body, fields) => {
    expect(violations(() => parseBackfillRequest(body, now)).sort()).toEqual([...fields].sort());
  });

  it('refuses a body that is not an object', () => {
    expect(violations(() => parseBackfillRequest([], now))).toEqual(['body']);
  });
});

describe('occurrencesInWindow', () => {
  it('lists an interval schedule from `from` (included) to `to` (not included)', () => {
    const s: Schedule = {
      kind: 'interval',
      everyMs: 3_600_000,
      anchor: d('2026-06-01T00:00:00Z'),
    } as Schedule;
    const o = occurrencesInWindow(s, d('2026-06-01T01:00:00Z'), d('2026-06-01T04:00:00Z'));
    expect(o.map((x) => x.nominal.toISOString())).toEqual([
      '2026-06-01T01:00:00.000Z',
      '2026-06-01T02:00:00.000Z',
      '2026-06-01T03:00:00.000Z',
    ]);
  });

  it('lists a cron schedule in its zone, across a DST change (Europe/Paris, 2026-03-29)', () => {
    const s = {
      kind: 'cron',
      expression: '0 9 * * *',
      timeZone: 'Europe/Paris',
      dstGap: 'AUTO',
      dstRepeat: 'AUTO',
    } as unknown as Schedule;
    const o = occurrencesInWindow(s, d('2026-03-28T00:00:00Z'), d('2026-03-30T00:00:00Z'));
    expect(o.map((x) => x.nominal.toISOString())).toEqual([
      '2026-03-28T08:00:00.000Z',
      '2026-03-29T07:00:00.000Z',
    ]);
  });

  it('lists both occurrences dst_gap SHIFT puts at one instant (New York, 2026-03-08), told apart by their shift', () => {
    const s = {
      kind: 'cron',
      expression: '45 2,3 * * *',
      timeZone: 'America/New_York',
      dstGap: 'SHIFT',
      dstRepeat: 'AUTO',
    } as unknown as Schedule;
    const o = occurrencesInWindow(s, d('2026-03-08T05:00:00Z'), d('2026-03-08T09:00:00Z'));
    expect(o.map((x) => [x.nominal.toISOString(), x.dstShiftMs])).toEqual([
      ['2026-03-08T07:45:00.000Z', 3_600_000],
      ['2026-03-08T07:45:00.000Z', 0],
    ]);
  });

  it('ignores max_fires (skipped occurrences never counted against it) but keeps start_at', () => {
    const s = {
      kind: 'interval',
      everyMs: 60_000,
      anchor: d('2026-06-01T00:00:00Z'),
      maxFires: 2,
      startAt: d('2026-06-01T00:02:00Z'),
    } as unknown as Schedule;
    expect(occurrencesInWindow(s, d('2026-06-01T00:00:00Z'), d('2026-06-01T00:06:00Z'))).toHaveLength(4);
  });

  it('refuses a window holding more than the bound, naming `to`', () => {
    const s = { kind: 'interval', everyMs: 1_000, anchor: d('2026-06-01T00:00:00Z') } as unknown as Schedule;
    const to = new Date(d('2026-06-01T00:00:00Z').getTime() + (MAX_BACKFILL_OCCURRENCES + 1) * 1_000);
    expect(violations(() => occurrencesInWindow(s, d('2026-06-01T00:00:00Z'), to))).toEqual(['to']);
    const exact = new Date(d('2026-06-01T00:00:00Z').getTime() + MAX_BACKFILL_OCCURRENCES * 1_000);
    expect(occurrencesInWindow(s, d('2026-06-01T00:00:00Z'), exact)).toHaveLength(MAX_BACKFILL_OCCURRENCES);
  });

  it('holds a one-shot only when its instant is in the window', () => {
    const s = { kind: 'once', at: d('2026-06-01T10:00:00Z') } as Schedule;
    expect(occurrencesInWindow(s, d('2026-06-01T00:00:00Z'), d('2026-06-02T00:00:00Z'))).toHaveLength(1);
    expect(occurrencesInWindow(s, d('2026-06-01T11:00:00Z'), d('2026-06-02T00:00:00Z'))).toHaveLength(0);
  });
});

describe('planBackfill', () => {
  const at = (m: number) => ({ nominal: new Date(Date.UTC(2026, 5, 1, 0, m)), dstShiftMs: 0 });
  const window = [0, 1, 2, 3, 4, 5, 6, 7].map(at);

  it('keeps the never-fired and skipped-for-an-included-reason occurrences, counts the rest', () => {
    const plan = planBackfill(
      window,
      {
        fired: [at(0), at(4)],
        skipped: [
          { reason: 'PAUSED', firstNominal: at(1).nominal, lastNominal: at(2).nominal },
          { reason: 'COALESCED', firstNominal: at(3).nominal, lastNominal: at(3).nominal },
          {
            reason: 'INVALID_DEFINITION: cron broke',
            firstNominal: at(5).nominal,
            lastNominal: at(5).nominal,
          },
          { reason: 'OVERLAP', firstNominal: at(6).nominal, lastNominal: at(6).nominal },
        ],
      },
      ['PAUSED', 'OVERLAP'],
    );
    expect(plan.items.map((i) => [i.nominal.getUTCMinutes(), i.reason])).toEqual([
      [1, 'PAUSED'],
      [2, 'PAUSED'],
      [6, 'OVERLAP'],
      [7, 'NEVER_FIRED'],
    ]);
    expect(plan.alreadyRan).toBe(2);
    expect(plan.excluded).toEqual({ COALESCED: 1, INVALID_DEFINITION: 1 });
  });

  it('tells two occurrences at one instant apart by their DST shift', () => {
    const t = new Date('2026-03-08T08:45:00Z');
    const plan = planBackfill(
      [
        { nominal: t, dstShiftMs: 3_600_000 },
        { nominal: t, dstShiftMs: 0 },
      ],
      { fired: [{ nominal: t, dstShiftMs: 0 }], skipped: [] },
      DEFAULT_BACKFILL_SKIP_REASONS,
    );
    expect(plan.items).toEqual([{ nominal: t, dstShiftMs: 3_600_000, reason: 'NEVER_FIRED' }]);
    expect(plan.alreadyRan).toBe(1);
  });

  it('reads a ledger with a skip record per occurrence (10,000 of each)', () => {
    const occ = Array.from({ length: 10_000 }, (_, k) => ({
      nominal: new Date(Date.UTC(2026, 5, 1) + k * 1_000),
      dstShiftMs: 0,
    }));
    const skipped = occ.map((o) => ({ reason: 'OVERLAP', firstNominal: o.nominal, lastNominal: o.nominal }));
    // A later record over the last hundred wins.
    skipped.push({
      reason: 'COALESCED',
      firstNominal: occ[9_900]!.nominal,
      lastNominal: occ[9_999]!.nominal,
    });
    const plan = planBackfill(occ, { fired: [occ[0]!], skipped }, ['OVERLAP']);
    expect(plan.items).toHaveLength(9_899 - 0);
    expect(plan.items.every((i) => i.reason === 'OVERLAP')).toBe(true);
    expect(plan.items[0]!.nominal).toEqual(occ[1]!.nominal);
    expect(plan.excluded).toEqual({ COALESCED: 100 });
    expect(plan.alreadyRan).toBe(1);
  });

  it('takes the latest skip record of an occurrence', () => {
    const plan = planBackfill(
      [at(1)],
      {
        fired: [],
        skipped: [
          { reason: 'COALESCED', firstNominal: at(0).nominal, lastNominal: at(2).nominal },
          { reason: 'PAUSED', firstNominal: at(1).nominal, lastNominal: at(1).nominal },
        ],
      },
      ['PAUSED'],
    );
    expect(plan.items.map((i) => i.reason)).toEqual(['PAUSED']);
  });
});

describe('pacedFires', () => {
  it('fires nothing before the next slot', () => {
    expect(pacedFires(1_000, 999, 5, 100)).toEqual({ count: 0, nextAtMs: 1_000 });
  });

  it('fires one per 1/rate seconds: at 5/s, 3 fires due 400 ms after the slot', () => {
    expect(pacedFires(1_000, 1_400, 5, 100)).toEqual({ count: 3, nextAtMs: 1_600 });
  });

  it('is capped by the limit (fires left, tenant tokens)', () => {
    expect(pacedFires(1_000, 1_400, 5, 1)).toEqual({ count: 1, nextAtMs: 1_200 });
    expect(pacedFires(1_000, 1_400, 5, 0)).toEqual({ count: 0, nextAtMs: 1_000 });
  });

  it('catches up at most BACKFILL_CATCH_UP_MS worth after falling behind', () => {
    const r = pacedFires(0, 60_000, 10, 10_000);
    expect(r.count).toBe((BACKFILL_CATCH_UP_MS / 1000) * 10 + 1);
    expect(r.nextAtMs).toBe(60_000 - BACKFILL_CATCH_UP_MS + r.count * 100);
  });

  it('keeps a slow pace below one a second', () => {
    expect(pacedFires(0, 1_000, 0.5, 100)).toEqual({ count: 1, nextAtMs: 2_000 });
  });
});

describe('backfillIdProblem', () => {
  it('accepts a positive integer and names the field otherwise', () => {
    expect(backfillIdProblem('42')).toEqual([]);
    expect(backfillIdProblem('0')[0]?.field).toBe('backfill_id');
    expect(backfillIdProblem('x', 'id')[0]?.field).toBe('id');
  });
});

describe('a backfill through business calendars', () => {
  // 2026-06-13 and 06-14 are a Saturday and a Sunday; 06-15 a Monday, closed too.
  const weekdays: BusinessCalendar = {
    name: 'ops',
    version: 3,
    closedWeekdays: [0, 6],
    holidays: [],
    closedDates: ['2026-06-15'],
    openDates: [],
  };
  const cal = (rule: 'SKIP' | 'NEXT_BUSINESS_DAY' | 'PREVIOUS_BUSINESS_DAY') => ({
    calendars: new CompiledCalendars([weekdays]),
    rule,
  });
  const daily = {
    kind: 'cron',
    expression: '0 9,17 * * *',
    timeZone: 'UTC',
    dstGap: 'AUTO',
    dstRepeat: 'AUTO',
  } as unknown as Schedule;
  const window = occurrencesInWindow(daily, d('2026-06-12T00:00:00Z'), d('2026-06-17T00:00:00Z'));
  const show = (placed: ReturnType<typeof placeByCalendars>['placed']) =>
    placed.map(
      (o) => `${o.nominal.toISOString().slice(5, 16)} ${o.calendarShiftMs ?? 0} ${o.calendar ?? '-'}`,
    );

  it('moves each to where its calendar puts it, holding a moved one behind the one before', () => {
    const next = placeByCalendars(window, cal('NEXT_BUSINESS_DAY'), 'UTC');
    const H = 3_600_000;
    expect(show(next.placed)).toEqual([
      '06-12T09:00 0 -',
      '06-12T17:00 0 -',
      // Saturday 09:00 → Tuesday 09:00, Saturday 17:00 → Tuesday 17:00; the later ones would land
      // before the one before them, so they are held at Tuesday 17:00, as the claim holds them.
      `06-16T09:00 ${72 * H} ops@3`,
      `06-16T17:00 ${72 * H} ops@3`,
      `06-16T17:00 ${56 * H} ops@3`,
      `06-16T17:00 ${48 * H} ops@3`,
      `06-16T17:00 ${32 * H} ops@3`,
      `06-16T17:00 ${24 * H} ops@3`,
      `06-16T17:00 ${8 * H} -`,
      '06-16T17:00 0 -',
    ]);
    expect(next.calendarSkipped).toBe(0);
  });

  it('moves back to the previous business day, and leaves skipped ones out', () => {
    const prev = placeByCalendars(window, cal('PREVIOUS_BUSINESS_DAY'), 'UTC');
    // Saturday 09:00 → Friday 09:00, held behind Friday's own 17:00.
    expect(prev.placed[2]).toEqual({
      nominal: d('2026-06-12T17:00:00Z'),
      dstShiftMs: 0,
      calendarShiftMs: -16 * 3_600_000,
      calendar: 'ops@3',
    });
    const skip = placeByCalendars(window, cal('SKIP'), 'UTC');
    expect(skip.placed.map((o) => o.nominal.toISOString().slice(5, 16))).toEqual([
      '06-12T09:00',
      '06-12T17:00',
      '06-16T09:00',
      '06-16T17:00',
    ]);
    expect(skip.calendarSkipped).toBe(6);
  });

  it('counts a moved occurrence as run only when a fire has its instant and its calendar shift', () => {
    const prev = placeByCalendars(window, cal('PREVIOUS_BUSINESS_DAY'), 'UTC').placed;
    const moved = prev[2]!;
    const plan = planBackfill(
      prev,
      {
        // Friday 09:00's own fire, and the moved Saturday 09:00 (at Friday 17:00, told apart by its shift).
        fired: [
          { nominal: d('2026-06-12T09:00:00Z'), dstShiftMs: 0 },
          { nominal: moved.nominal, dstShiftMs: 0, calendarShiftMs: moved.calendarShiftMs! },
        ],
        skipped: [],
      },
      DEFAULT_BACKFILL_SKIP_REASONS,
    );
    expect(plan.alreadyRan).toBe(2);
    expect(plan.items).toHaveLength(prev.length - 2);
    expect(plan.items[0]).toEqual({
      nominal: d('2026-06-12T17:00:00Z'),
      dstShiftMs: 0,
      reason: 'NEVER_FIRED',
    });
    expect(plan.items[1]).toMatchObject({
      nominal: d('2026-06-12T17:00:00Z'),
      calendarShiftMs: -24 * 3_600_000,
      calendar: 'ops@3',
      reason: 'NEVER_FIRED',
    });
  });
});
