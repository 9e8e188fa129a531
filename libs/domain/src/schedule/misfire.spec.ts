import { planMisfire, type MisfirePlan, type MisfireRules } from './misfire';
import type { CronSchedule, IntervalSchedule, OnceSchedule } from './schedule';

const at = (iso: string): Date => new Date(iso);
const minutely: IntervalSchedule = { kind: 'interval', everyMs: 60_000, anchor: at('2026-01-01T00:00:00Z') };
const rules = (overrides: Partial<MisfireRules>): MisfireRules => ({
  misfire: 'FIRE_ONCE',
  maxCatchUp: 100,
  lateToleranceMs: 1_000,
  ...overrides,
});

interface PlanView {
  fires: { nominal: string; late: boolean; coalesced?: string }[];
  skipped: string[];
  next: string | null;
  firesSoFar: number;
}

/** Compact, readable view of a plan (times as HH:MM:SS when on 2026-01-01). */
function view(plan: MisfirePlan): PlanView {
  const t = (d: Date): string => d.toISOString().replace('2026-01-01T', '').replace('.000Z', '');
  return {
    fires: plan.fires.map((f) => ({
      nominal: t(f.nominal),
      late: f.late,
      ...(f.coalesced
        ? {
            coalesced: `${f.coalesced.count}${f.coalesced.countIsLowerBound ? '+' : ''} ${t(f.coalesced.firstNominal)}..${t(f.coalesced.lastNominal)}`,
          }
        : {}),
    })),
    skipped: plan.skipped.map(
      (s) =>
        `${s.reason} ${s.count}${s.countIsLowerBound ? '+' : ''} ${t(s.firstNominal)}..${t(s.lastNominal)}`,
    ),
    next: plan.nextRunAt === null ? null : t(plan.nextRunAt),
    firesSoFar: plan.firesSoFar,
  };
}

describe('on time: a fire that is merely a tick late is not a misfire', () => {
  it.each(['FIRE_ONCE', 'FIRE_ALL', 'SKIP'] as const)('%s fires it normally', (misfire) => {
    const plan = planMisfire(
      minutely,
      at('2026-01-01T10:00:00Z'),
      at('2026-01-01T10:00:00.200Z'),
      7,
      rules({ misfire }),
    );
    expect(view(plan)).toEqual({
      fires: [{ nominal: '10:00:00', late: false }],
      skipped: [],
      next: '10:01:00',
      firesSoFar: 8,
    });
  });

  it('the tolerance edge is inclusive: exactly now − lateToleranceMs is on time, 1 ms older is missed', () => {
    const onEdge = planMisfire(
      minutely,
      at('2026-01-01T10:00:00Z'),
      at('2026-01-01T10:00:01Z'),
      0,
      rules({ misfire: 'SKIP' }),
    );
    expect(onEdge.fires).toHaveLength(1);
    const past = planMisfire(
      minutely,
      at('2026-01-01T10:00:00Z'),
      at('2026-01-01T10:00:01.001Z'),
      0,
      rules({ misfire: 'SKIP' }),
    );
    expect(view(past)).toMatchObject({ fires: [], skipped: ['MISFIRE_SKIP 1 10:00:00..10:00:00'] });
  });

  it('an occurrence not yet due plans nothing', () => {
    const plan = planMisfire(minutely, at('2026-01-01T10:01:00Z'), at('2026-01-01T10:00:59Z'), 3, rules({}));
    expect(view(plan)).toEqual({ fires: [], skipped: [], next: '10:01:00', firesSoFar: 3 });
  });
});

describe('an hour down (09:00 … 10:00 due)', () => {
  const nominal = at('2026-01-01T09:00:00Z');

  it('FIRE_ONCE: one fire for the latest occurrence, standing for all of them', () => {
    expect(
      view(planMisfire(minutely, nominal, at('2026-01-01T10:00:30Z'), 0, rules({ misfire: 'FIRE_ONCE' }))),
    ).toEqual({
      fires: [{ nominal: '10:00:00', late: true, coalesced: '61 09:00:00..10:00:00' }],
      skipped: ['COALESCED 60 09:00:00..09:59:00'],
      next: '10:01:00',
      firesSoFar: 1,
    });
    // The current occurrence is on time: it is the one fire, and it stands for the missed ones.
    expect(
      view(
        planMisfire(minutely, nominal, at('2026-01-01T10:00:00.300Z'), 0, rules({ misfire: 'FIRE_ONCE' })),
      ),
    ).toEqual({
      fires: [{ nominal: '10:00:00', late: false, coalesced: '61 09:00:00..10:00:00' }],
      skipped: ['COALESCED 60 09:00:00..09:59:00'],
      next: '10:01:00',
      firesSoFar: 1,
    });
  });

  it('FIRE_ALL: each missed occurrence, oldest first, up to maxCatchUp; the rest are skipped', () => {
    expect(
      view(
        planMisfire(
          minutely,
          nominal,
          at('2026-01-01T10:00:30Z'),
          0,
          rules({ misfire: 'FIRE_ALL', maxCatchUp: 3 }),
        ),
      ),
    ).toEqual({
      fires: [
        { nominal: '09:00:00', late: true },
        { nominal: '09:01:00', late: true },
        { nominal: '09:02:00', late: true },
      ],
      skipped: ['CATCH_UP_LIMIT 58 09:03:00..10:00:00'],
      next: '10:01:00',
      firesSoFar: 3,
    });
    const all = planMisfire(
      minutely,
      nominal,
      at('2026-01-01T10:00:30Z'),
      0,
      rules({ misfire: 'FIRE_ALL', maxCatchUp: 100 }),
    );
    expect(all.fires).toHaveLength(61);
    expect(all.skipped).toEqual([]);
  });

  it('FIRE_ALL: an on-time occurrence fires besides the catch-up ones', () => {
    const plan = planMisfire(
      minutely,
      nominal,
      at('2026-01-01T10:00:00.300Z'),
      0,
      rules({ misfire: 'FIRE_ALL', maxCatchUp: 2 }),
    );
    expect(view(plan)).toEqual({
      fires: [
        { nominal: '09:00:00', late: true },
        { nominal: '09:01:00', late: true },
        { nominal: '10:00:00', late: false },
      ],
      skipped: ['CATCH_UP_LIMIT 58 09:02:00..09:59:00'],
      next: '10:01:00',
      firesSoFar: 3,
    });
  });

  it('SKIP: none of the missed ones; the on-time one still fires', () => {
    expect(
      view(planMisfire(minutely, nominal, at('2026-01-01T10:00:00.300Z'), 0, rules({ misfire: 'SKIP' }))),
    ).toEqual({
      fires: [{ nominal: '10:00:00', late: false }],
      skipped: ['MISFIRE_SKIP 60 09:00:00..09:59:00'],
      next: '10:01:00',
      firesSoFar: 1,
    });
    expect(
      view(planMisfire(minutely, nominal, at('2026-01-01T10:00:30Z'), 0, rules({ misfire: 'SKIP' }))),
    ).toEqual({
      fires: [],
      skipped: ['MISFIRE_SKIP 61 09:00:00..10:00:00'],
      next: '10:01:00',
      firesSoFar: 0,
    });
  });
});

describe('catch-up window: older occurrences are skipped whatever the policy', () => {
  const nominal = at('2026-01-01T09:00:00Z');
  const now = at('2026-01-01T10:00:30Z');
  const window = 10 * 60_000; // everything before 09:50:30 is too old

  it('FIRE_ALL', () => {
    expect(
      view(planMisfire(minutely, nominal, now, 0, rules({ misfire: 'FIRE_ALL', catchUpWindowMs: window }))),
    ).toMatchObject({
      fires: [
        '09:51:00',
        '09:52:00',
        '09:53:00',
        '09:54:00',
        '09:55:00',
        '09:56:00',
        '09:57:00',
        '09:58:00',
        '09:59:00',
        '10:00:00',
      ].map((n) => ({ nominal: n, late: true })),
      skipped: ['OUTSIDE_CATCH_UP_WINDOW 51 09:00:00..09:50:00'],
    });
  });

  it('FIRE_ONCE', () => {
    expect(
      view(planMisfire(minutely, nominal, now, 0, rules({ misfire: 'FIRE_ONCE', catchUpWindowMs: window }))),
    ).toEqual({
      fires: [{ nominal: '10:00:00', late: true, coalesced: '10 09:51:00..10:00:00' }],
      skipped: ['OUTSIDE_CATCH_UP_WINDOW 51 09:00:00..09:50:00', 'COALESCED 9 09:51:00..09:59:00'],
      next: '10:01:00',
      firesSoFar: 1,
    });
  });

  it('SKIP', () => {
    expect(
      view(planMisfire(minutely, nominal, now, 0, rules({ misfire: 'SKIP', catchUpWindowMs: window })))
        .skipped,
    ).toEqual(['OUTSIDE_CATCH_UP_WINDOW 51 09:00:00..09:50:00', 'MISFIRE_SKIP 10 09:51:00..10:00:00']);
  });

  it('a window of 0 skips every missed occurrence, but never an on-time one', () => {
    const plan = planMisfire(
      minutely,
      nominal,
      at('2026-01-01T10:00:00.300Z'),
      0,
      rules({ misfire: 'FIRE_ALL', catchUpWindowMs: 0 }),
    );
    expect(view(plan)).toMatchObject({
      fires: [{ nominal: '10:00:00', late: false }],
      skipped: ['OUTSIDE_CATCH_UP_WINDOW 60 09:00:00..09:59:00'],
    });
  });
});

describe('huge gaps stay cheap', () => {
  const day0 = at('2026-01-01T00:00:00Z');
  const now = at('2026-01-02T00:00:00.500Z');

  it('per-second interval down for a day: counted exactly, by arithmetic', () => {
    const perSecond: IntervalSchedule = { kind: 'interval', everyMs: 1_000, anchor: day0 };
    const started = process.hrtime.bigint();
    const plan = planMisfire(perSecond, day0, now, 0, rules({ misfire: 'FIRE_ONCE' }));
    const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
    expect(view(plan)).toEqual({
      fires: [
        { nominal: '2026-01-02T00:00:00', late: false, coalesced: '86401 00:00:00..2026-01-02T00:00:00' },
      ],
      skipped: ['COALESCED 86400 00:00:00..23:59:59'],
      next: '2026-01-02T00:00:01',
      firesSoFar: 1,
    });
    expect(elapsedMs).toBeLessThan(20);

    const limited = planMisfire(perSecond, day0, now, 0, rules({ misfire: 'FIRE_ALL', maxCatchUp: 10 }));
    expect(limited.fires).toHaveLength(11);
    expect(view(limited)).toMatchObject({ skipped: ['CATCH_UP_LIMIT 86390 00:00:10..23:59:59'] });
  });

  it('per-second cron down for a day: enumeration is capped and the count reported as a lower bound', () => {
    const perSecond: CronSchedule = {
      kind: 'cron',
      expression: '* * * * * *',
      timeZone: 'UTC',
      dstGap: 'AUTO',
      dstRepeat: 'AUTO',
    };
    const started = process.hrtime.bigint();
    const plan = planMisfire(perSecond, day0, now, 0, rules({ misfire: 'FIRE_ONCE' }));
    const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
    expect(view(plan)).toEqual({
      fires: [
        { nominal: '2026-01-02T00:00:00', late: false, coalesced: '10001+ 00:00:00..2026-01-02T00:00:00' },
      ],
      skipped: ['COALESCED 10000+ 00:00:00..23:59:59'],
      next: '2026-01-02T00:00:01',
      firesSoFar: 1,
    });
    expect(elapsedMs).toBeLessThan(2_000);

    expect(
      view(planMisfire(perSecond, day0, now, 0, rules({ misfire: 'SKIP', enumerationLimit: 50 }))),
    ).toMatchObject({
      fires: [{ nominal: '2026-01-02T00:00:00', late: false }],
      skipped: ['MISFIRE_SKIP 50+ 00:00:00..23:59:59'],
    });
    const catchUp = view(
      planMisfire(perSecond, day0, now, 0, rules({ misfire: 'FIRE_ALL', maxCatchUp: 20 })),
    );
    expect(catchUp.fires).toHaveLength(21);
    expect(catchUp.skipped).toEqual(['CATCH_UP_LIMIT 10000+ 00:00:20..23:59:59']);
    // The enumeration limit also bounds how many catch-up fires one plan may hold.
    const capped = view(
      planMisfire(
        perSecond,
        day0,
        now,
        0,
        rules({ misfire: 'FIRE_ALL', maxCatchUp: 100, enumerationLimit: 50 }),
      ),
    );
    expect(capped.fires.filter((f) => f.late)).toHaveLength(50);
    expect(capped.skipped).toEqual(['CATCH_UP_LIMIT 50+ 00:00:50..23:59:59']);
  });

  it('a small cron backlog is counted exactly', () => {
    const everyFive: CronSchedule = {
      kind: 'cron',
      expression: '*/5 * * * *',
      timeZone: 'UTC',
      dstGap: 'AUTO',
      dstRepeat: 'AUTO',
    };
    expect(
      view(
        planMisfire(
          everyFive,
          at('2026-01-01T09:00:00Z'),
          at('2026-01-01T10:02:00Z'),
          0,
          rules({ misfire: 'SKIP' }),
        ),
      ),
    ).toEqual({
      fires: [],
      skipped: ['MISFIRE_SKIP 13 09:00:00..10:00:00'],
      next: '10:05:00',
      firesSoFar: 0,
    });
  });
});

describe('maxFires and endAt', () => {
  it('FIRE_ALL spends only the remaining fires; the schedule is then exhausted', () => {
    const limited: IntervalSchedule = { ...minutely, maxFires: 3 };
    const plan = planMisfire(
      limited,
      at('2026-01-01T09:00:00Z'),
      at('2026-01-01T09:09:30Z'),
      1,
      rules({ misfire: 'FIRE_ALL' }),
    );
    expect(view(plan)).toEqual({
      fires: [
        { nominal: '09:00:00', late: true },
        { nominal: '09:01:00', late: true },
      ],
      skipped: ['CATCH_UP_LIMIT 8 09:02:00..09:09:00'],
      next: null,
      firesSoFar: 3,
    });
  });

  it('skipped occurrences do not consume maxFires', () => {
    const limited: IntervalSchedule = { ...minutely, maxFires: 3 };
    const plan = planMisfire(
      limited,
      at('2026-01-01T09:00:00Z'),
      at('2026-01-01T09:09:30Z'),
      1,
      rules({ misfire: 'SKIP' }),
    );
    expect(view(plan)).toMatchObject({ fires: [], next: '09:10:00', firesSoFar: 1 });
  });

  it('an exhausted job plans nothing', () => {
    const limited: IntervalSchedule = { ...minutely, maxFires: 3 };
    expect(
      view(planMisfire(limited, at('2026-01-01T09:00:00Z'), at('2026-01-01T09:09:30Z'), 3, rules({}))),
    ).toEqual({
      fires: [],
      skipped: [],
      next: null,
      firesSoFar: 3,
    });
  });

  it('occurrences after endAt do not exist', () => {
    const ending: IntervalSchedule = { ...minutely, endAt: at('2026-01-01T09:03:00Z') };
    const plan = planMisfire(
      ending,
      at('2026-01-01T09:00:00Z'),
      at('2026-01-01T10:00:00Z'),
      0,
      rules({ misfire: 'FIRE_ALL' }),
    );
    expect(view(plan)).toEqual({
      fires: ['09:00:00', '09:01:00', '09:02:00', '09:03:00'].map((nominal) => ({ nominal, late: true })),
      skipped: [],
      next: null,
      firesSoFar: 4,
    });
  });
});

describe('one-shots', () => {
  const once: OnceSchedule = { kind: 'once', at: at('2026-01-01T09:00:00Z') };
  const now = at('2026-01-01T10:00:00Z');

  it.each([
    ['FIRE_ONCE', { fires: [{ nominal: '09:00:00', late: true }], skipped: [], next: null, firesSoFar: 1 }],
    ['FIRE_ALL', { fires: [{ nominal: '09:00:00', late: true }], skipped: [], next: null, firesSoFar: 1 }],
    ['SKIP', { fires: [], skipped: ['MISFIRE_SKIP 1 09:00:00..09:00:00'], next: null, firesSoFar: 0 }],
  ] as const)('missed, with %s', (misfire, expected) => {
    expect(view(planMisfire(once, once.at, now, 0, rules({ misfire })))).toEqual(expected);
  });

  it('outside the catch-up window', () => {
    expect(view(planMisfire(once, once.at, now, 0, rules({ catchUpWindowMs: 60_000 }))).skipped).toEqual([
      'OUTSIDE_CATCH_UP_WINDOW 1 09:00:00..09:00:00',
    ]);
  });

  it('already fired', () => {
    expect(planMisfire(once, once.at, now, 1, rules({})).fires).toEqual([]);
  });
});

describe('the claimed nominal is authoritative', () => {
  it('an off-grid next_run_at is fired, followed by the schedule grid', () => {
    const plan = planMisfire(
      minutely,
      at('2026-01-01T09:00:30Z'),
      at('2026-01-01T09:02:30Z'),
      0,
      rules({ misfire: 'FIRE_ALL' }),
    );
    expect(view(plan)).toMatchObject({
      fires: ['09:00:30', '09:01:00', '09:02:00'].map((nominal) => ({ nominal, late: true })),
      next: '09:03:00',
    });
    const coalesced = planMisfire(
      minutely,
      at('2026-01-01T09:00:30Z'),
      at('2026-01-01T09:02:30Z'),
      0,
      rules({}),
    );
    expect(view(coalesced)).toMatchObject({ skipped: ['COALESCED 2 09:00:30..09:01:00'] });
  });
});

describe('DST', () => {
  it('a night down across the New York fall-back counts both copies of the repeated hour (BOTH)', () => {
    const halfHourly: CronSchedule = {
      kind: 'cron',
      expression: '*/30 * * * *',
      timeZone: 'America/New_York',
      dstGap: 'AUTO',
      dstRepeat: 'AUTO',
    };
    // 00:00 EDT (04:00Z) to 03:00 EST (08:00Z): four real hours, eight half-hours.
    const plan = planMisfire(
      halfHourly,
      at('2026-11-01T04:00:00Z'),
      at('2026-11-01T08:00:30Z'),
      0,
      rules({ misfire: 'SKIP' }),
    );
    expect(plan.skipped).toEqual([
      {
        reason: 'MISFIRE_SKIP',
        firstNominal: at('2026-11-01T04:00:00Z'),
        lastNominal: at('2026-11-01T08:00:00Z'),
        count: 9,
        countIsLowerBound: false,
      },
    ]);
  });
});
