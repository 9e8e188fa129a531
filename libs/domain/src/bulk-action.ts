/**
 * Label-wide control: one request that pauses, resumes, triggers or deletes every job matching a
 * label selector, and what a resume does with the occurrences missed while the jobs were paused.
 * Pure: the request's validation and the label selector's syntax, shared by every interface.
 */
import type { MisfirePolicy } from './policies';
import { parseInstant, unstorableTextProblem, ValidationError, type FieldViolation } from './validation';
import { instantRangeProblem } from './instant';

export type BulkActionKind = 'PAUSE' | 'RESUME' | 'TRIGGER' | 'DELETE';
export const BULK_ACTIONS: readonly BulkActionKind[] = ['PAUSE', 'RESUME', 'TRIGGER', 'DELETE'];

/** What a resume does with the occurrences missed while paused: the misfire policies' vocabulary. */
export type MissedOccurrencesPolicy = MisfirePolicy;
export const MISSED_POLICIES: readonly MissedOccurrencesPolicy[] = ['SKIP', 'FIRE_ONCE', 'FIRE_ALL'];

/** Skip reason of an occurrence that did not fire because its job was paused (and resumed with SKIP or a window). */
export const PAUSED_SKIP_REASON = 'PAUSED';

/** FIRE_ALL on resume fires at most this many missed occurrences per job, whatever is asked. */
export const MAX_RESUME_CATCH_UP = 1_000;

/**
 * The choice a resume made for the occurrences a job missed while paused, kept on the job until
 * the scheduler's next claim of it plans them (with the misfire planner, under these rules
 * instead of the job's own policy).
 */
export interface ResumeCatchUp {
  readonly missed: MissedOccurrencesPolicy;
  /** Only occurrences this recent (as of the claim) may fire; older ones are skipped PAUSED. Null: no window. */
  readonly windowMs: number | null;
  /** FIRE_ALL: at most this many missed occurrences fire (also bounded by the scheduler's max catch-up). */
  readonly limit: number;
}

/** A label selector: `team=payments,env!=prod` (every equality holds, no inequality does). */
export interface LabelSelector {
  readonly equal: Readonly<Record<string, string>>;
  readonly notEqual: Readonly<Record<string, string>>;
}

/**
 * Parses ListJobs' label selector syntax: comma-separated `key=value` (or `key==value`) and
 * `key!=value` terms. Throws ValidationError naming `field`.
 */
export function parseLabelSelector(raw: string, field = 'label_selector'): LabelSelector {
  const equal: Record<string, string> = {};
  const notEqual: Record<string, string> = {};
  for (const term of raw.split(',').map((t) => t.trim())) {
    if (term === '') continue;
    const m = /^([^=!\s]+)\s*(!=|==|=)\s*(.*)$/.exec(term);
    if (!m) throw new ValidationError([{ field, message: `"${term}" must be key=value or key!=value` }]);
    const problem = unstorableTextProblem(m[1]!) ?? unstorableTextProblem(m[3]!);
    if (problem) throw new ValidationError([{ field, message: `"${m[1]!}": ${problem}` }]);
    // defineProperty: a key such as __proto__ is a label like any other.
    Object.defineProperty(m[2] === '!=' ? notEqual : equal, m[1]!, {
      value: m[3]!,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return { equal, notEqual };
}

/** A validated bulk action request. */
export interface BulkActionRequest {
  readonly action: BulkActionKind;
  readonly selector: LabelSelector;
  /** As given: the selector text (recorded in the audit rows). */
  readonly selectorText: string;
  /** Admins: the tenant to act in (tenants: their own). Absent: an admin acts in every tenant. */
  readonly tenantId?: string;
  readonly dryRun: boolean;
  /** PAUSE: resume by itself at this instant. */
  readonly until?: Date;
  /** RESUME (or PAUSE with until): what to do with missed occurrences; absent = each job's misfire policy. */
  readonly catchUp?: ResumeCatchUp;
}

/** Fields a bulk action request may carry (snake_case, as on REST). */
const BULK_FIELDS = [
  'action',
  'label_selector',
  'tenant_id',
  'dry_run',
  'until',
  'missed',
  'catch_up_window_ms',
  'catch_up_limit',
] as const;

/** Longest accepted catch-up window on resume: 366 days. */
const MAX_CATCH_UP_WINDOW_MS = 366 * 86_400_000;

/**
 * Validates a bulk action request (wire JSON, snake_case) at `now`; throws ValidationError
 * naming every bad field. The selector must name at least one label: no call acts on every job
 * by accident.
 */
export function parseBulkActionRequest(raw: unknown, now: Date): BulkActionRequest {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    throw new ValidationError([{ field: 'body', message: 'must be a JSON object' }]);
  const body = raw as Record<string, unknown>;
  const violations: FieldViolation[] = [];
  const fail = (field: string, message: string) => violations.push({ field, message });
  for (const k of Object.keys(body))
    if (!(BULK_FIELDS as readonly string[]).includes(k))
      fail(k, `is not a field of a bulk action (${BULK_FIELDS.join(', ')})`);

  const action = body.action;
  if (typeof action !== 'string' || !(BULK_ACTIONS as readonly string[]).includes(action))
    fail('action', `must be one of ${BULK_ACTIONS.join(', ')}`);

  let selector: LabelSelector | undefined;
  const selectorText = body.label_selector;
  if (typeof selectorText !== 'string' || selectorText.trim() === '')
    fail('label_selector', 'is required: at least one key=value (e.g. "team=payments,env=prod")');
  else {
    try {
      selector = parseLabelSelector(selectorText);
      if (Object.keys(selector.equal).length === 0)
        fail(
          'label_selector',
          'must have at least one key=value term (inequalities alone would match nearly every job)',
        );
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      violations.push(...e.violations);
    }
  }

  let tenantId: string | undefined;
  if (body.tenant_id !== undefined && body.tenant_id !== null && body.tenant_id !== '') {
    if (typeof body.tenant_id !== 'string') fail('tenant_id', 'must be a string');
    else tenantId = body.tenant_id;
  }

  let dryRun = false;
  if (body.dry_run !== undefined && body.dry_run !== null) {
    if (typeof body.dry_run !== 'boolean') fail('dry_run', 'must be true or false');
    else dryRun = body.dry_run;
  }

  let until: Date | undefined;
  const untilGiven = body.until !== undefined && body.until !== null && body.until !== '';
  if (untilGiven) {
    const parsed = typeof body.until === 'string' ? parseInstant(body.until) : undefined;
    if (!parsed) fail('until', 'must be an RFC 3339 instant (e.g. 2026-12-07T09:00:00Z)');
    else if (instantRangeProblem(parsed)) fail('until', instantRangeProblem(parsed)!);
    else if (parsed.getTime() <= now.getTime()) fail('until', 'must be in the future');
    else if (action !== 'PAUSE') fail('until', 'applies to action PAUSE only');
    else until = parsed;
  }

  let catchUp: ResumeCatchUp | undefined;
  const missed = body.missed;
  if (missed !== undefined && missed !== null && missed !== '') {
    if (typeof missed !== 'string' || !(MISSED_POLICIES as readonly string[]).includes(missed))
      fail('missed', `must be one of ${MISSED_POLICIES.join(', ')}`);
    else if (action !== 'RESUME' && !(action === 'PAUSE' && untilGiven))
      fail('missed', 'applies to action RESUME, or PAUSE with until');
    else {
      const windowMs = optionalInt(
        body.catch_up_window_ms,
        'catch_up_window_ms',
        1,
        MAX_CATCH_UP_WINDOW_MS,
        fail,
      );
      const limit = optionalInt(body.catch_up_limit, 'catch_up_limit', 1, MAX_RESUME_CATCH_UP, fail);
      catchUp = {
        missed: missed as MissedOccurrencesPolicy,
        windowMs: windowMs ?? null,
        limit: limit ?? MAX_RESUME_CATCH_UP,
      };
    }
  } else {
    for (const f of ['catch_up_window_ms', 'catch_up_limit'] as const)
      if (body[f] !== undefined && body[f] !== null) fail(f, 'applies only with missed');
  }

  if (violations.length > 0) throw new ValidationError(violations);
  return {
    action: action as BulkActionKind,
    selector: selector!,
    selectorText: selectorText as string,
    ...(tenantId !== undefined ? { tenantId } : {}),
    dryRun,
    ...(until ? { until } : {}),
    ...(catchUp ? { catchUp } : {}),
  };
}

function optionalInt(
  v: unknown,
  field: string,
  min: number,
  max: number,
  fail: (field: string, message: string) => void,
): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    fail(field, `must be an integer from ${min} to ${max}`);
    return undefined;
  }
  return v;
}

/**
 * Skip reasons of a claim planned under a resume's catch-up choice: occurrences skipped because
 * of the choice (SKIP, or older than its window) are PAUSED; COALESCED and CATCH_UP_LIMIT keep
 * their meaning (folded into the one fire; beyond the bounded count).
 */
export function resumeSkipReason(reason: string): string {
  return reason === 'MISFIRE_SKIP' || reason === 'OUTSIDE_CATCH_UP_WINDOW' ? PAUSED_SKIP_REASON : reason;
}
