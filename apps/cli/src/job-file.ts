/**
 * A job file (the REST body format, snake_case, as YAML or JSON) → a tickwork.admin.v1 Job message.
 * Only the shape is checked here (what the message cannot carry); the server validates the rest and
 * names every bad field.
 */
import { CliError } from './client';

type Msg = Record<string, unknown>;
const JOB_FIELDS = ['job_id', 'tenant_id', 'schedule', 'target', 'payload', 'policies', 'labels'];

function obj(v: unknown, field: string): Msg {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new CliError(`${field} must be a mapping`);
  return v as Msg;
}

function ts(v: unknown, field: string): Msg | undefined {
  if (v === undefined || v === null) return undefined;
  const d = v instanceof Date ? v : typeof v === 'string' ? new Date(v) : undefined;
  if (!d || Number.isNaN(d.getTime()))
    throw new CliError(`${field} must be an ISO-8601 timestamp, e.g. 2026-12-01T09:00:00Z`);
  const ms = d.getTime();
  return { seconds: Math.floor(ms / 1000), nanos: (((ms % 1000) + 1000) % 1000) * 1e6 };
}

function enumOf(v: unknown, prefix: string): string | undefined {
  return typeof v === 'string' ? `${prefix}${v.toUpperCase()}` : undefined;
}

/** Drops undefined entries. */
function compact(o: Msg): Msg {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** JSON → google.protobuf.Value (camelCase: protobufjs' bundled well-known types). */
export function toValue(j: unknown): Msg {
  if (j === null || j === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof j === 'number') return { numberValue: j };
  if (typeof j === 'string') return { stringValue: j };
  if (typeof j === 'boolean') return { boolValue: j };
  if (j instanceof Date) return { stringValue: j.toISOString() };
  if (Array.isArray(j)) return { listValue: { values: j.map(toValue) } };
  return {
    structValue: { fields: Object.fromEntries(Object.entries(j as Msg).map(([k, v]) => [k, toValue(v)])) },
  };
}

/** A wire schedule → Schedule message. */
export function scheduleToProtoRequest(raw: unknown): Msg {
  const s = obj(raw, 'schedule');
  const bounds = {
    start_at: ts(s.start_at, 'schedule.start_at'),
    end_at: ts(s.end_at, 'schedule.end_at'),
    max_fires: s.max_fires,
  };
  switch (s.kind) {
    case 'once':
      return { once: compact({ at: ts(s.at, 'schedule.at') }) };
    case 'interval':
      return {
        interval: compact({ every_ms: s.every_ms, anchor: ts(s.anchor, 'schedule.anchor'), ...bounds }),
      };
    case 'cron':
      return {
        cron: compact({
          expression: s.expression,
          time_zone: s.time_zone,
          dst_gap: enumOf(s.dst_gap, 'DST_GAP_POLICY_'),
          dst_repeat: enumOf(s.dst_repeat, 'DST_REPEAT_POLICY_'),
          ...bounds,
        }),
      };
    case 'rrule':
      return {
        rrule: compact({
          rule: s.rule,
          dtstart: s.dtstart,
          time_zone: s.time_zone,
          exdates: s.exdates,
          dst_gap: enumOf(s.dst_gap, 'DST_GAP_POLICY_'),
          dst_repeat: enumOf(s.dst_repeat, 'DST_REPEAT_POLICY_'),
          ...bounds,
        }),
      };
    default:
      throw new CliError('schedule.kind must be once, interval, cron or rrule');
  }
}

function targetToProto(raw: unknown): Msg {
  const t = obj(raw, 'target');
  if (t.type === 'webhook') {
    return {
      webhook: compact({
        url: t.url,
        method: enumOf(t.method, 'HTTP_METHOD_'),
        headers: t.headers,
        timeout_ms: t.timeout_ms,
        success_status: t.success_status,
      }),
    };
  }
  if (t.type === 'kafka')
    return { kafka: compact({ topic: t.topic, key: t.key ?? undefined, headers: t.headers }) };
  throw new CliError('target.type must be webhook or kafka');
}

/** policies.tolerance_ms: a non-negative integer of ms, or absent/null for the deployment's default. */
function toleranceOf(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new CliError('policies.tolerance_ms must be a non-negative integer (milliseconds)');
  return v;
}

/** policies.slo_metrics: true or false. */
function sloMetricsOf(v: unknown): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new CliError('policies.slo_metrics must be true or false');
  return v;
}

function policiesToProto(raw: unknown): Msg {
  const p = obj(raw, 'policies');
  return compact({
    misfire: enumOf(p.misfire, 'MISFIRE_POLICY_'),
    catch_up_window_ms: p.catch_up_window_ms ?? undefined,
    overlap: enumOf(p.overlap, 'OVERLAP_POLICY_'),
    jitter_ms: p.jitter_ms,
    tolerance_ms: toleranceOf(p.tolerance_ms),
    slo_metrics: sloMetricsOf(p.slo_metrics),
    spread_ms: p.spread_ms,
    calendars: p.calendars,
    calendar_rule: enumOf(p.calendar_rule, 'CALENDAR_RULE_'),
    result_events: enumOf(p.result_events, 'RESULT_EVENTS_'),
    retry: p.retry === undefined ? undefined : obj(p.retry, 'policies.retry'),
  });
}

/** A job document (all fields optional, as for an update) → Job message; unknown fields are refused. */
export function jobToProtoRequest(raw: unknown): Msg {
  const j = obj(raw, 'the job file');
  const unknown = Object.keys(j).filter((k) => !JOB_FIELDS.includes(k));
  if (unknown.length > 0)
    throw new CliError(
      `the job file has unknown fields: ${unknown.join(', ')} (known: ${JOB_FIELDS.join(', ')})`,
    );
  return compact({
    job_id: j.job_id,
    tenant_id: j.tenant_id,
    schedule: j.schedule === undefined ? undefined : scheduleToProtoRequest(j.schedule),
    target: j.target === undefined ? undefined : targetToProto(j.target),
    payload: 'payload' in j ? toValue(j.payload) : undefined,
    policies: j.policies === undefined ? undefined : policiesToProto(j.policies),
    labels: j.labels,
  });
}

const CALENDAR_FIELDS = [
  'name',
  'description',
  'closed_weekdays',
  'holidays',
  'closed_dates',
  'open_dates',
  'holiday_source',
];

/** A calendar document (the REST body) → Calendar message; unknown fields are refused. */
export function calendarToProtoRequest(raw: unknown): Msg {
  const c = obj(raw, 'the calendar file');
  const unknown = Object.keys(c).filter((k) => !CALENDAR_FIELDS.includes(k));
  if (unknown.length > 0)
    throw new CliError(
      `the calendar file has unknown fields: ${unknown.join(', ')} (known: ${CALENDAR_FIELDS.join(', ')})`,
    );
  const source =
    c.holiday_source === undefined || c.holiday_source === null
      ? undefined
      : obj(c.holiday_source, 'holiday_source');
  return compact({
    name: c.name,
    description: c.description,
    // Absent: the server's default weekend; a list (even empty) is sent as given.
    closed_weekdays: c.closed_weekdays === undefined ? undefined : { weekdays: c.closed_weekdays },
    holidays: c.holidays,
    closed_dates: c.closed_dates,
    open_dates: c.open_dates,
    holiday_source: source,
  });
}
