import { nextFireAfter } from './occurrences';
import type { CronSchedule } from './schedule';
const cron = (expression: string, timeZone: string): CronSchedule => ({ kind: 'cron', expression, timeZone, dstGap: 'AUTO', dstRepeat: 'AUTO' });
test('scratch', () => {
  for (const [e, z] of [['*/15 * * * *','America/New_York'],['0 9 * * MON-FRI','Europe/London'],['0 0 29 2 *','America/New_York'],['*/5 * * * * *','UTC']] as const) {
    const s = cron(e, z); const t = new Date('2026-01-01T00:00:00Z').getTime();
    for (let i = 0; i < 2000; i++) nextFireAfter(s, new Date(t + (i % 1000) * 3600000));
    const N = 100000; const st = process.hrtime.bigint();
    for (let i = 0; i < N; i++) nextFireAfter(s, new Date(t + (i % 1000) * 3600000));
    console.log(e, z, Number(process.hrtime.bigint() - st) / N);
  }
});
