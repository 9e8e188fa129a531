/**
 * IANA time-zone offsets and transitions, derived from `Intl.DateTimeFormat` once per zone and UTC year
 * and cached, so the cron hot path only does arithmetic and never formats a date.
 *
 * A zone's timeline is cut into segments of constant UTC offset. Segments end at real transitions
 * (DST starts/ends, standard-offset changes) and, for bookkeeping, at every UTC new year.
 */

const SECOND_MS = 1_000;
const DAY_MS = 86_400_000;

/** A change of a zone's UTC offset at instant `at` (epoch ms): `before` applies until `at`, `after` from `at`. */
export interface ZoneTransition {
  readonly at: number;
  /** Offset (ms, local − UTC) in force just before `at`. */
  readonly before: number;
  /** Offset (ms, local − UTC) in force from `at`. */
  readonly after: number;
}

/** A stretch of a zone's timeline, [start, end), with one UTC offset. */
export interface ZoneSegment {
  readonly start: number;
  readonly end: number;
  /** Offset (ms, local − UTC): local wall time = instant + offset. */
  readonly offset: number;
  /** The latest real transition at or before `start` (null if none in the previous UTC year). */
  readonly previous: ZoneTransition | null;
  /** The earliest real transition at or after `end` (null if none in the next UTC year). */
  readonly next: ZoneTransition | null;
}

interface YearSegments {
  readonly starts: readonly number[];
  readonly segments: readonly ZoneSegment[];
}

const WALL_FORMAT = /^(\d+)\/(\d+)\/(\d+),? (\d+):(\d+):(\d+)$/;

/**
 * Years of a zone kept worked out at once: beyond this the cache starts over, so requests ranging
 * over the instant range (previews `from` any year) cannot grow memory without bound (~0.3 KB a year).
 */
const MAX_CACHED_YEARS = 256;

/** Offsets and transitions of one IANA zone; build through `zoneRules`. */
export class ZoneRules {
  private readonly formatter: Intl.DateTimeFormat;
  private readonly transitionsByYear = new Map<number, readonly ZoneTransition[]>();
  private readonly segmentsByYear = new Map<number, YearSegments>();
  /** Most jobs ask about "now": the last answer usually answers the next question. */
  private lastSegment: ZoneSegment | undefined;

  constructor(readonly name: string) {
    // Throws RangeError for unknown zones; 'en-US' + h23 gives a stable "M/D/YYYY, HH:MM:SS" shape.
    this.formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: name,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  }

  /** UTC offset (ms, local − UTC) in force at `instant`. */
  offsetAt(instant: number): number {
    return this.segmentAt(instant).offset;
  }

  /** The constant-offset segment that contains `instant`. */
  segmentAt(instant: number): ZoneSegment {
    const last = this.lastSegment;
    if (last !== undefined && instant >= last.start && instant < last.end) return last;
    const year = new Date(instant).getUTCFullYear();
    const { starts, segments } = this.segmentsOf(year);
    let i = starts.length - 1;
    while (i > 0 && (starts[i] as number) > instant) i--;
    const found = segments[i] as ZoneSegment;
    this.lastSegment = found;
    return found;
  }

  /** Real offset changes whose instant lies in UTC year `year`, in order. */
  transitionsIn(year: number): readonly ZoneTransition[] {
    let found = this.transitionsByYear.get(year);
    if (found === undefined) {
      found = this.findTransitions(year);
      if (this.transitionsByYear.size >= MAX_CACHED_YEARS) this.transitionsByYear.clear();
      this.transitionsByYear.set(year, found);
    }
    return found;
  }

  private segmentsOf(year: number): YearSegments {
    let cached = this.segmentsByYear.get(year);
    if (cached === undefined) {
      cached = this.buildSegments(year);
      if (this.segmentsByYear.size >= MAX_CACHED_YEARS) this.segmentsByYear.clear();
      this.segmentsByYear.set(year, cached);
    }
    return cached;
  }

  private buildSegments(year: number): YearSegments {
    const start = Date.UTC(year, 0, 1);
    const end = Date.UTC(year + 1, 0, 1);
    const transitions = this.transitionsIn(year);
    const atStart = transitions[0]?.at === start ? transitions[0] : undefined;
    const inner = atStart ? transitions.slice(1) : transitions;
    const earlier = this.transitionsIn(year - 1);
    const previousOfYear = atStart ?? earlier[earlier.length - 1] ?? null;
    const nextOfYear = this.transitionsIn(year + 1)[0] ?? null;
    const starts: number[] = [];
    const segments: ZoneSegment[] = [];
    for (let i = 0; i <= inner.length; i++) {
      const entering = i === 0 ? previousOfYear : (inner[i - 1] as ZoneTransition);
      const leaving = i < inner.length ? (inner[i] as ZoneTransition) : nextOfYear;
      const segmentStart = i === 0 ? start : (inner[i - 1] as ZoneTransition).at;
      const segmentEnd = i < inner.length ? (inner[i] as ZoneTransition).at : end;
      const offset = i === 0 ? this.formattedOffset(start) : (inner[i - 1] as ZoneTransition).after;
      starts.push(segmentStart);
      segments.push({ start: segmentStart, end: segmentEnd, offset, previous: entering, next: leaving });
    }
    return { starts, segments };
  }

  /** Samples daily, then bisects to the second: transitions are whole seconds and at least a day apart. */
  private findTransitions(year: number): ZoneTransition[] {
    const start = Date.UTC(year, 0, 1);
    const end = Date.UTC(year + 1, 0, 1);
    const found: ZoneTransition[] = [];
    const justBefore = this.formattedOffset(start - SECOND_MS);
    let sampleAt = start;
    let sampleOffset = this.formattedOffset(start);
    if (justBefore !== sampleOffset) found.push({ at: start, before: justBefore, after: sampleOffset });
    while (sampleAt < end) {
      const nextAt = Math.min(sampleAt + DAY_MS, end);
      const nextOffset = this.formattedOffset(nextAt);
      if (nextOffset !== sampleOffset) this.bisect(sampleAt, sampleOffset, nextAt, nextOffset, found);
      sampleAt = nextAt;
      sampleOffset = nextOffset;
    }
    // A transition exactly at `end` belongs to the next year (found there as "at start").
    return found.filter((t) => t.at < end);
  }

  private bisect(lo: number, loOffset: number, hi: number, hiOffset: number, into: ZoneTransition[]): void {
    let a = lo;
    let b = hi;
    while (b - a > SECOND_MS) {
      const mid = a + Math.floor((b - a) / 2 / SECOND_MS) * SECOND_MS;
      if (this.formattedOffset(mid) === loOffset) a = mid;
      else b = mid;
    }
    const after = this.formattedOffset(b);
    into.push({ at: b, before: loOffset, after });
    // Two changes inside one sampling step (rare): look for the next one too.
    if (after !== hiOffset && b < hi) this.bisect(b, after, hi, hiOffset, into);
  }

  /** Slow path: asks Intl for the wall clock at `instant` (whole second) and derives the offset. */
  private formattedOffset(instant: number): number {
    const whole = Math.floor(instant / SECOND_MS) * SECOND_MS;
    const match = WALL_FORMAT.exec(this.formatter.format(whole));
    if (match === null) throw new Error(`unexpected Intl output for time zone ${this.name}`);
    const [, month, day, year, hour, minute, second] = match.map(Number) as number[];
    const wall = new Date(0);
    wall.setUTCFullYear(year as number, (month as number) - 1, day as number);
    wall.setUTCHours(hour as number, minute as number, second as number, 0);
    return wall.getTime() - whole;
  }
}

const zones = new Map<string, ZoneRules>();

/** Cached rules for an IANA zone; throws RangeError for an unknown zone (check with `isKnownTimeZone`). */
export function zoneRules(timeZone: string): ZoneRules {
  let rules = zones.get(timeZone);
  if (rules === undefined) {
    rules = new ZoneRules(timeZone);
    zones.set(timeZone, rules);
  }
  return rules;
}

/**
 * Loads the runtime's time-zone data (the first Intl date formatter of a process costs tens of ms)
 * so that no request pays for it: call once at start-up.
 */
export function warmUpTimeZones(): void {
  zoneRules('UTC').offsetAt(Date.now());
}

/** Whether `timeZone` is an IANA zone name this runtime knows (offset strings like '+05:30' are not). */
export function isKnownTimeZone(timeZone: string): boolean {
  if (zones.has(timeZone)) return true;
  if (!/^[A-Za-z]/.test(timeZone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
}

/** UTC offset (ms, local − UTC) of `timeZone` at `instant`. */
export function zoneOffsetMs(timeZone: string, instant: Date): number {
  return zoneRules(timeZone).offsetAt(instant.getTime());
}
