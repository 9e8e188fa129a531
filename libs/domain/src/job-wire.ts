/**
 * The wire form of a job: the snake_case JSON that REST, gRPC JSON, Kafka commands and the
 * store's jsonb columns share. Parsing validates every field and names the bad ones.
 */
import {
  DEFAULT_RETRY_POLICY,
  MAX_EVENT_AGE_MS,
  MAX_RETRY_BACKOFF_MS,
  MISFIRE_POLICIES,
  OVERLAP_POLICIES,
  RESULT_EVENTS_POLICIES,
  type JobPolicies,
  type RetryPolicy,
} from './policies';
import { HTTP_METHODS, TARGET_TYPES, type Target } from './target';
import {
  FieldReader,
  unstorableTextProblem,
  ValidationError,
  type FieldViolation,
  type Validated,
} from './validation';
import { instantRangeProblem, MAX_POLICY_DURATION_MS } from './instant';
import { JOB_ID_PATTERN, TENANT_ID_PATTERN, type Job, type JobDefinition, type JsonValue } from './job';
import type { Schedule } from './schedule/schedule';
import { CALENDAR_RULES, type CalendarRule } from './schedule/business-calendar';
import {
  compileCron,
  compileRrule,
  MAX_INTERVAL_MS,
  parseLocalWallTime,
  parseRrule,
  parseSchedule,
  usesHashToken,
} from './schedule';

export interface JobDefinitionLimits {
  /** Shortest allowed interval between occurrences. */
  readonly minIntervalMs: number;
  /** Largest payload accepted, as UTF-8 JSON bytes. */
  readonly maxPayloadBytes: number;
  /** Largest jitter window accepted. */
  readonly maxJitterMs: number;
  /** Tickwork's own topics (commands, fires, results…), which no Kafka target may name. */
  readonly reservedTopics?: readonly string[];
}

/**
 * The most `jitter_ms` may delay a fire: one hour. Jitter spreads a herd of fires over a window; a
 * longer delay would let an hourly job's fire land after its next occurrence's.
 */
export const MAX_JITTER_MS = 3_600_000;

/** The limits of a job definition where the deployment sets none (TICKWORK_MIN_INTERVAL_MS …). */
export const DEFAULT_JOB_LIMITS: JobDefinitionLimits = {
  minIntervalMs: 1_000,
  maxPayloadBytes: 256 * 1024,
  maxJitterMs: MAX_JITTER_MS,
};

/**
 * How deep a payload may nest objects and arrays (`{"a": 1}` is 1 deep), on every interface. The
 * gRPC API carries a payload as google.protobuf.Value, two messages per level, and protobuf
 * decoders stop at 100 nested messages (protobufjs, the C++ and Python runtimes): with the Job and
 * response messages around it, 32 levels leave room, so a job any interface accepts every other
 * can return. Checked without recursion, so a payload nested 10,000 deep is refused, not a crash.
 */
export const MAX_PAYLOAD_DEPTH = 32;

/** HTTP header field names (RFC 9110 tokens): no CR, LF, colon or space can slip into a request. */
const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Control characters a header value must not carry (CR and LF would split the request; HTAB is fine). */
// eslint-disable-next-line no-control-regex -- control characters are what this looks for
const HEADER_VALUE_CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

const JOB_FIELDS = ['job_id', 'tenant_id', 'schedule', 'target', 'payload', 'policies', 'labels'];

/**
 * Every fire event carries its job's target whole, and Kafka refuses a message over 1 MiB by
 * default: with the payload's own limit, these keep a fire event well under it, so a job that was
 * accepted can always fire.
 */
export const TARGET_LIMITS = { urlChars: 8_192, keyChars: 4_096, headersBytes: 16_384 } as const;

/** Validates a raw job definition; `newJobId` supplies an id when the client gave none. */
export function parseJobDefinition(
  raw: unknown,
  ctx: { now: Date; limits: JobDefinitionLimits; newJobId: () => string; tenantId?: string },
): Validated<JobDefinition> {
  const r = new FieldReader();
  const body = r.object(raw, 'body', true);
  if (!body) return { ok: false, violations: r.violations };
  r.noUnknownKeys(body, JOB_FIELDS);

  const jobId =
    body.job_id === undefined
      ? ctx.newJobId()
      : r.string(body.job_id, 'job_id', {
          required: true,
          pattern: JOB_ID_PATTERN,
          hint: 'must be 1-128 characters of letters, digits, . _ : -',
        });
  const tenantId =
    ctx.tenantId ??
    r.string(body.tenant_id ?? 'default', 'tenant_id', {
      required: true,
      pattern: TENANT_ID_PATTERN,
      hint: 'must be 1-64 characters of letters, digits, . _ -',
    });

  let schedule: Schedule | undefined;
  if (body.schedule === undefined || body.schedule === null) r.fail('schedule', 'is required');
  else {
    const parsed = parseSchedule(body.schedule, {
      minIntervalMs: ctx.limits.minIntervalMs,
      now: ctx.now,
      ...(jobId !== undefined ? { hashSeed: jobId } : {}),
    });
    if (parsed.ok) schedule = parsed.schedule;
    else r.adopt(parsed.violations);
  }

  const target = parseTarget(body.target, r, ctx.limits.reservedTopics ?? []);
  const payload = parsePayload(body.payload, r, ctx.limits.maxPayloadBytes);
  const policies = parsePolicies(body.policies, r.child('policies'), ctx.limits, r);
  const labels = r.stringMap(body.labels, 'labels');
  if (schedule && policies) {
    const problem = spreadProblem(schedule, policies);
    if (problem) r.fail('policies.spread_ms', problem);
    if (schedule.kind === 'once' && (policies.calendars?.length ?? 0) > 0)
      r.fail(
        'policies.calendars',
        'apply to recurring schedules (interval, cron or rrule), not a once schedule',
      );
  }

  if (
    r.violations.length > 0 ||
    !jobId ||
    !tenantId ||
    !schedule ||
    !target ||
    payload === undefined ||
    !policies ||
    !labels
  ) {
    return { ok: false, violations: r.violations };
  }
  return { ok: true, value: { jobId, tenantId, schedule, target, payload, policies, labels } };
}

function parseTarget(raw: unknown, r: FieldReader, reservedTopics: readonly string[]): Target | undefined {
  const t = r.object(raw, 'target', true);
  if (!t) return undefined;
  const type = r.oneOf(t.type, 'target.type', TARGET_TYPES);
  const headers = r.stringMap(t.headers, 'target.headers');
  if (headers) {
    let bytes = 0;
    for (const [k, v] of Object.entries(headers)) bytes += Buffer.byteLength(k) + Buffer.byteLength(v);
    if (bytes > TARGET_LIMITS.headersBytes)
      r.fail('target.headers', `are ${bytes} bytes; the limit is ${TARGET_LIMITS.headersBytes}`);
  }
  if (type === 'webhook') {
    r.noUnknownKeys(t, ['type', 'url', 'method', 'headers', 'timeout_ms', 'success_status'], 'target');
    let headersOk = true;
    for (const [k, v] of Object.entries(headers ?? {})) {
      if (!HTTP_TOKEN.test(k)) {
        r.fail(`target.headers.${k}`, "is not an HTTP header name (letters, digits and !#$%&'*+.^_`|~-)");
        headersOk = false;
      } else if (HEADER_VALUE_CONTROL.test(v)) {
        r.fail(`target.headers.${k}`, 'must not contain control characters such as CR or LF');
        headersOk = false;
      }
    }
    if (!headersOk) return undefined;
    const url = r.string(t.url, 'target.url', { required: true, maxLength: TARGET_LIMITS.urlChars });
    if (url !== undefined && !isHttpUrl(url))
      r.fail('target.url', 'must be an absolute http:// or https:// URL');
    // A fetch refuses such a URL at every fire, and every read would show the password.
    else if (url !== undefined && hasUserInfo(url))
      r.fail(
        'target.url',
        'must not carry credentials (user:password@); put them in a secret header such as Authorization',
      );
    const method = r.oneOf(t.method, 'target.method', HTTP_METHODS, 'POST');
    const timeoutMs = r.integer(t.timeout_ms ?? 10_000, 'target.timeout_ms', { min: 100, max: 15 * 60_000 });
    const range = parseStatusRange(t.success_status, r);
    if (
      !url ||
      !isHttpUrl(url) ||
      hasUserInfo(url) ||
      !method ||
      !headers ||
      timeoutMs === undefined ||
      !range
    )
      return undefined;
    return { type, url, method, headers, timeoutMs, successStatus: range };
  }
  if (type === 'kafka') {
    r.noUnknownKeys(t, ['type', 'topic', 'key', 'headers'], 'target');
    const topic = r.string(t.topic, 'target.topic', {
      required: true,
      pattern: /^[A-Za-z0-9._-]{1,249}$/,
      hint: 'must be a valid Kafka topic name',
    });
    // The executor refuses these at every fire (they could forge fires or commands): refused now instead.
    const internal =
      topic !== undefined &&
      (topic.startsWith('__') || topic === '_schemas' || reservedTopics.includes(topic));
    if (internal) r.fail('target.topic', 'is internal to Kafka or Tickwork: no job may publish to it');
    const key =
      t.key === undefined || t.key === null
        ? null
        : r.string(t.key, 'target.key', { maxLength: TARGET_LIMITS.keyChars });
    if (!topic || internal || key === undefined || !headers) return undefined;
    return { type, topic, key, headers };
  }
  return undefined;
}

function parseStatusRange(raw: unknown, r: FieldReader): { min: number; max: number } | undefined {
  if (raw === undefined || raw === null) return { min: 200, max: 299 };
  const o = r.object(raw, 'target.success_status', false);
  if (!o) return undefined;
  r.noUnknownKeys(o, ['min', 'max'], 'target.success_status');
  const min = r.integer(o.min, 'target.success_status.min', { required: true, min: 100, max: 599 });
  const max = r.integer(o.max, 'target.success_status.max', { required: true, min: 100, max: 599 });
  if (min === undefined || max === undefined) return undefined;
  if (max < min) {
    r.fail('target.success_status.max', 'must be >= target.success_status.min');
    return undefined;
  }
  return { min, max };
}

/** Whether an http(s) URL carries a user name or password. */
function hasUserInfo(raw: string): boolean {
  const u = new URL(raw);
  return u.username !== '' || u.password !== '';
}

function isHttpUrl(raw: string): boolean {
  try {
    const u = new URL(raw);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
  } catch {
    return false;
  }
}

function parsePayload(raw: unknown, r: FieldReader, maxBytes: number): JsonValue | undefined {
  if (raw === undefined) return null;
  const problems = payloadProblems(raw, 'payload');
  if (problems.length > 0) {
    r.adopt(problems);
    return undefined;
  }
  const bytes = Buffer.byteLength(JSON.stringify(raw), 'utf8');
  if (bytes > maxBytes) {
    r.fail('payload', `is ${bytes} bytes; the limit is ${maxBytes}`);
    return undefined;
  }
  return raw as JsonValue;
}

/**
 * What makes a JSON value unstorable as a payload: nesting deeper than MAX_PAYLOAD_DEPTH, text
 * PostgreSQL cannot hold (in a string or a key), a number JSON cannot carry. Iterative, so no
 * depth can overflow the stack; reports at most a few problems, each with its path.
 */
export function payloadProblems(raw: unknown, field: string): FieldViolation[] {
  const out: FieldViolation[] = [];
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: raw, path: field, depth: 0 }];
  while (stack.length > 0 && out.length < 5) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      const problem = unstorableTextProblem(value);
      if (problem) out.push({ field: path, message: problem });
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) out.push({ field: path, message: 'must be a finite number' });
    } else if (value !== null && typeof value === 'object') {
      if (depth + 1 > MAX_PAYLOAD_DEPTH) {
        out.push({
          field,
          message: `nests objects and arrays more than ${MAX_PAYLOAD_DEPTH} deep (at ${path})`,
        });
        break;
      }
      if (Array.isArray(value)) {
        for (let i = value.length - 1; i >= 0; i--)
          stack.push({ value: value[i], path: `${path}[${i}]`, depth: depth + 1 });
      } else {
        for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
          const problem = unstorableTextProblem(k);
          if (problem) out.push({ field: `${path}.${k}`, message: `(the key) ${problem}` });
          stack.push({ value: v, path: `${path}.${k}`, depth: depth + 1 });
        }
      }
    } else if (value !== null && typeof value !== 'boolean') {
      out.push({ field: path, message: 'must be JSON (null, boolean, number, string, array or object)' });
    }
  }
  return out;
}

function parsePolicies(
  raw: unknown,
  r: FieldReader,
  limits: JobDefinitionLimits,
  root: FieldReader,
): JobPolicies | undefined {
  const p = root.object(raw, 'policies', false) ?? {};
  root.noUnknownKeys(
    p,
    [
      'retry',
      'misfire',
      'catch_up_window_ms',
      'overlap',
      'jitter_ms',
      'spread_ms',
      'tolerance_ms',
      'slo_metrics',
      'calendars',
      'calendar_rule',
      'result_events',
    ],
    'policies',
  );
  const retry = parseRetry(p.retry, r);
  const misfire = r.oneOf(p.misfire, 'misfire', MISFIRE_POLICIES, 'FIRE_ONCE');
  const overlap = r.oneOf(p.overlap, 'overlap', OVERLAP_POLICIES, 'ALLOW');
  const jitterMs = r.integer(p.jitter_ms ?? 0, 'jitter_ms', { min: 0, max: limits.maxJitterMs });
  // Bounded here by the longest interval; the schedule's own spacing bounds it in spreadProblem.
  const spreadMs = r.integer(p.spread_ms ?? 0, 'spread_ms', { min: 0, max: MAX_INTERVAL_MS });
  const window =
    p.catch_up_window_ms === undefined || p.catch_up_window_ms === null
      ? null
      : r.integer(p.catch_up_window_ms, 'catch_up_window_ms', { min: 0, max: MAX_POLICY_DURATION_MS });
  const toleranceMs =
    p.tolerance_ms === undefined || p.tolerance_ms === null
      ? null
      : r.integer(p.tolerance_ms, 'tolerance_ms', { min: 0, max: MAX_POLICY_DURATION_MS });
  const sloMetrics = r.boolean(p.slo_metrics, 'slo_metrics', false);
  const calendars = parseCalendarNames(p.calendars, r);
  const calendarRule = r.oneOf(p.calendar_rule, 'calendar_rule', CALENDAR_RULES, 'SKIP');
  const resultEvents = r.oneOf(p.result_events, 'result_events', RESULT_EVENTS_POLICIES, 'ALL');
  root.adopt(r);
  if (
    !retry ||
    !misfire ||
    !overlap ||
    jitterMs === undefined ||
    spreadMs === undefined ||
    window === undefined ||
    toleranceMs === undefined ||
    sloMetrics === undefined ||
    calendars === undefined ||
    !calendarRule ||
    !resultEvents
  )
    return undefined;
  return {
    retry,
    misfire,
    overlap,
    jitterMs,
    spreadMs,
    catchUpWindowMs: window,
    ...(toleranceMs !== null ? { toleranceMs } : {}),
    ...(sloMetrics ? { sloMetrics } : {}),
    ...(calendars.length > 0 ? { calendars, calendarRule } : {}),
    ...(resultEvents !== 'ALL' ? { resultEvents } : {}),
  };
}

/** Most calendars one job may refer to. */
export const MAX_JOB_CALENDARS = 8;
/** A calendar's name: what jobs refer to it by. */
export const CALENDAR_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/**
 * A preview's (or any request's) calendars and rule, as policies.calendars / policies.calendar_rule
 * are written, fields named without the policies prefix; undefined when no calendar is named.
 */
export function parseCalendarPolicy(
  names: unknown,
  rule: unknown,
): { names: string[]; rule: CalendarRule } | undefined {
  const r = new FieldReader();
  const parsed = parseCalendarNames(names, r);
  const parsedRule = r.oneOf(rule, 'calendar_rule', CALENDAR_RULES, 'SKIP');
  if (r.violations.length > 0 || !parsed || !parsedRule) throw new ValidationError(r.violations);
  return parsed.length > 0 ? { names: parsed, rule: parsedRule } : undefined;
}

/** policies.calendars: distinct calendar names, at most MAX_JOB_CALENDARS. */
function parseCalendarNames(raw: unknown, r: FieldReader): string[] | undefined {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    r.fail('calendars', 'must be an array of calendar names');
    return undefined;
  }
  if (raw.length > MAX_JOB_CALENDARS) {
    r.fail('calendars', `must name at most ${MAX_JOB_CALENDARS} calendars`);
    return undefined;
  }
  const names: string[] = [];
  raw.forEach((n, i) => {
    const name = r.string(n, `calendars[${i}]`, {
      required: true,
      pattern: CALENDAR_NAME_PATTERN,
      hint: 'must be a calendar name: lower-case letters, digits, ".", "_" or "-", at most 63',
    });
    if (name === undefined) return;
    if (names.includes(name)) r.fail(`calendars[${i}]`, `names ${name} twice`);
    names.push(name);
  });
  return names.length === raw.length ? names : undefined;
}

/**
 * Why a herd window does not fit its job, or undefined: spread_ms may reach the schedule's shortest
 * spacing (the interval, the cron's smallest gap) and no further, so a slot never passes the next
 * occurrence; a one-shot has no herd to spread; and it replaces jitter_ms rather than adding to it.
 */
export function spreadProblem(schedule: Schedule, policies: JobPolicies): string | undefined {
  const spread = policies.spreadMs ?? 0;
  if (spread === 0) return undefined;
  if (policies.jitterMs > 0)
    return 'cannot be combined with policies.jitter_ms (spread_ms is the window; set jitter_ms to 0)';
  if (schedule.kind === 'once')
    return 'applies to recurring schedules (interval, cron or rrule), not a once schedule';
  const spacing =
    schedule.kind === 'interval'
      ? schedule.everyMs
      : schedule.kind === 'cron'
        ? compileCron(schedule.expression, schedule.hashSeed).minimumSpacingMs()
        : compileRrule(schedule.rule, schedule.dtstart, schedule.exdates).minimumSpacingMs();
  const what =
    schedule.kind === 'interval'
      ? 'schedule.every_ms'
      : schedule.kind === 'cron'
        ? "the cron's smallest gap between fires"
        : "the rule's smallest gap between fires";
  if (spread > spacing) return `must be at most ${spacing} ms (${what}); got ${spread}`;
  return undefined;
}

function parseRetry(raw: unknown, policies: FieldReader): RetryPolicy | undefined {
  if (raw === undefined || raw === null) return DEFAULT_RETRY_POLICY;
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    policies.fail('retry', 'must be an object');
    return undefined;
  }
  const o = raw as Record<string, unknown>;
  const r = policies.child('retry');
  r.noUnknownKeys(o, [
    'max_attempts',
    'initial_backoff_ms',
    'multiplier',
    'max_backoff_ms',
    'max_event_age_ms',
  ]);
  const d = DEFAULT_RETRY_POLICY;
  const maxAttempts = r.integer(o.max_attempts ?? d.maxAttempts, 'max_attempts', { min: 1, max: 100 });
  // Bounded so that no retry time (now + backoff) and no age cut-off leaves the instant range.
  const initialBackoffMs = r.integer(o.initial_backoff_ms ?? d.initialBackoffMs, 'initial_backoff_ms', {
    min: 0,
    max: MAX_RETRY_BACKOFF_MS,
  });
  const multiplier = r.number(o.multiplier ?? d.multiplier, 'multiplier', { min: 1, max: 100 });
  const maxBackoffMs = r.integer(o.max_backoff_ms ?? d.maxBackoffMs, 'max_backoff_ms', {
    min: 0,
    max: MAX_RETRY_BACKOFF_MS,
  });
  const maxEventAgeMs = r.integer(o.max_event_age_ms ?? d.maxEventAgeMs, 'max_event_age_ms', {
    min: 1_000,
    max: MAX_EVENT_AGE_MS,
  });
  policies.adopt(r);
  if (
    r.violations.length > 0 ||
    maxAttempts === undefined ||
    initialBackoffMs === undefined ||
    multiplier === undefined ||
    maxBackoffMs === undefined ||
    maxEventAgeMs === undefined
  )
    return undefined;
  return { maxAttempts, initialBackoffMs, multiplier, maxBackoffMs, maxEventAgeMs };
}

/** Schedule → wire JSON (the inverse of parseSchedule). */
export function scheduleToWire(s: Schedule): Record<string, JsonValue> {
  switch (s.kind) {
    case 'once':
      return { kind: 'once', at: s.at.toISOString() };
    case 'interval':
      return withBounds(s, { kind: 'interval', every_ms: s.everyMs, anchor: s.anchor.toISOString() });
    case 'cron':
      return withBounds(s, {
        kind: 'cron',
        expression: s.expression,
        time_zone: s.timeZone,
        dst_gap: s.dstGap,
        dst_repeat: s.dstRepeat,
      });
    case 'rrule':
      return withBounds(s, {
        kind: 'rrule',
        rule: s.rule,
        dtstart: s.dtstart,
        time_zone: s.timeZone,
        exdates: [...s.exdates],
        dst_gap: s.dstGap,
        dst_repeat: s.dstRepeat,
      });
  }
}

function withBounds(
  s: { startAt?: Date; endAt?: Date; maxFires?: number },
  o: Record<string, JsonValue>,
): Record<string, JsonValue> {
  if (s.startAt) o.start_at = s.startAt.toISOString();
  if (s.endAt) o.end_at = s.endAt.toISOString();
  if (s.maxFires !== undefined) o.max_fires = s.maxFires;
  return o;
}

/**
 * Wire JSON → Schedule, for data this service wrote itself (already validated). `jobId` places a
 * cron expression's `H` tokens (the job's id; see CronSchedule.hashSeed).
 */
export function scheduleFromWire(w: Record<string, unknown>, jobId?: string): Schedule {
  const bounds = {
    ...(w.start_at ? { startAt: new Date(w.start_at as string) } : {}),
    ...(w.end_at ? { endAt: new Date(w.end_at as string) } : {}),
    ...(w.max_fires !== undefined && w.max_fires !== null ? { maxFires: w.max_fires as number } : {}),
  };
  switch (w.kind) {
    case 'once':
      return { kind: 'once', at: new Date(w.at as string) };
    case 'interval':
      return {
        kind: 'interval',
        everyMs: w.every_ms as number,
        anchor: new Date(w.anchor as string),
        ...bounds,
      };
    case 'cron':
      return {
        kind: 'cron',
        expression: w.expression as string,
        timeZone: w.time_zone as string,
        dstGap: w.dst_gap as 'AUTO',
        dstRepeat: w.dst_repeat as 'AUTO',
        ...bounds,
        ...(jobId !== undefined && usesHashToken(w.expression as string) ? { hashSeed: jobId } : {}),
      };
    case 'rrule':
      return {
        kind: 'rrule',
        rule: w.rule as string,
        dtstart: w.dtstart as string,
        timeZone: w.time_zone as string,
        exdates: Array.isArray(w.exdates) ? (w.exdates as string[]) : [],
        dstGap: w.dst_gap as 'AUTO',
        dstRepeat: w.dst_repeat as 'AUTO',
        ...bounds,
      };
    default:
      throw new Error(`stored schedule has unknown kind ${String(w.kind)}`);
  }
}

/**
 * What no arithmetic can work with in a stored schedule — an instant that is not one or is outside
 * the instant range, an interval that is not a positive number of ms, a max_fires that is not a
 * positive integer — or undefined. The claim parks such a job (a row written around the validation:
 * an old row, a bug, a hand-made insert) instead of planning it into nonsense.
 */
export function storedScheduleProblem(s: Schedule): string | undefined {
  const instant = (at: Date | undefined, field: string) => {
    const problem = at === undefined ? undefined : instantRangeProblem(at);
    return problem === undefined ? undefined : `schedule.${field} ${problem}`;
  };
  if (s.kind === 'once') return instant(s.at, 'at');
  if (s.maxFires !== undefined && !(Number.isSafeInteger(s.maxFires) && s.maxFires >= 1))
    return `schedule.max_fires ${JSON.stringify(s.maxFires)} is not a positive integer`;
  const bounds = instant(s.startAt, 'start_at') ?? instant(s.endAt, 'end_at');
  if (s.kind === 'cron') return bounds;
  if (s.kind === 'rrule') {
    // The rule is compiled on every claim: one that no longer compiles parks the job instead of throwing there.
    const parsed = typeof s.rule === 'string' ? parseRrule(s.rule) : undefined;
    if (parsed === undefined || !parsed.ok)
      return `schedule.rule ${JSON.stringify(s.rule)} is not a valid rule`;
    if (typeof s.dtstart !== 'string' || parseLocalWallTime(s.dtstart) === undefined)
      return `schedule.dtstart ${JSON.stringify(s.dtstart)} is not a local wall time`;
    const badExdate = s.exdates.find((e) => typeof e !== 'string' || parseLocalWallTime(e) === undefined);
    if (badExdate !== undefined)
      return `schedule.exdates holds ${JSON.stringify(badExdate)}, not a local wall time`;
    return bounds;
  }
  if (!(Number.isSafeInteger(s.everyMs) && s.everyMs >= 1 && s.everyMs <= MAX_INTERVAL_MS))
    return `schedule.every_ms ${JSON.stringify(s.everyMs)} is not a positive integer of at most ${MAX_INTERVAL_MS}`;
  return instant(s.anchor, 'anchor') ?? bounds;
}

/**
 * What in a stored target the fire event's wires (Avro, JSON) cannot carry, or undefined. A fire
 * that cannot be encoded would fail the publish of its whole batch, every time: the claim parks
 * such a job instead.
 */
export function storedTargetProblem(t: Target): string | undefined {
  const headers = (h: unknown) =>
    h !== null && typeof h === 'object' && Object.values(h).every((v) => typeof v === 'string')
      ? undefined
      : 'target.headers must map names to strings';
  const int = (v: unknown, field: string, min: number, max: number) =>
    Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max
      ? undefined
      : `target.${field} ${JSON.stringify(v)} is not an integer from ${min} to ${max}`;
  if (t.type === 'webhook') {
    // (Not parsed here: this runs for every claimed job; the executor refuses a bad URL itself.)
    if (typeof t.url !== 'string') return 'target.url is not a string';
    if (!(HTTP_METHODS as readonly unknown[]).includes(t.method))
      return `target.method ${JSON.stringify(t.method)} is not one`;
    return (
      headers(t.headers) ??
      int(t.timeoutMs, 'timeout_ms', 100, 15 * 60_000) ??
      int(t.successStatus?.min, 'success_status.min', 100, 599) ??
      int(t.successStatus?.max, 'success_status.max', 100, 599)
    );
  }
  if (t.type === 'kafka') {
    if (typeof t.topic !== 'string' || t.topic.length === 0) return 'target.topic is not a topic name';
    if (t.key !== null && typeof t.key !== 'string') return 'target.key is not a string';
    return headers(t.headers);
  }
  return `target.type ${JSON.stringify((t as { type?: unknown }).type)} is not one`;
}

/** Target → wire JSON. */
export function targetToWire(t: Target): Record<string, JsonValue> {
  switch (t.type) {
    case 'webhook':
      return {
        type: 'webhook',
        url: t.url,
        method: t.method,
        headers: { ...t.headers },
        timeout_ms: t.timeoutMs,
        success_status: { ...t.successStatus },
      };
    case 'kafka':
      return { type: 'kafka', topic: t.topic, key: t.key, headers: { ...t.headers } };
  }
}

/** Wire JSON → Target, for data this service wrote itself. */
export function targetFromWire(w: Record<string, unknown>): Target {
  if (w.type === 'webhook') {
    return {
      type: 'webhook',
      url: w.url as string,
      method: w.method as 'POST',
      headers: (w.headers ?? {}) as Record<string, string>,
      timeoutMs: w.timeout_ms as number,
      successStatus: (w.success_status ?? { min: 200, max: 299 }) as { min: number; max: number },
    };
  }
  if (w.type === 'kafka') {
    return {
      type: 'kafka',
      topic: w.topic as string,
      key: (w.key ?? null) as string | null,
      headers: (w.headers ?? {}) as Record<string, string>,
    };
  }
  throw new Error(`stored target has unknown type ${String(w.type)}`);
}

/** Policies → wire JSON. */
export function policiesToWire(p: JobPolicies): Record<string, JsonValue> {
  return {
    retry: {
      max_attempts: p.retry.maxAttempts,
      initial_backoff_ms: p.retry.initialBackoffMs,
      multiplier: p.retry.multiplier,
      max_backoff_ms: p.retry.maxBackoffMs,
      max_event_age_ms: p.retry.maxEventAgeMs,
    },
    misfire: p.misfire,
    catch_up_window_ms: p.catchUpWindowMs,
    overlap: p.overlap,
    jitter_ms: p.jitterMs,
    spread_ms: p.spreadMs ?? 0,
    // Written only when set, so jobs that leave the SLO to the deployment read as before.
    ...(typeof p.toleranceMs === 'number' ? { tolerance_ms: p.toleranceMs } : {}),
    ...(p.sloMetrics ? { slo_metrics: true } : {}),
    // Written only when set, so jobs without calendars read as before.
    ...(p.calendars && p.calendars.length > 0
      ? { calendars: [...p.calendars], calendar_rule: p.calendarRule ?? 'SKIP' }
      : {}),
    // Written only when not ALL (the default), so jobs that publish every result read as before.
    ...(p.resultEvents && p.resultEvents !== 'ALL' ? { result_events: p.resultEvents } : {}),
  };
}

/** Wire JSON → policies, for data this service wrote itself. */
export function policiesFromWire(w: Record<string, unknown>): JobPolicies {
  const r = (w.retry ?? {}) as Record<string, number>;
  return {
    retry: {
      maxAttempts: r.max_attempts ?? DEFAULT_RETRY_POLICY.maxAttempts,
      initialBackoffMs: r.initial_backoff_ms ?? DEFAULT_RETRY_POLICY.initialBackoffMs,
      multiplier: r.multiplier ?? DEFAULT_RETRY_POLICY.multiplier,
      maxBackoffMs: r.max_backoff_ms ?? DEFAULT_RETRY_POLICY.maxBackoffMs,
      maxEventAgeMs: r.max_event_age_ms ?? DEFAULT_RETRY_POLICY.maxEventAgeMs,
    },
    misfire: (w.misfire ?? 'FIRE_ONCE') as JobPolicies['misfire'],
    catchUpWindowMs: (w.catch_up_window_ms ?? null) as number | null,
    overlap: (w.overlap ?? 'ALLOW') as JobPolicies['overlap'],
    jitterMs: (w.jitter_ms ?? 0) as number,
    spreadMs: (w.spread_ms ?? 0) as number,
    ...(typeof w.tolerance_ms === 'number' ? { toleranceMs: w.tolerance_ms } : {}),
    ...(w.slo_metrics === true ? { sloMetrics: true } : {}),
    ...(Array.isArray(w.calendars) && w.calendars.length > 0
      ? {
          calendars: w.calendars as string[],
          calendarRule: (w.calendar_rule ?? 'SKIP') as CalendarRule,
        }
      : {}),
    ...(w.result_events === 'FAILURES' || w.result_events === 'NONE'
      ? { resultEvents: w.result_events }
      : {}),
  };
}

/** A stored job as the API shows it. */
export function jobToWire(job: Job): Record<string, JsonValue> {
  return {
    job_id: job.jobId,
    tenant_id: job.tenantId,
    shard: job.shard,
    status: job.status,
    schedule: scheduleToWire(job.schedule),
    target: targetToWire(job.target),
    payload: job.payload,
    policies: policiesToWire(job.policies),
    labels: { ...job.labels },
    next_run_at: job.nextRunAt ? job.nextRunAt.toISOString() : null,
    next_nominal_at: job.nextNominalAt ? job.nextNominalAt.toISOString() : null,
    fence_token: job.fenceToken,
    fires_count: job.firesCount,
    version: job.version,
    created_at: job.createdAt.toISOString(),
    updated_at: job.updatedAt.toISOString(),
  };
}

export type { FieldViolation };
