import { compileCron, parseCron, usesHashToken } from './cron-expression';
import { nextFireAfter, previewFires } from './occurrences';
import { parseSchedule } from './parse-schedule';
import { scheduleFromWire } from '../job-wire';

const ids = Array.from({ length: 200 }, (_, i) => `job-${i}`);
const fieldsOf = (expression: string, seed: string) => compileCron(expression, seed).fields;

describe('the H token (Jenkins-style hashed values)', () => {
  it('places H 9 * * * at one minute of 9 o clock, the same for a job every time', () => {
    const a = fieldsOf('H 9 * * *', 'nightly-report');
    // A fresh parse (no cache) lands on the same minute: the value is a function of the job id.
    const fresh = parseCron('H 9 * * *', 'nightly-report');
    if (!fresh.ok) throw new Error(fresh.message);
    expect(fresh.cron.fields).toEqual(a);
    expect(fieldsOf('H 9 * * *', 'another-job')).toBeDefined();
    expect(a.hour).toBe('9');
    expect(Number(a.minute)).toBeGreaterThanOrEqual(0);
    expect(Number(a.minute)).toBeLessThanOrEqual(59);
  });

  it('spreads a herd of jobs over the minutes instead of stacking them on one', () => {
    const minutes = new Map<string, number>();
    for (const id of ids) {
      const m = fieldsOf('H * * * *', id).minute;
      minutes.set(m, (minutes.get(m) ?? 0) + 1);
    }
    // 200 jobs over 60 minutes: a uniform hash leaves few minutes empty and none crowded.
    expect(minutes.size).toBeGreaterThan(45);
    expect(Math.max(...minutes.values())).toBeLessThan(12);
  });

  it('H/15 is every 15 minutes from a hashed start below 15', () => {
    for (const id of ids.slice(0, 30)) {
      const cron = compileCron('H/15 * * * *', id);
      const start = Number(cron.fields.minute.split('-')[0]);
      expect(start).toBeGreaterThanOrEqual(0);
      expect(start).toBeLessThan(15);
      expect(cron.fields.minute).toBe(`${start}-59/15`);
      expect(cron.minimumSpacingMs()).toBe(15 * 60_000);
      const fires = previewFires(
        {
          kind: 'cron',
          expression: 'H/15 * * * *',
          timeZone: 'UTC',
          dstGap: 'AUTO',
          dstRepeat: 'AUTO',
          hashSeed: id,
        },
        new Date('2026-05-01T00:00:00Z'),
        4,
      );
      expect(fires.map((f) => f.getUTCMinutes())).toEqual([start, start + 15, start + 30, start + 45]);
    }
  });

  it('H(0-29) picks a value in the range; H(0-29)/10 steps through it', () => {
    for (const id of ids) {
      const m = Number(fieldsOf('H(0-29) 9 * * *', id).minute);
      expect(m).toBeGreaterThanOrEqual(0);
      expect(m).toBeLessThanOrEqual(29);
      const stepped = fieldsOf('H(0-29)/10 * * * *', id).minute;
      expect(stepped).toMatch(/^\d-29\/10$/);
    }
    expect(new Set(ids.map((id) => fieldsOf('H(0-29) 9 * * *', id).minute)).size).toBeGreaterThan(25);
  });

  it('a hashed day of the month stays within 1-28, so every month has it', () => {
    for (const id of ids) {
      const d = Number(fieldsOf('0 0 H * *', id).dayOfMonth);
      expect(d).toBeGreaterThanOrEqual(1);
      expect(d).toBeLessThanOrEqual(28);
    }
  });

  it('hashes each field apart: hour and minute are not the same draw', () => {
    const pairs = ids.map((id) => fieldsOf('H H * * *', id));
    expect(pairs.filter((f) => f.minute === f.hour).length).toBeLessThan(20);
    for (const f of pairs) expect(Number(f.hour)).toBeLessThanOrEqual(23);
  });

  it('uses H in a 6-field expression, in lists and next to names (THU is not an H)', () => {
    expect(parseCron('H H * * * *', 'a')).toMatchObject({ ok: true });
    expect(fieldsOf('H,30 9 * * THU', 'a').dayOfWeek).toBe('THU');
    expect(fieldsOf('0 9 * * H', 'a').dayOfWeek).toMatch(/^[0-6]$/);
    expect(usesHashToken('0 9 * * THU')).toBe(false);
    expect(usesHashToken('h 9 * * *')).toBe(true);
    expect(usesHashToken('0 H(0-5) * * *')).toBe(true);
    expect(compileCron('H 9 * * *', 'a').resolvedExpression).toBe(
      `${fieldsOf('H 9 * * *', 'a').minute} 9 * * *`,
    );
  });

  it('refuses malformed H forms, naming the field', () => {
    expect(parseCron('H(30-10) * * * *')).toEqual({
      ok: false,
      message: expect.stringContaining('minute field'),
    });
    expect(parseCron('H(0-99) * * * *')).toEqual({
      ok: false,
      message: expect.stringContaining('out of range'),
    });
    expect(parseCron('H/0 * * * *')).toEqual({ ok: false, message: expect.stringContaining('step 0') });
    expect(parseCron('H/61 * * * *')).toEqual({ ok: false, message: expect.stringContaining('step 61') });
    expect(parseCron('1H * * * *')).toMatchObject({ ok: false });
    expect(parseCron('HH * * * *')).toMatchObject({ ok: false });
    expect(parseCron('H(1-5 * * * *')).toMatchObject({ ok: false });
  });

  it('keeps H/n hours following real time across DST like */n', () => {
    expect(compileCron('0 H/2 * * *', 'a').hourFollowsRealTime).toBe(true);
    expect(compileCron('0 H * * *', 'a').hourFollowsRealTime).toBe(false);
  });

  it('places H per job in schedules parsed for a job and read back from the store', () => {
    const now = new Date('2026-05-01T00:00:00Z');
    const raw = { kind: 'cron', expression: 'H 9 * * *', time_zone: 'Europe/London' };
    const parsed = parseSchedule(raw, { minIntervalMs: 1000, now, hashSeed: 'nightly-report' });
    if (!parsed.ok) throw new Error('expected a schedule');
    expect(parsed.schedule).toMatchObject({ hashSeed: 'nightly-report' });
    const stored = scheduleFromWire({ ...raw, dst_gap: 'AUTO', dst_repeat: 'AUTO' }, 'nightly-report');
    expect(nextFireAfter(stored, now)).toEqual(nextFireAfter(parsed.schedule, now));
    const minute = Number(fieldsOf('H 9 * * *', 'nightly-report').minute);
    // 09:mm in London in May is 08:mm UTC.
    expect(nextFireAfter(stored, now)).toEqual(new Date(Date.UTC(2026, 4, 1, 8, minute)));
    // No seed for a plain expression: the schedule is unchanged.
    expect(scheduleFromWire({ ...raw, expression: '0 9 * * *' }, 'x')).not.toHaveProperty('hashSeed');
  });
});
