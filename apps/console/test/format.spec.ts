/**
 * The console's pure formatting: schedules in words, times in two zones, relative times, DST
 * notes on previewed fires, masked secrets, labels. No browser: Intl and URL are Node's.
 */
import {
  cronInWords,
  dstNote,
  durationInWords,
  formatInZone,
  instantInWords,
  labelsText,
  maskTarget,
  maskUrl,
  millisBetween,
  ms,
  parseLabels,
  relative,
  retryInWords,
  scheduleInWords,
  scheduleRaw,
  shortInZone,
} from '../src/format';

describe('cron expressions in words', () => {
  it.each([
    ['0 9 * * MON-FRI', 'at 09:00 on weekdays'],
    ['0 9 * * 1-5', 'at 09:00 on weekdays'],
    ['30 1 * * *', 'at 01:30'],
    ['0 10 * * SAT,SUN', 'at 10:00 on weekends'],
    ['0 8 * * MON,WED,FRI', 'at 08:00 on Monday, Wednesday and Friday'],
    ['0 8 * * TUE-THU', 'at 08:00 Tuesday through Thursday'],
    ['0 0 1 * *', 'at 00:00 on day 1 of the month'],
    ['0 0 L * *', 'at 00:00 on the last day of the month'],
    ['0 6 * JAN,JUL *', 'at 06:00 in January and July'],
    ['0 6 * 3-5 *', 'at 06:00 March through May'],
    ['*/15 * * * *', 'every 15 minutes'],
    ['*/10 9-17 * * MON-FRI', 'every 10 minutes from 09:00 to 17:59 on weekdays'],
    ['0 * * * *', 'every hour, on the hour'],
    ['5 * * * *', 'at minute 5 of every hour'],
    ['0 */6 * * *', 'every 6 hours at minute 0'],
    ['0 9,17 * * *', 'at 09:00 and 17:00'],
    ['* * * * *', 'every minute'],
    ['@daily', 'at 00:00'],
    ['@weekly', 'at 00:00 on Sunday'],
    ['30 0 9 * * *', 'at second 30 at 09:00'],
  ])('%s → %s', (expression, words) => {
    expect(cronInWords(expression)).toBe(words);
  });

  it('gives the expression as written when a field is not understood, rather than misleading words', () => {
    // The API refuses these; the preview must not read them as a schedule meanwhile.
    expect(cronInWords('0 9 * * MONDAY-FRIDAY')).toBe('0 9 * * MONDAY-FRIDAY');
    expect(cronInWords('0 9 * * FOO')).toBe('0 9 * * FOO');
    expect(cronInWords('0 9 * * 8')).toBe('0 9 * * 8');
    expect(cronInWords('0 9 * SMARCH *')).toBe('0 9 * SMARCH *');
    expect(cronInWords('0 9 1W * *')).toBe('0 9 1W * *');
    expect(cronInWords('0 9 * *')).toBe('0 9 * *');
  });
});

describe('schedules in words', () => {
  it('says a cron schedule with its zone, and UTC when it has none', () => {
    expect(scheduleInWords({ kind: 'cron', expression: '0 9 * * MON-FRI', time_zone: 'Europe/London' })).toBe(
      'at 09:00 on weekdays, Europe/London',
    );
    expect(scheduleInWords({ kind: 'cron', expression: '0 9 * * *' })).toBe('at 09:00, UTC');
  });

  it('says an interval in its largest whole unit', () => {
    expect(scheduleInWords({ kind: 'interval', every_ms: 3_600_000 })).toBe('every 1 hour');
    expect(scheduleInWords({ kind: 'interval', every_ms: 90_000 })).toBe('every 90 seconds');
    expect(scheduleInWords({ kind: 'interval', every_ms: 2 * 86_400_000 })).toBe('every 2 days');
  });

  it('says a one-off at its UTC time', () => {
    expect(scheduleInWords({ kind: 'once', at: '2026-12-07T09:00:00Z' })).toBe(
      'once, at Mon 7 Dec 2026, 09:00:00 UTC',
    );
  });

  it('gives the raw form for the table', () => {
    expect(scheduleRaw({ kind: 'cron', expression: '0 9 * * *' })).toBe('0 9 * * *');
    expect(scheduleRaw({ kind: 'interval', every_ms: 60_000 })).toBe('every_ms 60000');
    expect(scheduleRaw({ kind: 'once', at: '2026-12-07T09:00:00Z' })).toBe('2026-12-07T09:00:00Z');
  });
});

describe('durations', () => {
  it.each([
    [250, '250 ms'],
    [1000, '1 second'],
    [1500, '1.5 s'],
    [60_000, '1 minute'],
    [600_000, '10 minutes'],
    [86_400_000, '1 day'],
  ])('%d ms → %s', (v, words) => {
    expect(durationInWords(v)).toBe(words);
  });

  it('prints measured milliseconds compactly, and a dash for none', () => {
    expect(ms(850)).toBe('850 ms');
    expect(ms(1234)).toBe('1.2 s');
    expect(ms(12_345)).toBe('12 s');
    expect(ms(-40)).toBe('-40 ms');
    expect(ms(null)).toBe('—');
    expect(ms(undefined)).toBe('—');
  });

  it('measures between two times, or null when one is missing', () => {
    expect(millisBetween('2026-12-03T09:00:00.000Z', '2026-12-03T09:00:00.250Z')).toBe(250);
    expect(millisBetween('2026-12-03T09:00:00.000Z', null)).toBeNull();
    expect(millisBetween(undefined, '2026-12-03T09:00:00.000Z')).toBeNull();
  });
});

describe('times in zones', () => {
  const at = '2026-12-03T09:48:50.793Z';

  it('formats an instant in a zone on the 24-hour clock with the year', () => {
    expect(formatInZone(at, 'UTC')).toBe('Thu 3 Dec 2026, 09:48:50');
    expect(formatInZone(at, 'America/New_York')).toBe('Thu 3 Dec 2026, 04:48:50');
    expect(formatInZone(at, 'Asia/Tokyo', false)).toBe('Thu 3 Dec 2026, 18:48');
    expect(formatInZone('2026-12-03T23:30:00Z', 'Asia/Tokyo', false)).toBe('Fri 4 Dec 2026, 08:30');
  });

  it('keeps what it cannot format as it came', () => {
    expect(formatInZone('not a time', 'UTC')).toBe('not a time');
    // An unknown zone: the instant in ISO form, never an exception in a view.
    expect(formatInZone(at, 'Mars/Olympus_Mons')).toBe(at);
  });

  it('names the zone in prose, never printing a raw ISO string', () => {
    expect(instantInWords(at, 'Europe/London')).toBe('Thu 3 Dec 2026, 09:48:50 Europe/London');
    expect(instantInWords(at, 'America/New_York')).toBe('Thu 3 Dec 2026, 04:48:50 America/New_York');
  });

  it('gives the short form with the weekday, which tells when the dates differ', () => {
    expect(shortInZone('2026-12-04T09:00:00Z', 'America/New_York')).toBe('Fri 04:00');
    expect(shortInZone('2026-12-04T02:00:00Z', 'America/New_York')).toBe('Thu 21:00');
  });
});

describe('relative times', () => {
  const now = Date.parse('2026-12-03T09:00:00Z');
  it.each([
    ['2026-12-03T09:00:00.400Z', 'just now'],
    ['2026-12-03T09:00:05Z', 'in 5 s'],
    ['2026-12-03T08:59:55Z', '5 s ago'],
    ['2026-12-03T09:12:30Z', 'in 12 min'],
    ['2026-12-03T12:20:00Z', 'in 3 h 20 min'],
    ['2026-12-03T07:00:00Z', '2 h ago'],
    ['2026-12-04T08:59:00Z', 'in 23 h 59 min'],
    ['2026-12-07T13:00:00Z', 'in 4 d 4 h'],
    ['2026-11-26T09:00:00Z', '7 d ago'],
  ])('%s → %s', (iso, words) => {
    expect(relative(iso, now)).toBe(words);
  });

  it('says nothing for a time it cannot read', () => {
    expect(relative('soon', now)).toBe('');
  });
});

describe('DST notes on previewed fires', () => {
  it('marks a fire moved out of the spring-forward gap, with the wall time that did not exist', () => {
    const fire = {
      at: '2027-03-28T01:30:00.000Z',
      local_time: '2027-03-28T02:30:00+01:00',
      time_zone: 'Europe/London',
      shifted_from: '2027-03-28T01:30:00',
    };
    expect(dstNote(fire, 'AUTO')).toBe('shifted by the spring-forward gap (01:30 does not exist that night)');
  });

  // 2026-10-25 in London: 01:30 BST is 00:30Z, and 01:30 GMT (the second 01:30) is 01:30Z.
  const first = {
    at: '2026-10-25T00:30:00.000Z',
    local_time: '2026-10-25T01:30:00+01:00',
    time_zone: 'Europe/London',
  };
  const second = {
    at: '2026-10-25T01:30:00.000Z',
    local_time: '2026-10-25T01:30:00+00:00',
    time_zone: 'Europe/London',
  };

  it('marks the first of a repeated fall-back wall time, and which of the two fire by the policy', () => {
    expect(dstNote(first, 'AUTO')).toBe(
      'fall-back: 01:30 happens twice; this is the first, second 01:30 skipped',
    );
    expect(dstNote(first, undefined)).toBe(
      'fall-back: 01:30 happens twice; this is the first, second 01:30 skipped',
    );
    expect(dstNote(first, 'BOTH')).toBe('fall-back: 01:30 happens twice; this is the first, both fire');
  });

  it('marks the second one, as it fires under LAST or BOTH', () => {
    expect(dstNote(second, 'LAST')).toBe(
      'fall-back: 01:30 happens twice; first 01:30 skipped, the second fires',
    );
    expect(dstNote(second, 'BOTH')).toBe('fall-back: 01:30 happens twice; this is the second, both fire');
  });

  it('says nothing on an ordinary night', () => {
    const fire = {
      at: '2026-12-03T09:00:00.000Z',
      local_time: '2026-12-03T09:00:00+00:00',
      time_zone: 'Europe/London',
    };
    expect(dstNote(fire, 'AUTO')).toBeNull();
  });

  it('knows a half-hour shift (Lord Howe Island) as well as an hour', () => {
    // 2026-04-05 02:00 LHDT (+11) falls back to 01:30 LHST (+10:30): 01:45 happens twice.
    const fire = {
      at: '2026-04-04T14:45:00.000Z',
      local_time: '2026-04-05T01:45:00+11:00',
      time_zone: 'Australia/Lord_Howe',
    };
    expect(dstNote(fire, 'AUTO')).toBe(
      'fall-back: 01:45 happens twice; this is the first, second 01:45 skipped',
    );
  });
});

describe('secrets are masked before they are shown', () => {
  it('masks secret-looking headers and keeps the others', () => {
    const masked = maskTarget({
      type: 'webhook',
      url: 'https://example.com/hook',
      headers: { Authorization: 'Bearer abc', 'X-Api-Key': 'k', 'Content-Type': 'application/json' },
    });
    expect(masked.headers).toEqual({
      Authorization: '••••••',
      'X-Api-Key': '••••••',
      'Content-Type': 'application/json',
    });
  });

  it('masks a URL password and secret query values', () => {
    expect(maskUrl('https://user:hunter2@example.com/hook?token=abc&page=2')).toBe(
      'https://user:%E2%80%A2%E2%80%A2%E2%80%A2%E2%80%A2%E2%80%A2%E2%80%A2@example.com/hook?token=%E2%80%A2%E2%80%A2%E2%80%A2%E2%80%A2%E2%80%A2%E2%80%A2&page=2',
    );
    expect(maskUrl('not a url')).toBe('not a url');
  });
});

describe('retry policies in words', () => {
  it('says attempts and backoff', () => {
    expect(
      retryInWords({
        max_attempts: 5,
        initial_backoff_ms: 1000,
        multiplier: 2,
        max_backoff_ms: 600_000,
        max_event_age_ms: 86_400_000,
      }),
    ).toBe('5 attempts, backoff 1 second ×2 up to 10 minutes, given up after 1 day');
    expect(retryInWords({ max_attempts: 1, initial_backoff_ms: 1000 })).toBe('no retries (1 attempt)');
    expect(retryInWords(undefined)).toBe('default');
    expect(retryInWords({})).toBe('default');
  });
});

describe('labels', () => {
  it('prints and parses key=value lists', () => {
    expect(labelsText({ team: 'data', env: 'prod' })).toBe('team=data, env=prod');
    expect(parseLabels(' team=data , env=prod,')).toEqual({ team: 'data', env: 'prod' });
    expect(parseLabels('')).toEqual({});
  });

  it('names the term that is not key=value', () => {
    expect(parseLabels('team=data, oops')).toEqual({ error: '"oops" must be key=value' });
    expect(parseLabels('=x')).toEqual({ error: '"=x" must be key=value' });
  });
});
