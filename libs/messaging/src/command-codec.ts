/**
 * Schedule commands on the wire: Avro `io.tickwork.v1.ScheduleCommand` in the Confluent wire
 * format, registered under `<commands topic>-value` with compatibility BACKWARD. Decoding resolves
 * the writer's schema (by the id in the message) against ours, so producers on any compatible
 * version are read correctly, and sorts failures into poison (a reason for the rejected topic) and
 * trouble (the registry unreachable: retry, never reject).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { INSTANT_RANGE, type JsonValue } from '@tickwork/domain';
import { schemaDirectory } from '@tickwork/config';
import { ensureCompatibility } from './codecs';

/** Why a command's bytes could not be read. */
export type CommandDecodeFailure = 'UNDECODABLE' | 'UNKNOWN_SCHEMA' | 'SCHEMA_MISMATCH' | 'INVALID_COMMAND';

/** A decoded command, with the job definition in the shared snake_case wire form (not yet validated). */
export interface DecodedScheduleCommand {
  readonly commandId: string;
  /** UPSERT, PAUSE, RESUME, DELETE, TRIGGER, BACKFILL, or UNKNOWN (a type newer than this reader). */
  readonly type: string;
  readonly tenantId: string;
  readonly jobId: string;
  readonly job: Record<string, JsonValue> | null;
  readonly issuedAt: Date;
  readonly expectedVersion: number | null;
  /** BACKFILL's request in the API's wire form ({from, to, max_per_second?, skip_reasons?}), not yet validated. */
  readonly backfill?: Record<string, JsonValue> | null;
}

export type CommandDecodeResult =
  | { readonly ok: true; readonly command: DecodedScheduleCommand }
  | { readonly ok: false; readonly failure: CommandDecodeFailure; readonly reason: string };

const NS = 'io.tickwork.v1';

/** The ScheduleCommand schema text, from schemas/avro. */
export function readCommandSchema(): string {
  return readFileSync(join(schemaDirectory('avro'), 'ScheduleCommand.avsc'), 'utf8');
}

/** Encodes and decodes schedule commands through the schema registry. */
export class CommandCodec {
  private constructor(
    private readonly registry: SchemaRegistry,
    private readonly readerSchema: Record<string, unknown>,
    /** The id our schema got under the commands subject. */
    readonly schemaId: number,
  ) {}

  /** Registers ScheduleCommand under `<commandsTopic>-value` (compatibility BACKWARD) and returns a codec. */
  static async connect(registryUrl: string, commandsTopic: string): Promise<CommandCodec> {
    const registry = new SchemaRegistry({ host: registryUrl, retry: { retries: 5 } });
    const schema = readCommandSchema();
    const subject = `${commandsTopic}-value`;
    // Compatibility first: the client refuses to register into a subject whose level differs from
    // BACKWARD, which a scheduler starting at the same time would otherwise see in between (every
    // scheduler registers at boot: three started together failed one of them that way).
    await ensureCompatibility(registryUrl, subject, 'BACKWARD');
    const { id } = await registry.register({ type: SchemaType.AVRO, schema }, { subject });
    return new CommandCodec(registry, JSON.parse(schema) as Record<string, unknown>, id);
  }

  /**
   * Bytes → command. Poison (not the wire format, an unknown schema id, a schema that cannot be
   * read as ScheduleCommand, corrupt or incomplete data) is returned as a failure with a reason;
   * a registry that cannot be reached throws, so the caller retries instead of rejecting.
   */
  async decode(bytes: Buffer | null): Promise<CommandDecodeResult> {
    if (!bytes || bytes.length < 5 || bytes[0] !== 0) {
      return {
        ok: false,
        failure: 'UNDECODABLE',
        reason: 'not in the Confluent wire format (magic byte 0 + 4-byte schema id + Avro)',
      };
    }
    const schemaId = bytes.readInt32BE(1);
    let writer: unknown;
    try {
      writer = await this.registry.getSchema(schemaId);
    } catch (e) {
      const status = (e as { status?: unknown }).status;
      if (typeof status === 'number' && status >= 400 && status < 500) {
        return {
          ok: false,
          failure: 'UNKNOWN_SCHEMA',
          reason: `schema id ${schemaId} is not known to the schema registry (HTTP ${status})`,
        };
      }
      throw e;
    }
    // Avro schema resolution: can data written with the writer's schema be read as ScheduleCommand?
    const reader = (await this.registry.getSchema(this.schemaId)) as unknown as {
      createResolver?: (w: unknown) => unknown;
    };
    try {
      if (typeof reader.createResolver !== 'function')
        throw new Error(`schema id ${schemaId} is not an Avro schema`);
      reader.createResolver(writer);
    } catch (e) {
      return {
        ok: false,
        failure: 'SCHEMA_MISMATCH',
        reason: `schema id ${schemaId} cannot be read as ${NS}.ScheduleCommand: ${(e as Error).message}`,
      };
    }
    let value: unknown;
    try {
      value = await this.registry.decode(bytes, {
        [SchemaType.AVRO]: { readerSchema: this.readerSchema as never },
      });
    } catch (e) {
      return {
        ok: false,
        failure: 'UNDECODABLE',
        reason: `cannot decode with schema id ${schemaId}: ${(e as Error).message}`,
      };
    }
    // avsc reads an Avro map into a plain object, where a key "__proto__" sets nothing: the entry
    // would vanish without a word. Its bytes (zigzag length 9, then the text) still show it was sent.
    if (bytes.includes(PROTO_KEY_BYTES, 5) && !holdsText(value, '__proto__')) {
      return {
        ok: false,
        failure: 'INVALID_COMMAND',
        reason:
          'job: a map key "__proto__" (a label or a target header) is refused: it cannot be read as a key',
      };
    }
    return commandFromAvro(value);
  }

  /** A command → wire bytes under this codec's schema id (for Tickwork's own producers and tests). */
  async encode(command: DecodedScheduleCommand): Promise<Buffer> {
    return this.registry.encode(this.schemaId, commandToAvro(command));
  }
}

/** An Avro string "__proto__": its length 9 as a zigzag varint (0x12), then its UTF-8 bytes. */
const PROTO_KEY_BYTES = Buffer.concat([Buffer.from([0x12]), Buffer.from('__proto__', 'utf8')]);

/** Whether `text` is a string somewhere in the decoded value (a value, so not a dropped key). */
function holdsText(value: unknown, text: string, depth = 0): boolean {
  if (value === text) return true;
  if (!value || typeof value !== 'object' || depth > 64) return false;
  if (Buffer.isBuffer(value)) return false;
  return Object.values(value as Record<string, unknown>).some((v) => holdsText(v, text, depth + 1));
}

function commandFromAvro(value: unknown): CommandDecodeResult {
  const bad = (reason: string): CommandDecodeResult => ({ ok: false, failure: 'INVALID_COMMAND', reason });
  if (!value || typeof value !== 'object') return bad('decoded value is not a ScheduleCommand record');
  const v = value as Record<string, unknown>;
  for (const f of ['command_id', 'type', 'tenant_id', 'job_id'] as const) {
    if (typeof v[f] !== 'string') return bad(`${f} is missing`);
  }
  if (typeof v.issued_at !== 'number') return bad('issued_at is missing');
  let job: Record<string, JsonValue> | null = null;
  if (v.job !== null && v.job !== undefined) {
    try {
      job = jobSpecFromAvro(v.job as Record<string, unknown>);
    } catch (e) {
      return bad(`job: ${(e as Error).message}`);
    }
  }
  let backfill: Record<string, JsonValue> | null = null;
  if (v.backfill !== null && v.backfill !== undefined) {
    try {
      backfill = backfillSpecFromAvro(v.backfill as Record<string, unknown>);
    } catch (e) {
      return bad(`backfill: ${(e as Error).message}`);
    }
  }
  return {
    ok: true,
    command: {
      backfill,
      commandId: v.command_id as string,
      type: v.type as string,
      tenantId: v.tenant_id as string,
      jobId: v.job_id as string,
      job,
      issuedAt: new Date(v.issued_at),
      expectedVersion: typeof v.expected_version === 'number' ? v.expected_version : null,
    },
  };
}

/** timestamp-millis → ISO text; the schedule's validation checks the range and names the field. */
const iso = (ms: unknown, field: string): string | undefined => {
  if (typeof ms !== 'number') return undefined;
  const at = new Date(ms);
  if (Number.isNaN(at.getTime()))
    throw new Error(`schedule.${field}: ${ms} ms is not an instant within ${INSTANT_RANGE}`);
  return at.toISOString();
};

/** Drops undefined entries so the wire object carries only what was set. */
function compact(o: Record<string, JsonValue | undefined>): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out;
}

function unwrap(union: unknown, field: string): [string, Record<string, unknown>] {
  if (!union || typeof union !== 'object') throw new Error(`${field} is missing`);
  const entry = Object.entries(union as Record<string, unknown>)[0];
  if (!entry) throw new Error(`${field} is empty`);
  return [entry[0].replace(`${NS}.`, ''), entry[1] as Record<string, unknown>];
}

function jobSpecFromAvro(j: Record<string, unknown>): Record<string, JsonValue> {
  const [kind, s] = unwrap(j.schedule, 'schedule');
  const bounds = {
    start_at: iso(s.start_at, 'start_at'),
    end_at: iso(s.end_at, 'end_at'),
    max_fires: typeof s.max_fires === 'number' ? s.max_fires : undefined,
  };
  let schedule: Record<string, JsonValue>;
  if (kind === 'OnceSchedule') schedule = { kind: 'once', at: iso(s.at, 'at') ?? null };
  else if (kind === 'IntervalSchedule')
    schedule = compact({
      kind: 'interval',
      every_ms: s.every_ms as number,
      anchor: iso(s.anchor, 'anchor'),
      ...bounds,
    });
  else if (kind === 'CronSchedule')
    schedule = compact({
      kind: 'cron',
      expression: s.expression as string,
      time_zone: s.time_zone as string,
      dst_gap: s.dst_gap as string,
      dst_repeat: s.dst_repeat as string,
      ...bounds,
    });
  else if (kind === 'RruleSchedule')
    schedule = compact({
      kind: 'rrule',
      rule: s.rule as string,
      dtstart: s.dtstart as string,
      time_zone: s.time_zone as string,
      exdates: (s.exdates ?? []) as string[],
      dst_gap: s.dst_gap as string,
      dst_repeat: s.dst_repeat as string,
      ...bounds,
    });
  else throw new Error(`schedule has unknown type ${kind}`);

  const [type, t] = unwrap(j.target, 'target');
  let target: Record<string, JsonValue>;
  if (type === 'WebhookTarget') {
    target = {
      type: 'webhook',
      url: t.url as string,
      method: t.method as string,
      headers: (t.headers ?? {}) as Record<string, string>,
      timeout_ms: t.timeout_ms as number,
      success_status: { min: t.success_status_min as number, max: t.success_status_max as number },
    };
  } else if (type === 'KafkaTarget') {
    target = {
      type: 'kafka',
      topic: t.topic as string,
      key: (t.key ?? null) as string | null,
      headers: (t.headers ?? {}) as Record<string, string>,
    };
  } else throw new Error(`target has unknown type ${type}`);

  let payload: JsonValue = null;
  if (typeof j.payload === 'string') {
    try {
      payload = JSON.parse(j.payload) as JsonValue;
    } catch {
      throw new Error('payload is not valid JSON text');
    }
  }
  const out: Record<string, JsonValue> = {
    schedule,
    target,
    payload,
    labels: (j.labels ?? {}) as Record<string, string>,
  };
  const p = j.policies as Record<string, unknown> | null | undefined;
  if (p) {
    const r = p.retry as Record<string, unknown> | null | undefined;
    out.policies = compact({
      misfire: p.misfire as string,
      catch_up_window_ms: (p.catch_up_window_ms ?? null) as number | null,
      overlap: p.overlap as string,
      jitter_ms: p.jitter_ms as number,
      tolerance_ms: (p.tolerance_ms ?? null) as number | null,
      // false is the schema's default: sent only when set, so the wire form stays as before.
      slo_metrics: p.slo_metrics === true ? true : undefined,
      // Absent from commands written with a schema before herd windows: the reader's default, 0.
      spread_ms: (p.spread_ms ?? 0) as number,
      // Absent from commands written before business calendars: the reader's defaults, [] and SKIP.
      calendars: Array.isArray(p.calendars) && p.calendars.length > 0 ? (p.calendars as string[]) : undefined,
      calendar_rule:
        (Array.isArray(p.calendars) && p.calendars.length > 0) || (p.calendar_rule ?? 'SKIP') !== 'SKIP'
          ? (p.calendar_rule as string)
          : undefined,
      // Absent from commands written before result_events, and ALL (the default): left out, as before.
      result_events:
        p.result_events !== undefined && p.result_events !== 'ALL' ? (p.result_events as string) : undefined,
      retry: r
        ? {
            max_attempts: r.max_attempts as number,
            initial_backoff_ms: r.initial_backoff_ms as number,
            multiplier: r.multiplier as number,
            max_backoff_ms: r.max_backoff_ms as number,
            max_event_age_ms: r.max_event_age_ms as number,
          }
        : undefined,
    });
  }
  return out;
}

const ms = (raw: JsonValue | undefined): number | null => (typeof raw === 'string' ? Date.parse(raw) : null);

/** Avro BackfillSpec (a union branch, possibly wrapped in its type name) → the API's wire form. */
function backfillSpecFromAvro(raw: Record<string, unknown>): Record<string, JsonValue> {
  const b = (raw[`${NS}.BackfillSpec`] ?? raw) as Record<string, unknown>;
  const at = (v: unknown, field: string): string => {
    const d = typeof v === 'number' ? new Date(v) : undefined;
    if (!d || Number.isNaN(d.getTime()))
      throw new Error(`${field}: ${String(v)} ms is not an instant within ${INSTANT_RANGE}`);
    return d.toISOString();
  };
  const rate = unwrapNullable(b.max_per_second);
  const reasons = unwrapNullable(b.skip_reasons);
  return compact({
    from: at(b.from, 'from'),
    to: at(b.to, 'to'),
    max_per_second: typeof rate === 'number' ? rate : undefined,
    skip_reasons: Array.isArray(reasons) ? (reasons as string[]) : undefined,
  });
}

/** A nullable union's value: avsc gives it as is, or wrapped as {type: value}. */
function unwrapNullable(v: unknown): unknown {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length === 1) return entries[0]![1];
  }
  return v;
}

function commandToAvro(c: DecodedScheduleCommand): Record<string, unknown> {
  return {
    backfill: c.backfill
      ? {
          from: Date.parse(String(c.backfill.from)),
          to: Date.parse(String(c.backfill.to)),
          max_per_second: (c.backfill.max_per_second ?? null) as number | null,
          skip_reasons: (c.backfill.skip_reasons ?? null) as string[] | null,
        }
      : null,
    command_id: c.commandId,
    type: c.type,
    tenant_id: c.tenantId,
    job_id: c.jobId,
    job: c.job ? jobSpecToAvro(c.job) : null,
    issued_at: c.issuedAt.getTime(),
    expected_version: c.expectedVersion,
  };
}

/** Wire job definition → Avro JobSpec (the inverse of jobSpecFromAvro, for valid definitions). */
function jobSpecToAvro(j: Record<string, JsonValue>): Record<string, unknown> {
  const s = (j.schedule ?? {}) as Record<string, JsonValue>;
  const bounds = {
    start_at: ms(s.start_at),
    end_at: ms(s.end_at),
    max_fires: (s.max_fires ?? null) as number | null,
  };
  const schedule =
    s.kind === 'once'
      ? { [`${NS}.OnceSchedule`]: { at: ms(s.at) } }
      : s.kind === 'interval'
        ? { [`${NS}.IntervalSchedule`]: { every_ms: s.every_ms, anchor: ms(s.anchor), ...bounds } }
        : s.kind === 'rrule'
          ? {
              [`${NS}.RruleSchedule`]: {
                rule: s.rule,
                dtstart: s.dtstart,
                time_zone: s.time_zone ?? 'UTC',
                exdates: s.exdates ?? [],
                dst_gap: s.dst_gap ?? 'AUTO',
                dst_repeat: s.dst_repeat ?? 'AUTO',
                ...bounds,
              },
            }
          : {
              [`${NS}.CronSchedule`]: {
                expression: s.expression,
                time_zone: s.time_zone ?? 'UTC',
                dst_gap: s.dst_gap ?? 'AUTO',
                dst_repeat: s.dst_repeat ?? 'AUTO',
                ...bounds,
              },
            };
  const t = (j.target ?? {}) as Record<string, JsonValue>;
  const status = (t.success_status ?? {}) as Record<string, JsonValue>;
  const target =
    t.type === 'kafka'
      ? { [`${NS}.KafkaTarget`]: { topic: t.topic, key: t.key ?? null, headers: t.headers ?? {} } }
      : {
          [`${NS}.WebhookTarget`]: {
            url: t.url,
            method: t.method ?? 'POST',
            headers: t.headers ?? {},
            timeout_ms: t.timeout_ms ?? 10_000,
            success_status_min: status.min ?? 200,
            success_status_max: status.max ?? 299,
          },
        };
  const p = j.policies as Record<string, JsonValue> | undefined;
  const r = p?.retry as Record<string, JsonValue> | undefined;
  return {
    schedule,
    target,
    payload: j.payload === undefined || j.payload === null ? null : JSON.stringify(j.payload),
    policies: p
      ? {
          misfire: p.misfire ?? 'FIRE_ONCE',
          catch_up_window_ms: p.catch_up_window_ms ?? null,
          overlap: p.overlap ?? 'ALLOW',
          jitter_ms: p.jitter_ms ?? 0,
          tolerance_ms: p.tolerance_ms ?? null,
          slo_metrics: p.slo_metrics === true,
          spread_ms: p.spread_ms ?? 0,
          calendars: Array.isArray(p.calendars) ? p.calendars : [],
          calendar_rule: p.calendar_rule ?? 'SKIP',
          result_events: p.result_events ?? 'ALL',
          retry: r
            ? {
                max_attempts: r.max_attempts ?? 5,
                initial_backoff_ms: r.initial_backoff_ms ?? 1000,
                multiplier: r.multiplier ?? 2,
                max_backoff_ms: r.max_backoff_ms ?? 600_000,
                max_event_age_ms: r.max_event_age_ms ?? 86_400_000,
              }
            : null,
        }
      : null,
    labels: j.labels ?? {},
  };
}
