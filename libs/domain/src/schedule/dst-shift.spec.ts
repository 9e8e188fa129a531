/**
 * dst_gap SHIFT never loses an occurrence: a wall time in a spring-forward gap fires the gap's length
 * later, and when that instant already has an occurrence of the same schedule, both fire, as two
 * occurrences (told apart by their DST shift), in nominal order.
 */
import { planDueOccurrences } from '../claim-planner';
import type { ClaimableJob } from '../job';
import { DEFAULT_POLICIES } from '../policies';
import { compileCron } from './cron-expression';
import { DAY_MS, HOUR_MS } from './calendar';
import {
  firstOccurrenceAtOrAfter,
  nextOccurrenceAfterOccurrence,
  OccurrenceCursor,
  previewFires,
  type Occurrence,
} from './occurrences';
import { planMisfire } from './misfire';
import type { CronSchedule, DstGapPolicy, DstRepeatPolicy } from './schedule';
import { zoneRules } from './time-zone';

function cron(
  expression: string,
  timeZone: string,
  dstGap: DstGapPolicy = 'SHIFT',
  dstRepeat: DstRepeatPolicy = 'FIRST',
): CronSchedule {
  return { kind: 'cron', expression, timeZone, dstGap, dstRepeat };
}

/** All occurrences with an instant in [from, to). */
function occurrencesBetween(schedule: CronSchedule, from: number, to: number): Occurrence[] {
  const out: Occurrence[] = [];
  for (
    let o = firstOccurrenceAtOrAfter(schedule, new Date(from));
    o !== null && o.nominal.getTime() < to;
    o = nextOccurrenceAfterOccurrence(schedule, o)
  ) {
    out.push(o);
  }
  return out;
}

/** The wall time an occurrence names (ms, local time read as UTC): its instant at the offset before any shift. */
function namedWall(o: Occurrence, timeZone: string): number {
  const at = o.nominal.getTime();
  return at + zoneRules(timeZone).offsetAt(at) - o.dstShiftMs;
}

const iso = (wall: number) => new Date(wall).toISOString().slice(0, 16);

describe('America/New_York 2026-03-08: 45 0-3 * * * under SHIFT', () => {
  const schedule = cron('45 0-3 * * *', 'America/New_York');
  const day = [Date.parse('2026-03-08T05:00:00Z'), Date.parse('2026-03-09T04:00:00Z')] as const;

  it('fires 4 times: 02:45 moves to 03:45 EDT and 03:45 still fires, two occurrences at one instant', () => {
    const found = occurrencesBetween(schedule, ...day);
    expect(found.map((o) => [o.nominal.toISOString(), o.dstShiftMs])).toEqual([
      ['2026-03-08T05:45:00.000Z', 0], // 00:45 EST
      ['2026-03-08T06:45:00.000Z', 0], // 01:45 EST
      ['2026-03-08T07:45:00.000Z', 3_600_000], // 02:45, which does not exist: 03:45 EDT
      ['2026-03-08T07:45:00.000Z', 0], // 03:45 EDT
    ]);
    expect(found.map((o) => iso(namedWall(o, schedule.timeZone)))).toEqual([
      '2026-03-08T00:45',
      '2026-03-08T01:45',
      '2026-03-08T02:45',
      '2026-03-08T03:45',
    ]);
  });

  it('AUTO on a fixed hour is SHIFT and keeps all four', () => {
    expect(occurrencesBetween(cron('45 0-3 * * *', 'America/New_York', 'AUTO', 'AUTO'), ...day)).toHaveLength(
      4,
    );
  });

  it('SKIP still drops the 02:45 that does not exist', () => {
    const found = occurrencesBetween(cron('45 0-3 * * *', 'America/New_York', 'SKIP'), ...day);
    expect(found.map((o) => o.nominal.toISOString())).toEqual([
      '2026-03-08T05:45:00.000Z',
      '2026-03-08T06:45:00.000Z',
      '2026-03-08T07:45:00.000Z',
    ]);
  });

  it('previews and cursors list the shared instant twice', () => {
    expect(previewFires(schedule, new Date(day[0]), 4).map((d) => d.toISOString())).toEqual([
      '2026-03-08T05:45:00.000Z',
      '2026-03-08T06:45:00.000Z',
      '2026-03-08T07:45:00.000Z',
      '2026-03-08T07:45:00.000Z',
    ]);
    const cursor = new OccurrenceCursor(schedule, new Date('2026-03-08T07:00:00Z'));
    expect([cursor.next(), cursor.next(), cursor.next()].map((o) => o?.dstShiftMs)).toEqual([
      3_600_000, 0, 0,
    ]);
  });

  it('the misfire plan fires both, each with its own shift, and counts both when skipping', () => {
    const rules = { misfire: 'FIRE_ALL' as const, maxCatchUp: 10, lateToleranceMs: 2_000 };
    const now = new Date('2026-03-08T08:00:00Z');
    const plan = planMisfire(schedule, new Date('2026-03-08T05:45:00Z'), now, 0, rules);
    expect(plan.fires.map((f) => [f.nominal.toISOString(), f.dstShiftMs])).toEqual([
      ['2026-03-08T05:45:00.000Z', 0],
      ['2026-03-08T06:45:00.000Z', 0],
      ['2026-03-08T07:45:00.000Z', 3_600_000],
      ['2026-03-08T07:45:00.000Z', 0],
    ]);
    const skip = planMisfire(schedule, new Date('2026-03-08T05:45:00Z'), now, 0, {
      ...rules,
      misfire: 'SKIP',
    });
    expect(skip.skipped).toEqual([expect.objectContaining({ reason: 'MISFIRE_SKIP', count: 4 })]);
    // FIRE_ONCE stands for all four and carries the last of them (03:45, not moved).
    const once = planMisfire(schedule, new Date('2026-03-08T05:45:00Z'), now, 0, {
      ...rules,
      misfire: 'FIRE_ONCE',
    });
    expect(once.fires).toEqual([
      expect.objectContaining({ dstShiftMs: 0, coalesced: expect.objectContaining({ count: 4 }) }),
    ]);
    expect(once.skipped).toEqual([expect.objectContaining({ reason: 'COALESCED', count: 3 })]);
  });

  it('a claim of the shifted occurrence leaves the one at the same instant as the next run', () => {
    const plan = planMisfire(
      schedule,
      new Date('2026-03-08T07:45:00Z'),
      new Date('2026-03-08T07:44:00Z'),
      0,
      { misfire: 'FIRE_ALL', maxCatchUp: 10, lateToleranceMs: 2_000 },
      3_600_000,
    );
    expect(plan.nextDstShiftMs).toBe(3_600_000);
    // Claimed at 07:45: the shifted one fires, and both are due: both fire in one claim.
    const claim = planDueOccurrences(
      job(schedule, new Date('2026-03-08T07:45:00Z'), 3_600_000),
      new Date('2026-03-08T07:45:00Z'),
      new Date('2026-03-08T07:45:00.500Z'),
      { maxCatchUp: 10, herdJitterMs: 0 },
    );
    expect(claim.fires.map((f) => [f.nominalTime.toISOString(), f.dstShiftMs ?? 0])).toEqual([
      ['2026-03-08T07:45:00.000Z', 3_600_000],
      ['2026-03-08T07:45:00.000Z', 0],
    ]);
    expect(claim.next?.nominalTime.toISOString()).toBe('2026-03-09T04:45:00.000Z');
  });

  it('a job whose cursor is the second of the two fires only that one (the cursor is instant + shift)', () => {
    const claim = planDueOccurrences(
      job(schedule, new Date('2026-03-08T07:45:00Z'), 0),
      new Date('2026-03-08T07:45:00Z'),
      new Date('2026-03-08T07:45:01Z'),
      { maxCatchUp: 10, herdJitterMs: 0 },
    );
    // The cursor says "03:45, not moved": 02:45's turn, at the same instant, came before it.
    expect(claim.fires.map((f) => f.dstShiftMs ?? 0)).toEqual([0]);
  });
});

function job(schedule: CronSchedule, nextNominalAt: Date, nextDstShiftMs: number): ClaimableJob {
  return {
    jobId: 'dst-job',
    tenantId: 't',
    shard: 0,
    schedule,
    status: 'SCHEDULED',
    nextRunAt: nextNominalAt,
    nextNominalAt,
    nextDstShiftMs,
    fenceToken: 0,
    firesCount: 0,
    target: { type: 'kafka', topic: 'x', key: null, headers: {} },
    payload: null,
    policies: DEFAULT_POLICIES,
  };
}

describe('Pacific/Apia 2011-12-30, a day skipped whole (-10:00 → +14:00)', () => {
  const schedule = cron('0 12 * * *', 'Pacific/Apia');

  it('0 12 * * * fires for the 30th, 24 hours later, as its own occurrence beside the 31st', () => {
    const found = occurrencesBetween(
      schedule,
      Date.parse('2011-12-28T00:00:00Z'),
      Date.parse('2012-01-01T00:00:00Z'),
    );
    expect(
      found.map((o) => [iso(namedWall(o, 'Pacific/Apia')), o.nominal.toISOString(), o.dstShiftMs]),
    ).toEqual([
      ['2011-12-28T12:00', '2011-12-28T22:00:00.000Z', 0],
      ['2011-12-29T12:00', '2011-12-29T22:00:00.000Z', 0],
      ['2011-12-30T12:00', '2011-12-30T22:00:00.000Z', DAY_MS],
      ['2011-12-31T12:00', '2011-12-30T22:00:00.000Z', 0],
      ['2012-01-01T12:00', '2011-12-31T22:00:00.000Z', 0],
    ]);
  });
});

describe('every IANA zone, every spring-forward 2000–2030 (SHIFT, repeat FIRST)', () => {
  // Half-hour steps, so that half-hour gaps (Lord Howe) also move named times onto existing ones.
  const expression = '0,30 * * * *';
  const perDay = 48;
  const zones = Intl.supportedValuesOf('timeZone');

  it('fires each named time of each day touched by a gap exactly once: no merge, no loss', () => {
    expect(compileCron(expression).minimumSpacingMs()).toBe(30 * 60_000);
    const problems: string[] = [];
    let gaps = 0;
    let shared = 0;
    for (const zone of zones) {
      const rules = zoneRules(zone);
      const schedule = cron(expression, zone);
      for (let year = 2000; year <= 2030; year++) {
        for (const t of rules.transitionsIn(year)) {
          if (t.after <= t.before) continue;
          gaps++;
          const firstDay = Math.floor((t.at + t.before) / DAY_MS);
          const lastDay = Math.floor((t.at + t.after - 1) / DAY_MS);
          // Every named time of those days fires between these instants (with either offset, ± an hour).
          const found = occurrencesBetween(
            schedule,
            firstDay * DAY_MS - Math.max(t.before, t.after) - HOUR_MS,
            (lastDay + 1) * DAY_MS - Math.min(t.before, t.after) + HOUR_MS,
          );
          for (let i = 1; i < found.length; i++) {
            const a = found[i - 1]!;
            const b = found[i]!;
            const same = a.nominal.getTime() === b.nominal.getTime();
            if (same) shared++;
            if (same ? a.dstShiftMs <= b.dstShiftMs : a.nominal > b.nominal)
              problems.push(`${zone}: out of order at ${b.nominal.toISOString()}`);
          }
          const walls = found.map((o) => namedWall(o, zone));
          for (let day = firstDay; day <= lastDay; day++) {
            const onDay = walls.filter((w) => Math.floor(w / DAY_MS) === day);
            if (onDay.length !== perDay || new Set(onDay).size !== perDay)
              problems.push(
                `${zone} ${iso(day * DAY_MS).slice(0, 10)}: ${onDay.length} fires, ${new Set(onDay).size} named times`,
              );
          }
        }
      }
    }
    expect(problems).toEqual([]);
    // The sweep did look at gaps, and at shared instants (every whole-hour gap makes some).
    expect(gaps).toBeGreaterThan(1_000);
    expect(shared).toBeGreaterThan(1_000);
    // Working out 31 years of ~420 zones through Intl takes tens of seconds on a busy machine.
  }, 300_000);
});
