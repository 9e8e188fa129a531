/**
 * tickwork.admin.v1 messages (as @grpc/proto-loader gives them: snake_case keys, enum names as
 * strings, int64 as numbers, unset fields absent) ↔ the shared snake_case wire JSON the jobs service
 * validates, and domain values → response messages.
 */
import {
  calendarToWire,
  fireIdOf,
  jobToWire,
  maskTargetSecrets,
  type FireEvent,
  type Job,
  type JsonValue,
  type EditSide,
  type PreviewedOccurrence,
  type Run,
  type StoredCalendar,
  type DeadLetterEntry,
  type OccurrenceEntry,
} from '@tickwork/domain';
import { etagOf, type PreviewedFire, type UpdatePreview } from '@tickwork/jobs';

export interface ProtoTimestamp {
  seconds?: number;
  nanos?: number;
}

type Msg = Record<string, unknown>;

/**
 * Timestamp → ISO string (undefined when unset). The validation behind it checks the instant range
 * and names the field; one no JavaScript date can hold comes through as text it refuses.
 */
export function isoFromTimestamp(ts: unknown): string | undefined {
  if (!ts || typeof ts !== 'object') return undefined;
  const t = ts as ProtoTimestamp;
  const at = new Date((t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6));
  return Number.isNaN(at.getTime()) ? `${t.seconds ?? 0} seconds since the epoch` : at.toISOString();
}

/** Date → Timestamp (undefined for null). */
export function timestamp(d: Date | null | undefined): ProtoTimestamp | undefined {
  if (!d) return undefined;
  const ms = d.getTime();
  return { seconds: Math.floor(ms / 1000), nanos: (((ms % 1000) + 1000) % 1000) * 1e6 };
}

/**
 * An enum value name without its prefix; undefined for the UNSPECIFIED value or none. A number is
 * a value this proto does not define (proto-loader passes those through as numbers): it comes back
 * as its digits, which validation refuses with the field's allowed names instead of a default.
 */
export function fromEnum(value: unknown, prefix: string): string | undefined {
  if (typeof value === 'number') return String(value);
  if (typeof value !== 'string' || value.endsWith('_UNSPECIFIED')) return undefined;
  return value.startsWith(prefix) ? value.slice(prefix.length) : value;
}

function toEnum(value: string | null | undefined, prefix: string): string {
  return value ? `${prefix}${value}` : `${prefix}UNSPECIFIED`;
}

/**
 * google.protobuf.Value → JSON. The well-known types come from protobufjs' bundled definitions,
 * whose field names are camelCase (structValue, listValue, …) even with keepCase.
 */
export function jsonFromValue(v: unknown): JsonValue {
  if (!v || typeof v !== 'object') return null;
  const m = v as Msg;
  const kind: string =
    (typeof m.kind === 'string'
      ? m.kind
      : Object.keys(m).find((k) => k.endsWith('Value') || k.endsWith('_value'))) ?? '';
  switch (kind) {
    case 'nullValue':
    case 'null_value':
      return null;
    case 'numberValue':
    case 'number_value':
      return m[kind] as number;
    case 'stringValue':
    case 'string_value':
      return m[kind] as string;
    case 'boolValue':
    case 'bool_value':
      return m[kind] as boolean;
    case 'structValue':
    case 'struct_value':
      return jsonFromStruct(m[kind]);
    case 'listValue':
    case 'list_value':
      return (((m[kind] as Msg | undefined)?.values as unknown[] | undefined) ?? []).map(jsonFromValue);
    default:
      return null;
  }
}

function jsonFromStruct(s: unknown): { [k: string]: JsonValue } {
  const out: { [k: string]: JsonValue } = {};
  // defineProperty: a key "__proto__" is a key like any other, not the object's prototype.
  for (const [k, v] of Object.entries(((s as Msg | undefined)?.fields as Msg | undefined) ?? {}))
    Object.defineProperty(out, k, {
      value: jsonFromValue(v),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return out;
}

/** JSON → google.protobuf.Value. */
export function valueFromJson(j: JsonValue): Msg {
  if (j === null) return { nullValue: 'NULL_VALUE' };
  if (typeof j === 'number') return { numberValue: j };
  if (typeof j === 'string') return { stringValue: j };
  if (typeof j === 'boolean') return { boolValue: j };
  if (Array.isArray(j)) return { listValue: { values: j.map(valueFromJson) } };
  const fields: Msg = {};
  for (const [k, v] of Object.entries(j))
    Object.defineProperty(fields, k, {
      value: valueFromJson(v),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return { structValue: { fields } };
}

function compact(o: Record<string, JsonValue | undefined>): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out;
}

/** Schedule message → wire schedule (undefined when no kind is set). */
export function scheduleFromProto(s: unknown): Record<string, JsonValue> | undefined {
  if (!s || typeof s !== 'object') return undefined;
  const m = s as Msg;
  const bounds = (b: Msg) => ({
    start_at: isoFromTimestamp(b.start_at),
    end_at: isoFromTimestamp(b.end_at),
    max_fires: b.max_fires as number | undefined,
  });
  if (m.once) return compact({ kind: 'once', at: isoFromTimestamp((m.once as Msg).at) });
  if (m.interval) {
    const i = m.interval as Msg;
    return compact({
      kind: 'interval',
      every_ms: i.every_ms as number | undefined,
      anchor: isoFromTimestamp(i.anchor),
      ...bounds(i),
    });
  }
  if (m.cron) {
    const c = m.cron as Msg;
    return compact({
      kind: 'cron',
      expression: (c.expression as string | undefined) ?? '',
      time_zone: c.time_zone as string | undefined,
      dst_gap: fromEnum(c.dst_gap, 'DST_GAP_POLICY_'),
      dst_repeat: fromEnum(c.dst_repeat, 'DST_REPEAT_POLICY_'),
      ...bounds(c),
    });
  }
  if (m.rrule) {
    const r = m.rrule as Msg;
    return compact({
      kind: 'rrule',
      rule: (r.rule as string | undefined) ?? '',
      dtstart: (r.dtstart as string | undefined) || undefined,
      time_zone: (r.time_zone as string | undefined) || undefined,
      exdates: Array.isArray(r.exdates) && r.exdates.length > 0 ? (r.exdates as string[]) : undefined,
      dst_gap: fromEnum(r.dst_gap, 'DST_GAP_POLICY_'),
      dst_repeat: fromEnum(r.dst_repeat, 'DST_REPEAT_POLICY_'),
      ...bounds(r),
    });
  }
  return undefined;
}

function targetFromProto(t: unknown): Record<string, JsonValue> | undefined {
  if (!t || typeof t !== 'object') return undefined;
  const m = t as Msg;
  if (m.webhook) {
    const w = m.webhook as Msg;
    const status = w.success_status as Msg | undefined;
    return compact({
      type: 'webhook',
      url: (w.url as string | undefined) ?? '',
      method: fromEnum(w.method, 'HTTP_METHOD_'),
      headers: (w.headers ?? {}) as Record<string, string>,
      timeout_ms: w.timeout_ms as number | undefined,
      success_status: status
        ? { min: (status.min as number | undefined) ?? 0, max: (status.max as number | undefined) ?? 0 }
        : undefined,
    });
  }
  if (m.kafka) {
    const k = m.kafka as Msg;
    return compact({
      type: 'kafka',
      topic: (k.topic as string | undefined) ?? '',
      key: k.key as string | undefined,
      headers: (k.headers ?? {}) as Record<string, string>,
    });
  }
  return undefined;
}

function policiesFromProto(p: unknown): Record<string, JsonValue> | undefined {
  if (!p || typeof p !== 'object') return undefined;
  const m = p as Msg;
  const r = m.retry as Msg | undefined;
  return compact({
    misfire: fromEnum(m.misfire, 'MISFIRE_POLICY_'),
    catch_up_window_ms: m.catch_up_window_ms as number | undefined,
    overlap: fromEnum(m.overlap, 'OVERLAP_POLICY_'),
    jitter_ms: m.jitter_ms as number | undefined,
    tolerance_ms: m.tolerance_ms as number | undefined,
    slo_metrics: m.slo_metrics as boolean | undefined,
    spread_ms: m.spread_ms as number | undefined,
    calendars: Array.isArray(m.calendars) && m.calendars.length > 0 ? (m.calendars as string[]) : undefined,
    calendar_rule: fromEnum(m.calendar_rule, 'CALENDAR_RULE_'),
    result_events: fromEnum(m.result_events, 'RESULT_EVENTS_'),
    retry: r
      ? compact({
          max_attempts: r.max_attempts as number | undefined,
          initial_backoff_ms: r.initial_backoff_ms as number | undefined,
          multiplier: r.multiplier as number | undefined,
          max_backoff_ms: r.max_backoff_ms as number | undefined,
          max_event_age_ms: r.max_event_age_ms as number | undefined,
        })
      : undefined,
  });
}

/** The definition fields of a Job message as wire JSON (output-only fields are ignored). */
export function jobDefinitionFromProto(job: unknown): Record<string, JsonValue> {
  const m = (job && typeof job === 'object' ? job : {}) as Msg;
  return compact({
    job_id: (m.job_id as string | undefined) || undefined,
    tenant_id: (m.tenant_id as string | undefined) || undefined,
    schedule: scheduleFromProto(m.schedule),
    target: targetFromProto(m.target),
    payload: m.payload === undefined ? undefined : jsonFromValue(m.payload),
    policies: policiesFromProto(m.policies),
    labels: (m.labels ?? {}) as Record<string, string>,
  });
}

/**
 * A field path of the wire form as a path in the request message: `schedule.time_zone` of a cron
 * schedule is `job.schedule.cron.time_zone`.
 */
export function protoFieldPath(prefix: string, wirePath: string, wire: Record<string, JsonValue>): string {
  const schedule = wire.schedule as Record<string, JsonValue> | undefined;
  const target = wire.target as Record<string, JsonValue> | undefined;
  const join = (...parts: string[]) => parts.filter((p) => p.length > 0).join('.');
  if (wirePath.startsWith('update_mask') || wirePath === 'etag' || wirePath === 'dry_run_count')
    return wirePath;
  if (wirePath === 'schedule.kind' || wirePath === 'target.type')
    return join(prefix, wirePath.split('.')[0]!);
  if (wirePath.startsWith('schedule.') && typeof schedule?.kind === 'string')
    return join(prefix, 'schedule', schedule.kind, wirePath.slice('schedule.'.length));
  if (wirePath.startsWith('target.') && typeof target?.type === 'string')
    return join(prefix, 'target', target.type, wirePath.slice('target.'.length));
  return join(prefix, wirePath);
}

function scheduleToProto(w: Record<string, JsonValue>): Msg {
  const ts = (v: JsonValue | undefined) => (typeof v === 'string' ? timestamp(new Date(v)) : undefined);
  const bounds = {
    start_at: ts(w.start_at),
    end_at: ts(w.end_at),
    ...(typeof w.max_fires === 'number' ? { max_fires: w.max_fires } : {}),
  };
  if (w.kind === 'once') return { once: { at: ts(w.at) } };
  if (w.kind === 'interval') return { interval: { every_ms: w.every_ms, anchor: ts(w.anchor), ...bounds } };
  if (w.kind === 'rrule')
    return {
      rrule: {
        rule: w.rule,
        dtstart: w.dtstart,
        time_zone: w.time_zone,
        exdates: w.exdates ?? [],
        dst_gap: toEnum(w.dst_gap as string, 'DST_GAP_POLICY_'),
        dst_repeat: toEnum(w.dst_repeat as string, 'DST_REPEAT_POLICY_'),
        ...bounds,
      },
    };
  return {
    cron: {
      expression: w.expression,
      time_zone: w.time_zone,
      dst_gap: toEnum(w.dst_gap as string, 'DST_GAP_POLICY_'),
      dst_repeat: toEnum(w.dst_repeat as string, 'DST_REPEAT_POLICY_'),
      ...bounds,
    },
  };
}

function targetToProto(w: Record<string, JsonValue>): Msg {
  if (w.type === 'kafka')
    return {
      kafka: { topic: w.topic, headers: w.headers, ...(typeof w.key === 'string' ? { key: w.key } : {}) },
    };
  return {
    webhook: {
      url: w.url,
      method: toEnum(w.method as string, 'HTTP_METHOD_'),
      headers: w.headers,
      timeout_ms: w.timeout_ms,
      success_status: w.success_status,
    },
  };
}

function policiesToProto(w: Record<string, JsonValue>): Msg {
  return {
    misfire: toEnum(w.misfire as string, 'MISFIRE_POLICY_'),
    overlap: toEnum(w.overlap as string, 'OVERLAP_POLICY_'),
    jitter_ms: w.jitter_ms,
    spread_ms: w.spread_ms ?? 0,
    ...(typeof w.catch_up_window_ms === 'number' ? { catch_up_window_ms: w.catch_up_window_ms } : {}),
    ...(typeof w.tolerance_ms === 'number' ? { tolerance_ms: w.tolerance_ms } : {}),
    ...(w.slo_metrics === true ? { slo_metrics: true } : {}),
    calendars: Array.isArray(w.calendars) ? w.calendars : [],
    calendar_rule: toEnum((w.calendar_rule as string | undefined) ?? null, 'CALENDAR_RULE_'),
    // Stored only when not ALL: shown as ALL, the job's actual choice, rather than UNSPECIFIED.
    result_events: toEnum((w.result_events as string | undefined) ?? 'ALL', 'RESULT_EVENTS_'),
    retry: w.retry,
  };
}

/** A stored job (and optionally its last run) as a Job message. */
export function jobToProto(job: Job, lastRun?: Run | null): Msg {
  const w = jobToWire(job);
  return {
    job_id: job.jobId,
    tenant_id: job.tenantId,
    schedule: scheduleToProto(w.schedule as Record<string, JsonValue>),
    target: targetToProto(maskTargetSecrets(w.target as Record<string, JsonValue>)),
    payload: valueFromJson(job.payload),
    policies: policiesToProto(w.policies as Record<string, JsonValue>),
    labels: { ...job.labels },
    status: toEnum(job.status, 'JOB_STATUS_'),
    shard: job.shard,
    next_run_at: timestamp(job.nextRunAt),
    next_nominal_at: timestamp(job.nextNominalAt),
    fence_token: job.fenceToken,
    fires_count: job.firesCount,
    version: job.version,
    etag: etagOf(job),
    create_time: timestamp(job.createdAt),
    update_time: timestamp(job.updatedAt),
    ...(job.pausedUntil ? { paused_until: timestamp(job.pausedUntil) } : {}),
    ...(lastRun ? { last_run: runToProto(lastRun) } : {}),
  };
}

/** A dry-run update as a Job message (the job as the edit would leave it) with its edit_preview. */
export function updatePreviewToProto(p: UpdatePreview): Msg {
  const i = p.impact;
  const occurrence = (o: PreviewedOccurrence): Msg => ({
    nominal_time: timestamp(o.nominalTime),
    scheduled_for: timestamp(o.scheduledFor),
    dst_shift_ms: o.dstShiftMs ?? 0,
    calendar_shift_ms: o.calendarShiftMs ?? 0,
    catch_up: o.catchUp,
    claimed: o.claimed,
  });
  const side = (s: EditSide): Msg => ({
    status: toEnum(s.status, 'JOB_STATUS_'),
    occurrences: s.occurrences.map(occurrence),
    due: {
      due: s.due.due,
      on_resume: s.due.onResume,
      catch_up_fires: s.due.catchUpFires,
      coalesced: s.due.coalesced,
      skipped: s.due.skipped.map((k) => ({
        reason: k.reason,
        first_nominal_time: timestamp(k.firstNominal),
        last_nominal_time: timestamp(k.lastNominal),
        occurrences: k.occurrences,
      })),
    },
  });
  return {
    ...jobToProto(p.edited),
    edit_preview: {
      current_version: p.current.version,
      count: p.count,
      replanned: i.replanned,
      before: side(i.before),
      after: side(i.after),
      appearing: i.appearing.map(occurrence),
      disappearing: i.disappearing.map(occurrence),
      ...(i.comparedUntil ? { compared_until: timestamp(i.comparedUntil) } : {}),
      moved: i.moved.map((m) => ({ before: occurrence(m.before), after: occurrence(m.after) })),
      claimed_ahead: i.claimedAhead.map((c) => ({
        fence_token: c.fenceToken,
        fire_id: fireIdOf({ jobId: p.current.jobId, fenceToken: c.fenceToken }),
        nominal_time: timestamp(c.nominalTime),
        scheduled_for: timestamp(c.scheduledFor),
        dst_shift_ms: c.dstShiftMs,
        ...(c.jobVersion !== null ? { job_version: c.jobVersion } : {}),
        enqueued: c.enqueued,
        in_new_schedule: c.inNewSchedule,
      })),
    },
  };
}

/** A run as a Run message (trace_id empty when the ledger has no trace for it). */
export function runToProto(
  run: Run & { readonly traceId?: string | null; readonly trigger?: string | null },
): Msg {
  return {
    job_id: run.jobId,
    fence_token: run.fenceToken,
    fire_id: run.fireId,
    tenant_id: run.tenantId,
    status: toEnum(run.status, 'RUN_STATUS_'),
    attempt: run.attempt,
    nominal_time: timestamp(run.nominalTime),
    scheduled_for: timestamp(run.scheduledFor),
    started_at: timestamp(run.startedAt),
    finished_at: timestamp(run.finishedAt),
    ...(run.httpStatus !== null ? { http_status: run.httpStatus } : {}),
    error: run.error ?? '',
    ...(typeof run.jobVersion === 'number' ? { job_version: run.jobVersion } : {}),
    trace_id: run.traceId ?? '',
    spread_offset_ms: run.spreadOffsetMs ?? 0,
    trigger: toEnum(run.trigger, 'FIRE_TRIGGER_'),
  };
}

const SKIP_OUTCOME: Record<string, string> = { COALESCED: 'COALESCED', OVERLAP: 'DEFERRED' };

/** An occurrence ledger entry as an Occurrence message. */
export function occurrenceToProto(o: OccurrenceEntry, jobId: string): Msg {
  if (o.kind === 'FIRE') {
    return {
      outcome: 'OCCURRENCE_OUTCOME_FIRED',
      nominal_time: timestamp(o.nominalTime),
      last_nominal_time: timestamp(o.nominalTime),
      occurrences: 1,
      fence_token: o.fenceToken,
      fire_id: fireIdOf({ jobId, fenceToken: o.fenceToken }),
      trigger: toEnum(o.trigger, 'FIRE_TRIGGER_'),
      scheduled_for: timestamp(o.scheduledFor),
      claimed_at: timestamp(o.claimedAt),
      enqueued_at: timestamp(o.enqueuedAt),
      run_status: toEnum(o.runStatus, 'RUN_STATUS_'),
      recorded_at: timestamp(o.claimedAt),
      ...(o.jobVersion !== null ? { job_version: o.jobVersion } : {}),
      ...(o.slo ? { reason: o.slo.reason } : {}),
      ...(o.slo && o.slo.latenessMs !== null ? { lateness_ms: o.slo.latenessMs } : {}),
      spread_offset_ms: o.spreadOffsetMs,
      ...(o.calendarShift
        ? {
            calendar: {
              reason: 'CALENDAR_SHIFT',
              ...calendarRef(o.calendarShift.calendar),
              shift_ms: o.calendarShift.shiftMs,
            },
          }
        : {}),
    };
  }
  return {
    outcome: `OCCURRENCE_OUTCOME_${SKIP_OUTCOME[o.reason] ?? 'SKIPPED'}`,
    nominal_time: timestamp(o.firstNominal),
    last_nominal_time: timestamp(o.lastNominal),
    occurrences: o.occurrences,
    reason: o.reason,
    recorded_at: timestamp(o.recordedAt),
    ...(o.jobVersion !== null ? { job_version: o.jobVersion } : {}),
    ...(o.calendar ? { calendar: { reason: 'CALENDAR_SKIP', ...calendarRef(o.calendar) } } : {}),
  };
}

/** `name@version` as the ledger records a calendar. */
function calendarRef(ref: string): { name: string; version: number } {
  const at = ref.lastIndexOf('@');
  return { name: ref.slice(0, at), version: Number(ref.slice(at + 1)) };
}

/** A Calendar message as the wire JSON the calendar service reads (output-only fields dropped). */
export function calendarFromProto(c: unknown): Record<string, JsonValue> {
  const m = (c && typeof c === 'object' ? c : {}) as Msg;
  const weekdays = m.closed_weekdays as Msg | null | undefined;
  const source = m.holiday_source as Msg | null | undefined;
  const list = (v: unknown) => (Array.isArray(v) ? (v as JsonValue[]) : []);
  return compact({
    name: (m.name as string | undefined) ?? undefined,
    description: (m.description as string | undefined) || undefined,
    closed_weekdays: weekdays ? list(weekdays.weekdays) : undefined,
    holidays: list(m.holidays).map((h) => {
      const x = h as Msg;
      return { date: (x.date ?? '') as string, name: (x.name ?? '') as string };
    }),
    closed_dates: list(m.closed_dates),
    open_dates: list(m.open_dates),
    holiday_source: source
      ? compact({
          country: (source.country as string | undefined) ?? '',
          region: (source.region as string | undefined) || undefined,
          years: list(source.years),
        })
      : undefined,
  });
}

/** A stored calendar as a Calendar message. */
export function calendarToProto(c: StoredCalendar): Msg {
  const w = calendarToWire(c);
  const source = w.holiday_source as Record<string, JsonValue> | null;
  return {
    name: c.name,
    tenant_id: c.tenantId ?? '',
    shared: c.tenantId === null,
    version: c.version,
    description: w.description,
    closed_weekdays: { weekdays: w.closed_weekdays },
    holidays: w.holidays,
    closed_dates: w.closed_dates,
    open_dates: w.open_dates,
    ...(source ? { holiday_source: { ...source, region: source.region ?? '' } } : {}),
    generated_holidays: w.generated_holidays,
    created_at: timestamp(c.createdAt),
    updated_at: timestamp(c.updatedAt),
  };
}

/** A dead letter as a DeadLetter message. */
export function deadLetterToProto(d: DeadLetterEntry): Msg {
  const r = d.run;
  return {
    fire_id: r.fireId,
    job_id: r.jobId,
    fence_token: r.fenceToken,
    tenant_id: r.tenantId,
    attempt: r.attempt,
    nominal_time: timestamp(r.nominalTime),
    scheduled_for: timestamp(r.scheduledFor),
    dead_lettered_at: timestamp(d.deadLetteredAt),
    ...(r.httpStatus !== null ? { http_status: r.httpStatus } : {}),
    error: r.error ?? '',
    replay_fire_id:
      d.replayFenceToken !== null ? fireIdOf({ jobId: r.jobId, fenceToken: d.replayFenceToken }) : '',
    replayed_at: timestamp(d.replayedAt),
    ...(typeof r.jobVersion === 'number' ? { job_version: r.jobVersion } : {}),
    trace_id: r.traceId ?? '',
  };
}

/** A new fire (TriggerJob, ReplayDeadLetter) as its response message. */
export function fireToProto(f: FireEvent): Msg {
  return { fire_id: f.fireId, fence_token: f.fenceToken, scheduled_for: timestamp(f.scheduledFor) };
}

/** A previewed fire as a PreviewedFire message. */
export function previewToProto(p: PreviewedFire): Msg {
  return {
    at: timestamp(p.at),
    local_time: p.localTime,
    time_zone: p.timeZone,
    shifted_from: p.shiftedFrom ?? '',
    ...(p.slotAt !== null ? { slot_at: timestamp(p.slotAt), spread_offset_ms: p.spreadOffsetMs ?? 0 } : {}),
    ...(p.calendar
      ? {
          calendar: {
            reason: p.calendar.reason,
            name: p.calendar.name,
            version: p.calendar.version,
            why: p.calendar.why,
            shift_ms: p.calendar.shiftMs ?? 0,
          },
        }
      : {}),
  };
}
