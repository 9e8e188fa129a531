import { rruleInWords, scheduleInWords } from '../src/format';

describe('rrule schedules in words', () => {
  it.each([
    ['FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0', 'last Friday of each month at 17:00'],
    ['FREQ=MONTHLY;INTERVAL=3;BYDAY=2MO;BYHOUR=9;BYMINUTE=30', 'second Monday of every 3 months at 09:30'],
    ['FREQ=SECONDLY;INTERVAL=2', 'every 2 seconds'],
    [
      'FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=8;BYMINUTE=0;COUNT=10',
      'every week on Monday, Wednesday at 08:00, 10 times',
    ],
    ['FREQ=DAILY;BYHOUR=6;BYMINUTE=15', 'every day at 06:15'],
    // Shapes it does not put in words are shown as written.
    ['FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=-1', 'FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=-1'],
    ['FREQ=MONTHLY;BYDAY=MO,-1FR', 'FREQ=MONTHLY;BYDAY=MO,-1FR'],
  ])('%s → %s', (rule, words) => {
    expect(rruleInWords(rule)).toBe(words);
  });

  it('adds the zone', () => {
    expect(
      scheduleInWords({
        kind: 'rrule',
        rule: 'FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0',
        dtstart: '2026-01-01T00:00:00',
        time_zone: 'Europe/London',
      }),
    ).toBe('last Friday of each month at 17:00, Europe/London');
  });
});
