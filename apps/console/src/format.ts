/** Pure formatting for the console: schedules in words, times in two zones, relative times, masked secrets. */
import type { Json, Schedule } from './api';

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAY_ABBR = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const MONTH_ABBR = MONTHS.map((m) => m.slice(0, 3).toUpperCase());

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const pad = (n: number): string => String(n).padStart(2, '0');
const isNum = (s: string): boolean => /^\d+$/.test(s);

/** A day-of-week field value as a name ("MON", "1", "7" → Monday); null when it is not one. */
function dayName(s: string): string | null {
  const i = isNum(s) ? (Number(s) <= 7 ? Number(s) % 7 : -1) : DAY_ABBR.indexOf(s.toUpperCase());
  return DAYS[i] ?? null;
}

/** A month field value as a name ("JAN", "1" → January); null when it is not one. */
function monthName(s: string): string | null {
  const i = isNum(s) ? Number(s) - 1 : MONTH_ABBR.indexOf(s.toUpperCase());
  return MONTHS[i] ?? null;
}

/** Names for every item, or null when one is not understood (the words would mislead). */
function allNames(items: string[], name: (s: string) => string | null): string[] | null {
  const names = items.map(name);
  return names.every((n): n is string => n !== null) ? names : null;
}

function joinWords(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

// The describe* functions return '' for "every", and null for what they do not understand.
function describeDays(dow: string): string | null {
  const d = dow.toUpperCase();
  if (d === '*' || d === '?') return '';
  if (['MON-FRI', '1-5'].includes(d)) return 'on weekdays';
  if (['SAT,SUN', 'SUN,SAT', '0,6', '6,0', '6,7'].includes(d)) return 'on weekends';
  const range = /^(\w+)-(\w+)$/.exec(d);
  if (range) {
    const names = allNames([range[1]!, range[2]!], dayName);
    return names ? `${names[0]} through ${names[1]}` : null;
  }
  const names = allNames(d.split(','), dayName);
  return names ? `on ${joinWords(names)}` : null;
}

function describeDom(dom: string): string | null {
  if (dom === '*' || dom === '?') return '';
  if (dom.toUpperCase() === 'L') return 'on the last day of the month';
  const step = /^\*\/(\d+)$/.exec(dom);
  if (step) return `every ${step[1]} days`;
  if (!/^\d+(,\d+)*$/.test(dom)) return null;
  return `on day ${joinWords(dom.split(','))} of the month`;
}

function describeMonth(month: string): string | null {
  if (month === '*' || month === '?') return '';
  const range = /^(\w+)-(\w+)$/.exec(month);
  if (range) {
    const names = allNames([range[1]!, range[2]!], monthName);
    return names ? `${names[0]} through ${names[1]}` : null;
  }
  const names = allNames(month.split(','), monthName);
  return names ? `in ${joinWords(names)}` : null;
}

/** Jenkins-style H: a value the server picks from the job id, the same every time for the job. */
function describeHashed(minute: string, hour: string): string | undefined {
  const stable = 'picked per job (H)';
  const minuteStep = /^H(?:\(\d+-\d+\))?\/(\d+)$/.exec(minute);
  if (minuteStep && hour === '*') return `every ${minuteStep[1]} minutes, from a minute ${stable}`;
  if (/^H(\(\d+-\d+\))?$/.test(minute)) {
    const within = minute.length > 1 ? ` within minutes ${minute.slice(2, -1)}` : '';
    if (isNum(hour)) return `once in the ${pad(Number(hour))}:00 hour, at a minute ${stable}${within}`;
    if (hour === '*') return `every hour, at a minute ${stable}${within}`;
    if (hour === 'H') return `once a day, at a time ${stable}`;
  }
  if (isNum(minute) && hour === 'H') return `once a day at minute ${minute} of an hour ${stable}`;
  return undefined;
}

function describeTime(minute: string, hour: string): string {
  const hashed = describeHashed(minute.toUpperCase(), hour.toUpperCase());
  if (hashed !== undefined) return hashed;
  if (isNum(minute) && isNum(hour)) return `at ${pad(Number(hour))}:${pad(Number(minute))}`;
  if (isNum(minute) && /^\d+(,\d+)+$/.test(hour))
    return `at ${joinWords(hour.split(',').map((h) => `${pad(Number(h))}:${pad(Number(minute))}`))}`;
  const minuteStep = /^\*\/(\d+)$/.exec(minute);
  const hourRange = /^(\d+)-(\d+)$/.exec(hour);
  if (minute === '*' && hour === '*') return 'every minute';
  if (minuteStep && hour === '*') return `every ${minuteStep[1]} minutes`;
  if (minuteStep && hourRange)
    return `every ${minuteStep[1]} minutes from ${pad(Number(hourRange[1]))}:00 to ${pad(Number(hourRange[2]))}:59`;
  if (minute === '0' && hour === '*') return 'every hour, on the hour';
  if (isNum(minute) && hour === '*') return `at minute ${minute} of every hour`;
  const hourStep = /^\*\/(\d+)$/.exec(hour);
  if (isNum(minute) && hourStep) return `every ${hourStep[1]} hours at minute ${minute}`;
  if (isNum(minute) && hourRange)
    return `every hour from ${pad(Number(hourRange[1]))}:${pad(Number(minute))} to ${pad(Number(hourRange[2]))}:${pad(Number(minute))}`;
  return `at minute ${minute}, hour ${hour}`;
}

/** A cron expression in words, e.g. "at 09:00 on weekdays"; the raw expression when any field is not understood. */
export function cronInWords(expression: string): string {
  const expr = MACROS[expression.trim().toLowerCase()] ?? expression.trim();
  let fields = expr.split(/\s+/);
  let seconds = '';
  if (fields.length === 6) {
    seconds = fields[0]!;
    fields = fields.slice(1);
  }
  if (fields.length !== 5) return expression;
  const [minute, hour, dom, month, dow] = fields as [string, string, string, string, string];
  const parts = [describeTime(minute, hour), describeDom(dom), describeDays(dow), describeMonth(month)];
  // A field these words do not understand (a typo, a form they do not cover): the expression as written.
  if (parts.some((p) => p === null)) return expression;
  if (seconds && seconds !== '0') parts.unshift(`at second ${seconds}`);
  return parts.filter(Boolean).join(' ');
}

/** A duration in the largest sensible unit: "5 minutes", "1 day", "250 ms". */
export function durationInWords(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  for (const [size, name] of units) {
    if (ms >= size && ms % size === 0) {
      const n = ms / size;
      return `${n} ${name}${n === 1 ? '' : 's'}`;
    }
  }
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}

/** A schedule in words, with its zone: "at 09:00 on weekdays, Europe/London". */
export function scheduleInWords(s: Schedule): string {
  switch (s.kind) {
    case 'cron':
      return `${cronInWords(s.expression ?? '')}, ${s.time_zone ?? 'UTC'}`;
    case 'interval':
      return `every ${durationInWords(s.every_ms ?? 0)}`;
    case 'once':
      return `once, at ${s.at ? formatInZone(s.at, 'UTC') : '?'} UTC`;
    case 'rrule':
      return `${rruleInWords(s.rule ?? '')}, ${s.time_zone ?? 'UTC'}`;
  }
}

const ORDINALS: Record<string, string> = {
  '1': 'first',
  '2': 'second',
  '3': 'third',
  '4': 'fourth',
  '5': 'fifth',
  '-1': 'last',
  '-2': 'second-to-last',
};
const WEEKDAY_NAMES: Record<string, string> = {
  MO: 'Monday',
  TU: 'Tuesday',
  WE: 'Wednesday',
  TH: 'Thursday',
  FR: 'Friday',
  SA: 'Saturday',
  SU: 'Sunday',
};

/**
 * A recurrence rule in words for the common shapes ("last Friday of each month at 17:00", "every 2 seconds");
 * the raw rule when it is not one of them.
 */
export function rruleInWords(rule: string): string {
  const parts = new Map(
    rule
      .toUpperCase()
      .replace(/^RRULE:/, '')
      .split(';')
      .map((p) => p.split('=') as [string, string]),
  );
  const freq = parts.get('FREQ');
  const interval = Number(parts.get('INTERVAL') ?? '1');
  const known = ['FREQ', 'INTERVAL', 'BYDAY', 'BYHOUR', 'BYMINUTE', 'BYSECOND', 'COUNT', 'UNTIL', 'WKST'];
  if (freq === undefined || [...parts.keys()].some((k) => !known.includes(k))) return rule;
  const hours = parts.get('BYHOUR')?.split(',');
  const minutes = parts.get('BYMINUTE')?.split(',') ?? ['0'];
  const at =
    hours !== undefined && hours.length === 1 && minutes.length === 1
      ? ` at ${hours[0]!.padStart(2, '0')}:${minutes[0]!.padStart(2, '0')}`
      : hours !== undefined
        ? ` at hours ${hours.join(', ')}`
        : '';
  const days = parts.get('BYDAY')?.split(',');
  const tail =
    (parts.has('COUNT') ? `, ${parts.get('COUNT')} times` : '') +
    (parts.has('UNTIL') ? ` until ${parts.get('UNTIL')}` : '');
  const unit: Record<string, string> = {
    SECONDLY: 'second',
    MINUTELY: 'minute',
    HOURLY: 'hour',
    DAILY: 'day',
    WEEKLY: 'week',
    MONTHLY: 'month',
    YEARLY: 'year',
  };
  const every = interval === 1 ? `every ${unit[freq] ?? freq}` : `every ${interval} ${unit[freq] ?? freq}s`;
  if (freq === 'MONTHLY' && days?.length === 1) {
    const m = /^([+-]?\d)?([A-Z]{2})$/.exec(days[0]!);
    const ordinal = m?.[1] === undefined ? undefined : ORDINALS[m[1].replace('+', '')];
    const name = m ? WEEKDAY_NAMES[m[2]!] : undefined;
    if (ordinal && name)
      return `${ordinal} ${name} of ${interval === 1 ? 'each month' : `every ${interval} months`}${at}${tail}`;
  }
  if ((freq === 'WEEKLY' || freq === 'DAILY') && days !== undefined && days.every((d) => WEEKDAY_NAMES[d])) {
    return `${every} on ${days.map((d) => WEEKDAY_NAMES[d]).join(', ')}${at}${tail}`;
  }
  if (days !== undefined) return rule;
  return `${every}${at}${tail}`;
}

/** The raw form of a schedule, for the table's second line. */
export function scheduleRaw(s: Schedule): string {
  switch (s.kind) {
    case 'cron':
      return s.expression ?? '';
    case 'interval':
      return `every_ms ${s.every_ms ?? '?'}`;
    case 'once':
      return s.at ?? '';
    case 'rrule':
      return `${s.rule ?? ''} from ${s.dtstart ?? '?'}`;
  }
}

/** The named parts of an instant in a zone (the same on every ICU version, unlike its joined form). */
function partsInZone(d: Date, timeZone: string, opts: Intl.DateTimeFormatOptions): Record<string, string> {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone, hourCycle: 'h23', ...opts }).formatToParts(d);
  return Object.fromEntries(parts.map((p) => [p.type, p.value]));
}

/** "Mon 7 Dec 2026, 09:00:00" in a zone (24-hour clock, no ambiguity about the year). */
export function formatInZone(iso: string, timeZone: string, withSeconds = true): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  try {
    const p = partsInZone(d, timeZone, {
      weekday: 'short',
      day: 'numeric',
      month: 'short',
      year: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      ...(withSeconds ? { second: '2-digit' } : {}),
    });
    const time = `${p.hour}:${p.minute}${withSeconds ? `:${p.second}` : ''}`;
    return `${p.weekday} ${p.day} ${p.month} ${p.year}, ${time}`;
  } catch {
    return d.toISOString();
  }
}

/** "Thu 04:00" in a zone: the weekday tells when the other zone's date differs. */
export function shortInZone(iso: string, timeZone: string): string {
  try {
    const p = partsInZone(new Date(iso), timeZone, { weekday: 'short', hour: '2-digit', minute: '2-digit' });
    return `${p.weekday} ${p.hour}:${p.minute}`;
  } catch {
    return iso;
  }
}

/** An instant for prose ("Thu 3 Dec 2026, 09:48:50 America/New_York"): never a raw ISO string. */
export function instantInWords(iso: string, timeZone: string): string {
  const text = formatInZone(iso, timeZone);
  return text === iso ? iso : `${text} ${timeZone}`;
}

/** The viewer's own zone. */
export function viewerZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** "in 3 h 20 min", "5 s ago". */
export function relative(iso: string, now = Date.now()): string {
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return '';
  const diff = t - now;
  const abs = Math.abs(diff);
  let text: string;
  if (abs < 1000) return 'just now';
  if (abs < 60_000) text = `${Math.round(abs / 1000)} s`;
  else if (abs < 3_600_000) text = `${Math.floor(abs / 60_000)} min`;
  else if (abs < 86_400_000) {
    const h = Math.floor(abs / 3_600_000);
    const m = Math.floor((abs % 3_600_000) / 60_000);
    text = m ? `${h} h ${m} min` : `${h} h`;
  } else {
    const d = Math.floor(abs / 86_400_000);
    const h = Math.floor((abs % 86_400_000) / 3_600_000);
    text = h ? `${d} d ${h} h` : `${d} d`;
  }
  return diff > 0 ? `in ${text}` : `${text} ago`;
}

/** Milliseconds between two ISO times, or null when either is missing. */
export function millisBetween(from: string | null | undefined, to: string | null | undefined): number | null {
  if (!from || !to) return null;
  return new Date(to).getTime() - new Date(from).getTime();
}

/** "1.2 s", "850 ms". */
export function ms(v: number | null | undefined): string {
  if (v === null || v === undefined) return '—';
  if (Math.abs(v) >= 10_000) return `${(v / 1000).toFixed(0)} s`;
  if (Math.abs(v) >= 1000) return `${(v / 1000).toFixed(1)} s`;
  return `${Math.round(v)} ms`;
}

const SECRET_NAME = /auth|token|secret|password|passwd|key|signature|cookie|credential/i;

/** A target with secret-looking header values, URL credentials and secret query values masked. */
export function maskTarget(target: { [k: string]: Json }): { [k: string]: Json } {
  const out: { [k: string]: Json } = { ...target };
  const headers = target.headers;
  if (headers && typeof headers === 'object' && !Array.isArray(headers)) {
    out.headers = Object.fromEntries(
      Object.entries(headers).map(([k, v]) => [k, SECRET_NAME.test(k) ? '••••••' : v]),
    );
  }
  if (typeof target.url === 'string') out.url = maskUrl(target.url);
  return out;
}

/** A URL with its password and secret-looking query values replaced by dots. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '••••••';
    for (const k of [...u.searchParams.keys()]) if (SECRET_NAME.test(k)) u.searchParams.set(k, '••••••');
    return u.toString();
  } catch {
    return url;
  }
}

/**
 * What a DST transition did to a previewed fire: shifted out of a spring-forward gap, or a wall
 * time that happens twice on a fall-back night (and which of the two fire, by `dstRepeat`).
 */
export function dstNote(
  fire: { at: string; local_time: string; time_zone: string; shifted_from?: string },
  dstRepeat: string | undefined,
): string | null {
  if (fire.shifted_from) {
    const wallTime = /T(\d\d:\d\d)/.exec(fire.shifted_from)?.[1] ?? fire.shifted_from;
    return `shifted by the spring-forward gap (${wallTime} does not exist that night)`;
  }
  const at = new Date(fire.at).getTime();
  const wall = (t: number): string => formatInZone(new Date(t).toISOString(), fire.time_zone);
  for (const step of [3_600_000, 1_800_000]) {
    const same = wall(at) === wall(at + step) ? 'first' : wall(at) === wall(at - step) ? 'second' : null;
    if (!same) continue;
    const time = formatInZone(fire.at, fire.time_zone).slice(-8, -3);
    const repeat = (dstRepeat ?? 'AUTO').toUpperCase();
    if (repeat === 'BOTH') return `fall-back: ${time} happens twice; this is the ${same}, both fire`;
    if (repeat === 'LAST') return `fall-back: ${time} happens twice; first ${time} skipped, the second fires`;
    return `fall-back: ${time} happens twice; this is the first, second ${time} skipped`;
  }
  return null;
}

/** A retry policy in words: "5 attempts, backoff 1 s ×2 up to 10 min, events older than 1 day dropped". */
export function retryInWords(retry: Json | undefined): string {
  if (!retry || typeof retry !== 'object' || Array.isArray(retry)) return 'default';
  const r = retry as Record<string, Json>;
  const n = (k: string): number | null => (typeof r[k] === 'number' ? (r[k] as number) : null);
  const parts: string[] = [];
  const attempts = n('max_attempts');
  if (attempts !== null) parts.push(attempts === 1 ? 'no retries (1 attempt)' : `${attempts} attempts`);
  const first = n('initial_backoff_ms');
  if (first !== null && attempts !== 1)
    parts.push(
      `backoff ${durationInWords(first)}${n('multiplier') !== null ? ` ×${n('multiplier')}` : ''}${n('max_backoff_ms') !== null ? ` up to ${durationInWords(n('max_backoff_ms')!)}` : ''}`,
    );
  const age = n('max_event_age_ms');
  if (age !== null) parts.push(`given up after ${durationInWords(age)}`);
  return parts.join(', ') || 'default';
}

/** "team=data, env=prod". */
export function labelsText(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
}

/** Parses "k=v, k2=v2" into labels; the offending term on error. */
export function parseLabels(text: string): Record<string, string> | { error: string } {
  const out: Record<string, string> = {};
  for (const term of text.split(',').map((t) => t.trim())) {
    if (!term) continue;
    const at = term.indexOf('=');
    if (at <= 0) return { error: `"${term}" must be key=value` };
    out[term.slice(0, at).trim()] = term.slice(at + 1).trim();
  }
  return out;
}
