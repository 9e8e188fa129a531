/**
 * Backfill: "run the occurrences of this job between A and B that did not run". Pure: the request's
 * validation, which occurrences of the job's schedule fall in the window, which of them the
 * occurrence ledger says did not run (never fired, or skipped for a reason the request includes),
 * and the pacing of the fires. Time comes in as a parameter.
 */
import { FieldReader, parseInstant, ValidationError, type FieldViolation } from './validation';
import { instantRangeProblem } from './instant';
import type { JobCalendars } from './calendar-planner';
import { applyCalendarRule, calendarRef } from './schedule/business-calendar';
import { OccurrenceCursor, type Occurrence } from './schedule/occurrences';
import type { Schedule } from './schedule/schedule';

/** Most occurrences one backfill may fire (its window holding more is refused, naming `to`). */
export const MAX_BACKFILL_OCCURRENCES = 10_000;
/** Longest window a backfill may cover (366 days). */
export const MAX_BACKFILL_WINDOW_MS = 366 * 86_400_000;
/** Fires per second when the request does not say. */
export const DEFAULT_BACKFILL_RATE = 10;
/** The fastest pace a backfill may ask for (the tenant's fire-rate cap still applies). */
export const MAX_BACKFILL_RATE = 1_000;
/** A backfill that fell behind its pace (a scheduler handover, a stall) catches up at most this much at once. */
export const BACKFILL_CATCH_UP_MS = 1_000;

/** The occurrence-ledger skip reasons a backfill can fire again. */
export const BACKFILL_SKIP_REASONS = [
  'MISFIRE_SKIP',
  'OUTSIDE_CATCH_UP_WINDOW',
  'COALESCED',
  'CATCH_UP_LIMIT',
  'OVERLAP',
  'PAUSED',
  'INVALID_DEFINITION',
] as const;
export type BackfillSkipReason = (typeof BACKFILL_SKIP_REASONS)[number];
/**
 * The skip reasons counted as "did not run" when a request names none: every one but
 * INVALID_DEFINITION (a job parked for a definition the scheduler could not plan: fire those only
 * when asked, after fixing it).
 */
export const DEFAULT_BACKFILL_SKIP_REASONS: readonly BackfillSkipReason[] = BACKFILL_SKIP_REASONS.filter(
  (r) => r !== 'INVALID_DEFINITION',
);

/** Why an occurrence is in a backfill: it never fired, or was skipped for this reason. */
export type BackfillItemReason = 'NEVER_FIRED' | BackfillSkipReason;

export type BackfillStatus = 'PENDING' | 'RUNNING' | 'CANCELLED' | 'DONE' | 'FAILED';
export const BACKFILL_STATUSES: readonly BackfillStatus[] = [
  'PENDING',
  'RUNNING',
  'CANCELLED',
  'DONE',
  'FAILED',
];
/** Statuses a backfill can still fire in (and be cancelled from). */
export const ACTIVE_BACKFILL_STATUSES: readonly BackfillStatus[] = ['PENDING', 'RUNNING'];

/** A validated backfill request. The window is [from, to): `from` included, `to` not. */
export interface BackfillRequest {
  readonly from: Date;
  readonly to: Date;
  readonly dryRun: boolean;
  readonly maxPerSecond: number;
  readonly skipReasons: readonly BackfillSkipReason[];
}

const REQUEST_FIELDS = ['from', 'to', 'dry_run', 'max_per_second', 'skip_reasons'];

/**
 * Validates a backfill request's body (snake_case JSON, as REST and gRPC carry it): `from` and `to`
 * RFC 3339 instants with from < to ≤ now and at most MAX_BACKFILL_WINDOW_MS apart; `max_per_second`
 * in (0, MAX_BACKFILL_RATE]; `skip_reasons` a list of BACKFILL_SKIP_REASONS. Throws ValidationError
 * naming each bad field.
 */
export function parseBackfillRequest(raw: unknown, now: Date): BackfillRequest {
  const r = new FieldReader();
  const body = r.object(raw, 'body', true);
  if (!body) throw new ValidationError(r.violations);
  r.noUnknownKeys(body, REQUEST_FIELDS);
  const from = instantField(r, body.from, 'from');
  const to = instantField(r, body.to, 'to');
  const dryRun = r.boolean(body.dry_run, 'dry_run', false);
  let maxPerSecond: number | undefined = DEFAULT_BACKFILL_RATE;
  if (body.max_per_second !== undefined && body.max_per_second !== null) {
    maxPerSecond = r.number(body.max_per_second, 'max_per_second', { max: MAX_BACKFILL_RATE });
    if (maxPerSecond !== undefined && !(maxPerSecond > 0)) {
      r.fail('max_per_second', 'must be > 0');
      maxPerSecond = undefined;
    }
  }
  const skipReasons = skipReasonsField(r, body.skip_reasons);
  if (from && to) {
    if (from.getTime() >= to.getTime()) r.fail('to', 'must be after from');
    else if (to.getTime() - from.getTime() > MAX_BACKFILL_WINDOW_MS)
      r.fail('to', `must be at most 366 days after from (a window of ${MAX_BACKFILL_WINDOW_MS} ms)`);
    if (to.getTime() > now.getTime())
      r.fail(
        'to',
        `must not be in the future (now is ${now.toISOString()}): a backfill runs occurrences that are past`,
      );
  }
  if (
    r.violations.length > 0 ||
    !from ||
    !to ||
    dryRun === undefined ||
    maxPerSecond === undefined ||
    !skipReasons
  )
    throw new ValidationError(r.violations);
  return { from, to, dryRun, maxPerSecond, skipReasons };
}

function instantField(r: FieldReader, raw: unknown, field: string): Date | undefined {
  if (raw === undefined || raw === null || raw === '') {
    r.fail(field, 'is required (an RFC 3339 instant, e.g. 2026-06-01T00:00:00Z)');
    return undefined;
  }
  const at = typeof raw === 'string' ? parseInstant(raw) : undefined;
  if (!at) {
    r.fail(field, 'must be an RFC 3339 instant with an offset, e.g. 2026-06-01T00:00:00Z');
    return undefined;
  }
  const problem = instantRangeProblem(at);
  if (problem) {
    r.fail(field, problem);
    return undefined;
  }
  return at;
}

function skipReasonsField(r: FieldReader, raw: unknown): readonly BackfillSkipReason[] | undefined {
  if (raw === undefined || raw === null) return DEFAULT_BACKFILL_SKIP_REASONS;
  if (!Array.isArray(raw)) {
    r.fail('skip_reasons', `must be a list of ${BACKFILL_SKIP_REASONS.join(', ')}`);
    return undefined;
  }
  const out: BackfillSkipReason[] = [];
  raw.forEach((v: unknown, i) => {
    if (typeof v !== 'string' || !(BACKFILL_SKIP_REASONS as readonly string[]).includes(v))
      r.fail(`skip_reasons[${i}]`, `must be one of ${BACKFILL_SKIP_REASONS.join(', ')}`);
    else if (!out.includes(v as BackfillSkipReason)) out.push(v as BackfillSkipReason);
  });
  return out;
}

/**
 * The occurrences of `schedule` in [from, to), in order (DST: two occurrences at one instant are
 * both listed, as the claim fires both). Throws ValidationError naming `to` when the window holds
 * more than MAX_BACKFILL_OCCURRENCES.
 */
export function occurrencesInWindow(schedule: Schedule, from: Date, to: Date): Occurrence[] {
  const out: Occurrence[] = [];
  // max_fires is not a bound here: skipped occurrences never counted against it, and the ledger
  // (not a count) says what ran.
  const cursor = new OccurrenceCursor(
    { ...schedule, maxFires: undefined } as Schedule,
    from,
    0,
    to.getTime() - 1,
  );
  for (let o = cursor.next(); o !== null; o = cursor.next()) {
    if (o.nominal.getTime() < from.getTime()) continue; // a one-shot before the window
    if (o.nominal.getTime() >= to.getTime()) break;
    if (out.length === MAX_BACKFILL_OCCURRENCES)
      throw new ValidationError([
        {
          field: 'to',
          message: `the window holds more than ${MAX_BACKFILL_OCCURRENCES} occurrences of the job's schedule; split it into shorter windows`,
        },
      ]);
    out.push(o);
  }
  return out;
}

/**
 * A window occurrence where the job's business calendars put it: its nominal is the instant it
 * fires at (moved or not), as the claim records it, told apart from others at that instant by the
 * DST and calendar shifts.
 */
export interface PlacedOccurrence extends Occurrence {
  /** How far a calendar moved it (nominal − the schedule's instant); 0 when it fires where it falls. */
  readonly calendarShiftMs?: number;
  /** The calendar that moved it, `name@version`. */
  readonly calendar?: string;
}

/**
 * Puts a window's occurrences where the job's calendars put them, as the claim plans them: a moved
 * one at its new instant, held behind the previous one (a moved occurrence never fires before it),
 * a skipped one (CALENDAR_SKIP) left out and counted. The hold starts with the window, so a move
 * from before the window that the claim held past an occurrence inside it is not seen.
 */
export function placeByCalendars(
  occurrences: readonly Occurrence[],
  cal: JobCalendars,
  zone: string,
): { readonly placed: PlacedOccurrence[]; readonly calendarSkipped: number } {
  const placed: PlacedOccurrence[] = [];
  let calendarSkipped = 0;
  let floor = -Infinity;
  for (const o of occurrences) {
    const at = o.nominal.getTime();
    const d = applyCalendarRule(cal.calendars, cal.rule, at, zone);
    if (d.kind === 'SKIP') {
      calendarSkipped++;
      continue;
    }
    const due = Math.max(d.at, floor);
    floor = due;
    placed.push({
      nominal: new Date(due),
      dstShiftMs: o.dstShiftMs,
      ...(due !== at ? { calendarShiftMs: due - at } : {}),
      ...(d.kind === 'SHIFT' ? { calendar: calendarRef(d.calendar) } : {}),
    });
  }
  return { placed, calendarSkipped };
}

/** What the occurrence ledger holds for a job over a window. */
export interface BackfillLedger {
  /** Occurrences that fired (by schedule or by an earlier backfill): nominal instant, DST and calendar shifts. */
  readonly fired: readonly PlacedOccurrence[];
  /** Ranges of occurrences that did not fire, with the reason recorded (INVALID_DEFINITION: … is read by its prefix). */
  readonly skipped: readonly {
    readonly reason: string;
    readonly firstNominal: Date;
    readonly lastNominal: Date;
  }[];
}

/** One occurrence a backfill fires, and why it is in it. */
export interface BackfillItem {
  readonly nominal: Date;
  readonly dstShiftMs: number;
  /** A business calendar's move (its nominal is the moved instant), and the calendar `name@version`. */
  readonly calendarShiftMs?: number;
  readonly calendar?: string;
  readonly reason: BackfillItemReason;
}

/** Which occurrences of a window a backfill fires, and what it left out and why. */
export interface BackfillPlan {
  readonly items: readonly BackfillItem[];
  /** Occurrences of the window that already fired. */
  readonly alreadyRan: number;
  /** Occurrences skipped for a reason the request did not include, by reason. */
  readonly excluded: Readonly<Record<string, number>>;
}

/**
 * Subtracts from a window's occurrences those the ledger says ran; keeps the ones that never fired
 * (no fire, no skip record: e.g. before the job existed, or lost to a schedule edit) and the ones
 * skipped for a reason in `skipReasons`. A skip record's reason is its latest for the occurrence.
 */
export function planBackfill(
  occurrences: readonly PlacedOccurrence[],
  ledger: BackfillLedger,
  skipReasons: readonly BackfillSkipReason[],
): BackfillPlan {
  const fired = new Set(ledger.fired.map((o) => occurrenceKey(o)));
  const reasons = skipReasonsByOccurrence(occurrences, ledger.skipped);
  const items: BackfillItem[] = [];
  const excluded: Record<string, number> = {};
  let alreadyRan = 0;
  occurrences.forEach((o, i) => {
    if (fired.has(occurrenceKey(o))) {
      alreadyRan++;
      return;
    }
    const reason = reasons[i];
    const placed = {
      nominal: o.nominal,
      dstShiftMs: o.dstShiftMs,
      ...(o.calendarShiftMs ? { calendarShiftMs: o.calendarShiftMs } : {}),
      ...(o.calendar ? { calendar: o.calendar } : {}),
    };
    if (reason === undefined) {
      items.push({ ...placed, reason: 'NEVER_FIRED' });
    } else if ((skipReasons as readonly string[]).includes(reason)) {
      items.push({ ...placed, reason: reason as BackfillSkipReason });
    } else {
      excluded[reason] = (excluded[reason] ?? 0) + 1;
    }
  });
  return { items, alreadyRan, excluded };
}

function occurrenceKey(o: PlacedOccurrence): string {
  return `${o.nominal.getTime()}/${o.dstShiftMs}/${o.calendarShiftMs ?? 0}`;
}

/**
 * Each occurrence's skip reason: that of the last skip range (in ledger order) holding it, a ledger
 * reason `INVALID_DEFINITION: …` read as INVALID_DEFINITION; undefined when none holds it. The
 * occurrences are in time order, so each range is found by binary search: O(ranges · log n) plus
 * the occurrences the ranges cover, not ranges × occurrences.
 */
function skipReasonsByOccurrence(
  occurrences: readonly Occurrence[],
  skipped: BackfillLedger['skipped'],
): (string | undefined)[] {
  const out: (string | undefined)[] = new Array<string | undefined>(occurrences.length);
  const firstAtOrAfter = (t: number) => {
    let lo = 0;
    let hi = occurrences.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (occurrences[mid]!.nominal.getTime() < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  for (const s of skipped) {
    const reason = s.reason.startsWith('INVALID_DEFINITION') ? 'INVALID_DEFINITION' : s.reason;
    const last = s.lastNominal.getTime();
    for (let i = firstAtOrAfter(s.firstNominal.getTime()); i < occurrences.length; i++) {
      if (occurrences[i]!.nominal.getTime() > last) break;
      out[i] = reason;
    }
  }
  return out;
}

/** How many fires a backfill may make now, and the slot its next fire waits for. */
export interface PacedFires {
  readonly count: number;
  /** Epoch ms of the slot after the fires made now. */
  readonly nextAtMs: number;
}

/**
 * Pacing at `ratePerSec`: one fire per 1/rate seconds from `nextAtMs` (the backfill's next slot,
 * kept in the store, so a scheduler taking it over keeps its pace). A backfill that fell behind
 * (handover, stall) makes up at most BACKFILL_CATCH_UP_MS worth at once. `limit` caps the count:
 * fires left, the tenant's fire-rate tokens, a batch.
 */
export function pacedFires(nextAtMs: number, nowMs: number, ratePerSec: number, limit: number): PacedFires {
  if (nowMs < nextAtMs || limit <= 0) return { count: 0, nextAtMs };
  const spacing = 1000 / ratePerSec;
  const start = Math.max(nextAtMs, nowMs - BACKFILL_CATCH_UP_MS);
  const due = Math.floor((nowMs - start) / spacing) + 1;
  const count = Math.max(0, Math.min(due, Math.floor(limit)));
  return { count, nextAtMs: start + count * spacing };
}

/** Field violations of a backfill id (a positive integer) named `field`, or none. */
export function backfillIdProblem(raw: string, field = 'backfill_id'): FieldViolation[] {
  return /^[1-9][0-9]{0,15}$/.test(raw)
    ? []
    : [{ field, message: 'must be a backfill id (a positive integer)' }];
}

/** A backfill as stored. */
export interface Backfill {
  readonly backfillId: number;
  readonly tenantId: string;
  readonly jobId: string;
  readonly from: Date;
  readonly to: Date;
  readonly maxPerSecond: number;
  readonly skipReasons: readonly string[];
  readonly status: BackfillStatus;
  /** Occurrences planned to fire. */
  readonly planned: number;
  readonly fired: number;
  /** Planned occurrences found fired when their turn came (a concurrent backfill or claim): not fired again. */
  readonly foundRan: number;
  /** Occurrences of the window the plan found fired already. */
  readonly alreadyRan: number;
  /** Occurrences skipped for a reason the request did not include, by reason. */
  readonly excluded: Readonly<Record<string, number>>;
  readonly createdBy: string;
  readonly createdAt: Date;
  readonly startedAt: Date | null;
  readonly finishedAt: Date | null;
  readonly cancelledBy: string | null;
  readonly failure: string | null;
}

/** One planned occurrence of a backfill, and what became of it. */
export interface BackfillItemState extends BackfillItem {
  readonly seq: number;
  readonly state: 'PLANNED' | 'FIRED' | 'ALREADY_RAN';
  readonly fenceToken: number | null;
}
