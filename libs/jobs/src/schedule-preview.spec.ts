import { ValidationError } from '@tickwork/domain';
import { previewSchedule } from './schedule-preview';

const now = new Date('2026-12-02T00:00:00Z');
const base = { now, minIntervalMs: 1_000 };
const feb29 = (zone: string) => ({ kind: 'cron', expression: '0 0 29 2 *', time_zone: zone });

describe('previewSchedule', () => {
  it('lists as many fires as asked for, whole', async () => {
    const p = await previewSchedule(
      { kind: 'interval', every_ms: 60_000, anchor: '2026-12-02T00:00:00Z' },
      {
        ...base,
        count: 3,
      },
    );
    expect(p.fires.map((f) => f.at.toISOString())).toEqual([
      '2026-12-02T00:00:00.000Z',
      '2026-12-02T00:01:00.000Z',
      '2026-12-02T00:02:00.000Z',
    ]);
    expect(p.truncatedBy).toBeNull();
  });

  it('lists both fires of an instant that dst_gap SHIFT gives two occurrences, marking the moved one', async () => {
    const p = await previewSchedule(
      { kind: 'cron', expression: '45 0-3 * * *', time_zone: 'America/New_York', dst_gap: 'SHIFT' },
      {
        now: new Date('2026-03-01T00:00:00Z'),
        minIntervalMs: 1_000,
        from: new Date('2026-03-08T05:00:00Z'),
        count: 4,
      },
    );
    expect(p.fires.map((f) => [f.at.toISOString(), f.localTime, f.shiftedFrom])).toEqual([
      ['2026-03-08T05:45:00.000Z', '2026-03-08T00:45:00-05:00', null],
      ['2026-03-08T06:45:00.000Z', '2026-03-08T01:45:00-05:00', null],
      ['2026-03-08T07:45:00.000Z', '2026-03-08T03:45:00-04:00', '2026-03-08T02:45:00-05:00'],
      ['2026-03-08T07:45:00.000Z', '2026-03-08T03:45:00-04:00', null],
    ]);
  });

  it('a rare cron stops at the 100-year horizon and says so (not ~4,000 years of look-ahead)', async () => {
    const p = await previewSchedule(feb29('Europe/Oslo'), { ...base, count: 1_000, workBudgetMs: 60_000 });
    expect(p.truncatedBy).toBe('HORIZON');
    expect(p.fires).toHaveLength(24); // leap days 2028..2120, without 2100
    expect(p.fires[p.fires.length - 1]!.at.getUTCFullYear()).toBeLessThanOrEqual(2126);
  });

  it('a schedule that ends before the horizon is whole', async () => {
    const p = await previewSchedule(
      { kind: 'interval', every_ms: 60_000, anchor: '2026-12-02T00:00:00Z', max_fires: 5 },
      { ...base, count: 100 },
    );
    expect(p).toMatchObject({ truncatedBy: null });
    expect(p.fires).toHaveLength(5);
    const near = await previewSchedule(
      { kind: 'interval', every_ms: 86_400_000, anchor: '9999-12-29T00:00:00Z' },
      { ...base, count: 100, from: new Date('9999-12-01T00:00:00Z') },
    );
    expect(near.fires).toHaveLength(3);
    expect(near.truncatedBy).toBeNull();
  });

  it('a preview out of its work budget returns what it found, cut by WORK_BUDGET', async () => {
    const p = await previewSchedule(feb29('America/Santiago'), { ...base, count: 1_000, workBudgetMs: 0 });
    expect(p.truncatedBy).toBe('WORK_BUDGET');
    expect(p.fires.length).toBeLessThan(24);
  });

  it('yields to the event loop between slices of its work', async () => {
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 0);
    try {
      const p = await previewSchedule(feb29('Asia/Tehran'), { ...base, count: 1_000, sliceMs: 0.5 });
      expect(p.fires.length).toBeGreaterThan(0);
    } finally {
      clearInterval(ticker);
    }
    expect(ticks).toBeGreaterThan(0);
  });

  it('refuses a from outside the instant range and a count out of bounds, naming the fields', async () => {
    const refused = await previewSchedule(
      { kind: 'interval', every_ms: 60_000 },
      { ...base, count: 5_000, from: new Date('0000-01-01T00:00:00Z') },
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).violations.map((v) => v.field)).toEqual(['count', 'from']);
  });
});
