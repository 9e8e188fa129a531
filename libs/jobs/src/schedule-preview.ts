/** PreviewSchedule: the next fire times of a schedule, without creating a job. */
import {
  parseSchedule,
  previewFires,
  ValidationError,
  zoneOffsetMs,
  MAX_PREVIEW_FIRES,
} from '@tickwork/domain';

export interface PreviewedFire {
  readonly at: Date;
  /** Wall-clock time in the schedule's zone with its UTC offset, e.g. 2026-03-29T09:00:00+01:00. */
  readonly localTime: string;
  readonly timeZone: string;
}

/** Validates a wire schedule and lists up to `count` (default 10, at most 1000) fires from `from` (default now). */
export function previewSchedule(
  raw: unknown,
  opts: { count?: number; from?: Date; now: Date; minIntervalMs: number },
): PreviewedFire[] {
  const count = opts.count === undefined || opts.count === 0 ? 10 : opts.count;
  const violations = [];
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_PREVIEW_FIRES)
    violations.push({ field: 'count', message: `must be between 1 and ${MAX_PREVIEW_FIRES}` });
  const parsed = parseSchedule(raw, { minIntervalMs: opts.minIntervalMs, now: opts.now });
  if (!parsed.ok) violations.push(...parsed.violations);
  if (violations.length > 0 || !parsed.ok) throw new ValidationError(violations);
  const zone = parsed.schedule.kind === 'cron' ? parsed.schedule.timeZone : 'UTC';
  return previewFires(parsed.schedule, opts.from ?? opts.now, count).map((at) => ({
    at,
    localTime: localTime(at, zone),
    timeZone: zone,
  }));
}

/** An instant as wall-clock time in a zone, ISO-8601 with the zone's offset at that instant. */
export function localTime(at: Date, timeZone: string): string {
  const offset = zoneOffsetMs(timeZone, at);
  const wall = new Date(at.getTime() + offset).toISOString().slice(0, 19);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset) / 60_000;
  return `${wall}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
