/**
 * Hot-path budget: the scheduler computes a next fire for ~10k jobs/s, so one call must stay well under 20 µs.
 * Measured inside Jest, whose vm sandbox makes every global lookup slow (plain Node is ~5-10x faster);
 * the bound therefore catches algorithmic regressions (minute-by-minute scanning), not micro-costs.
 */
import { nextFireAfter } from './occurrences';
import type { Schedule } from './schedule';

const cron = (expression: string, timeZone: string): Schedule => ({
  kind: 'cron',
  expression,
  timeZone,
  dstGap: 'AUTO',
  dstRepeat: 'AUTO',
});

/** Mean µs per call over `calls` calls, asking from instants spread over ~6 weeks (many segments, both DST changes). */
function microsPerCall(schedule: Schedule, calls: number): number {
  const base = Date.parse('2026-02-20T00:00:00Z');
  const afters = Array.from({ length: 1_000 }, (_, i) => new Date(base + i * 3_600_000 + (i % 60) * 1_000));
  for (const after of afters) nextFireAfter(schedule, after); // warm caches (zone years, compiled expression)
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) nextFireAfter(schedule, afters[i % afters.length] as Date);
  return Number(process.hrtime.bigint() - started) / 1_000 / calls;
}

describe('nextFireAfter cost', () => {
  it.each<[string, Schedule]>([
    ['*/15 * * * * in America/New_York', cron('*/15 * * * *', 'America/New_York')],
    ['0 9 * * MON-FRI in Europe/London', cron('0 9 * * MON-FRI', 'Europe/London')],
    ['30 2 * * * in America/New_York', cron('30 2 * * *', 'America/New_York')],
    ['*/5 * * * * * in UTC', cron('*/5 * * * * *', 'UTC')],
    ['0 0 L * * in Asia/Kathmandu', cron('0 0 L * *', 'Asia/Kathmandu')],
    ['0 30 9 ? * MON#2 in Australia/Lord_Howe', cron('0 30 9 ? * MON#2', 'Australia/Lord_Howe')],
    ['0 0 29 2 * in America/New_York (years apart)', cron('0 0 29 2 *', 'America/New_York')],
    [
      'interval every minute',
      { kind: 'interval', everyMs: 60_000, anchor: new Date('2026-01-01T00:00:00Z') },
    ],
  ])('%s stays under 20 µs per call', (_label, schedule) => {
    expect(microsPerCall(schedule, 20_000)).toBeLessThan(20);
  });
});
