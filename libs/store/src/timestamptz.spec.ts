import { types } from 'pg';
import { parseTimestamptz } from './timestamptz';

// pg's own timestamptz parser (postgres-date), to compare with.
const pgParse = types.getTypeParser(1184, 'text') as (s: string) => Date | number | null;
const viaPg = (s: string) => parseTimestamptz(s, () => 'fallback');

describe('timestamptz text', () => {
  it('parses what PostgreSQL sends as pg does, fraction and zone included', () => {
    let seed = 3;
    const rnd = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % n;
    const two = (v: number) => String(v).padStart(2, '0');
    const zones = ['+00', '-00', '+05:30', '-03', '+14', '-12', '+05:45', '-00:25:21', '+01:00:00'];
    for (let k = 0; k < 5_000; k++) {
      const frac =
        rnd(7) === 0
          ? ''
          : '.' +
            String(rnd(1_000_000))
              .padStart(6, '0')
              .slice(0, 1 + rnd(6));
      const s =
        `${1000 + rnd(9000)}-${two(1 + rnd(12))}-${two(1 + rnd(28))} ` +
        `${two(rnd(24))}:${two(rnd(60))}:${two(rnd(60))}${frac}${zones[rnd(zones.length)]}`;
      const ours = viaPg(s);
      expect(ours).toBeInstanceOf(Date);
      expect([s, (ours as Date).getTime()]).toEqual([s, (pgParse(s) as Date).getTime()]);
    }
  });

  it('keeps milliseconds and drops finer digits', () => {
    expect((viaPg('2026-12-01 13:15:08.543352+00') as Date).toISOString()).toBe('2026-12-01T13:15:08.543Z');
    expect((viaPg('2026-12-01 13:15:08.9+00') as Date).toISOString()).toBe('2026-12-01T13:15:08.900Z');
    expect((viaPg('2026-12-01 13:15:08.999999-01:30') as Date).toISOString()).toBe(
      '2026-12-01T14:45:08.999Z',
    );
  });

  it('leaves every other form to the fallback', () => {
    for (const s of [
      'infinity',
      '-infinity',
      '0044-03-15 12:00:00+00 BC',
      '0099-01-01 00:00:00+00',
      '12026-01-01 00:00:00+00',
      '2026-12-01T13:15:08+00',
      '2026-12-01 13:15:08',
      '2026-12-01 13:15:08+0x',
      '2026-12-01 13:15:08+01:xx',
      '2026-12-01 13:15:08+01:30:',
      '2026-12-01 13:15:08.5Z',
    ])
      expect([s, viaPg(s)]).toEqual([s, 'fallback']);
  });
});
