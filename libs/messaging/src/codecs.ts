/**
 * The one serialization boundary: domain events ↔ Avro records ↔ Confluent wire format
 * (magic byte + schema id), with the schemas read from schemas/avro and registered in the
 * schema registry under the topic-name strategy (`<topic>-value`), compatibility BACKWARD.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { schemaDirectory } from '@tickwork/config';
import type { FireEvent, FireOutcome, FireResult, JsonValue, Target } from '@tickwork/domain';

/** A message whose bytes are not a valid event: it goes to a dead-letter topic with this reason. */
export class UndecodableMessageError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'UndecodableMessageError';
  }
}

export type SchemaName = 'FireEvent' | 'FireResult';

/** The Avro schema text of one event type. */
export function readSchema(name: SchemaName): string {
  return readFileSync(join(schemaDirectory('avro'), `${name}.avsc`), 'utf8');
}

export interface CodecTopics {
  /** Topics carrying FireEvent values (fires, retry tiers, dead letters). */
  readonly fireTopics: readonly string[];
  /** Topics carrying FireResult values. */
  readonly resultTopics: readonly string[];
}

/** Encodes and decodes Tickwork's events through the schema registry. */
export class EventCodecs {
  private constructor(
    private readonly registry: SchemaRegistry,
    private readonly schemaIds: ReadonlyMap<string, number>,
  ) {}

  /** Registers every topic's value schema (BACKWARD compatibility) and returns codecs bound to their ids. */
  static async connect(registryUrl: string, topics: CodecTopics): Promise<EventCodecs> {
    const registry = new SchemaRegistry({ host: registryUrl, retry: { retries: 5 } });
    const ids = new Map<string, number>();
    const plan: [string, SchemaName][] = [
      ...topics.fireTopics.map((t): [string, SchemaName] => [t, 'FireEvent']),
      ...topics.resultTopics.map((t): [string, SchemaName] => [t, 'FireResult']),
    ];
    for (const [topic, name] of plan) {
      const subject = `${topic}-value`;
      // Compatibility first: the client refuses to register into a subject whose level differs
      // from BACKWARD, which a concurrently starting process would otherwise see in between.
      await ensureCompatibility(registryUrl, subject, 'BACKWARD');
      const { id } = await registry.register(
        { type: SchemaType.AVRO, schema: readSchema(name) },
        { subject },
      );
      ids.set(topic, id);
    }
    return new EventCodecs(registry, ids);
  }

  private idFor(topic: string): number {
    const id = this.schemaIds.get(topic);
    if (id === undefined) throw new Error(`no schema registered for topic ${topic}`);
    return id;
  }

  /** FireEvent → wire bytes for `topic`. */
  async encodeFire(topic: string, e: FireEvent): Promise<Buffer> {
    return this.registry.encode(this.idFor(topic), fireToAvro(e));
  }

  /** Wire bytes → FireEvent; throws UndecodableMessageError for anything that is not one. */
  async decodeFire(bytes: Buffer | null): Promise<FireEvent> {
    return fireFromAvro(await this.decode(bytes, 'FireEvent'));
  }

  /** FireResult → wire bytes for `topic`. */
  async encodeResult(topic: string, r: FireResult): Promise<Buffer> {
    return this.registry.encode(this.idFor(topic), resultToAvro(r));
  }

  /** Wire bytes → FireResult; throws UndecodableMessageError for anything that is not one. */
  async decodeResult(bytes: Buffer | null): Promise<FireResult> {
    return resultFromAvro(await this.decode(bytes, 'FireResult'));
  }

  private async decode(bytes: Buffer | null, expected: SchemaName): Promise<Record<string, unknown>> {
    if (!bytes || bytes.length < 5 || bytes[0] !== 0)
      throw new UndecodableMessageError('not in the Confluent wire format (magic byte 0 + schema id)');
    let value: unknown;
    try {
      value = await this.registry.decode(bytes);
    } catch (e) {
      throw new UndecodableMessageError(
        `cannot decode with schema id ${bytes.readInt32BE(1)}: ${(e as Error).message}`,
      );
    }
    if (!value || typeof value !== 'object')
      throw new UndecodableMessageError(`decoded value is not a ${expected} record`);
    return value as Record<string, unknown>;
  }
}

/**
 * Sets a subject's compatibility level, idempotently. Several processes start at once and set
 * the same level; Apicurio answers a repeated PUT with 409 ("rule already exists") rather than
 * treating it as an upsert, so the current level is read first and re-checked after a conflict.
 */
export async function ensureCompatibility(
  registryUrl: string,
  subject: string,
  level: 'BACKWARD',
): Promise<void> {
  const url = `${registryUrl.replace(/\/$/, '')}/config/${encodeURIComponent(subject)}`;
  const current = async (): Promise<string | undefined> => {
    const res = await fetch(url);
    if (!res.ok) return undefined;
    const body = (await res.json()) as { compatibilityLevel?: string; compatibility?: string };
    return body.compatibilityLevel ?? body.compatibility;
  };
  if ((await current()) === level) return;
  const res = await fetch(url, {
    method: 'PUT',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ compatibility: level }),
  });
  if (res.ok) return;
  const text = await res.text();
  if (res.status === 409 && (await current()) === level) return;
  throw new Error(
    `schema registry refused compatibility ${level} for ${subject}: HTTP ${res.status} ${text}`,
  );
}

const NS = 'io.tickwork.v1';

function fireToAvro(e: FireEvent): Record<string, unknown> {
  return {
    job_id: e.jobId,
    tenant_id: e.tenantId,
    fence_token: e.fenceToken,
    fire_id: e.fireId,
    scheduled_for: e.scheduledFor.getTime(),
    nominal_time: e.nominalTime.getTime(),
    spread_offset_ms: e.spreadOffsetMs ?? 0,
    attempt: e.attempt,
    target: targetToAvro(e.target),
    payload: e.payload === null ? null : JSON.stringify(e.payload),
  };
}

function targetToAvro(t: Target): Record<string, unknown> {
  switch (t.type) {
    case 'webhook':
      return {
        [`${NS}.WebhookTarget`]: {
          url: t.url,
          method: t.method,
          headers: { ...t.headers },
          timeout_ms: t.timeoutMs,
          success_status_min: t.successStatus.min,
          success_status_max: t.successStatus.max,
        },
      };
    case 'kafka':
      return { [`${NS}.KafkaTarget`]: { topic: t.topic, key: t.key, headers: { ...t.headers } } };
  }
}

function fireFromAvro(v: Record<string, unknown>): FireEvent {
  const target = v.target as Record<string, Record<string, unknown>> | undefined;
  const webhook = target?.[`${NS}.WebhookTarget`];
  const kafka = target?.[`${NS}.KafkaTarget`];
  let decodedTarget: Target;
  if (webhook) {
    decodedTarget = {
      type: 'webhook',
      url: String(webhook.url),
      method: webhook.method as 'POST',
      headers: (webhook.headers ?? {}) as Record<string, string>,
      timeoutMs: Number(webhook.timeout_ms),
      successStatus: { min: Number(webhook.success_status_min), max: Number(webhook.success_status_max) },
    };
  } else if (kafka) {
    decodedTarget = {
      type: 'kafka',
      topic: String(kafka.topic),
      key: (kafka.key ?? null) as string | null,
      headers: (kafka.headers ?? {}) as Record<string, string>,
    };
  } else {
    throw new UndecodableMessageError('FireEvent has no known target');
  }
  let payload: JsonValue = null;
  if (typeof v.payload === 'string') {
    try {
      payload = JSON.parse(v.payload) as JsonValue;
    } catch {
      throw new UndecodableMessageError('FireEvent payload is not valid JSON');
    }
  }
  if (typeof v.job_id !== 'string' || typeof v.fire_id !== 'string')
    throw new UndecodableMessageError('value is not a FireEvent record');
  return {
    jobId: v.job_id,
    tenantId: String(v.tenant_id),
    fenceToken: Number(v.fence_token),
    fireId: v.fire_id,
    scheduledFor: new Date(Number(v.scheduled_for)),
    nominalTime: new Date(Number(v.nominal_time)),
    ...(Number(v.spread_offset_ms ?? 0) > 0 ? { spreadOffsetMs: Number(v.spread_offset_ms) } : {}),
    attempt: Number(v.attempt),
    target: decodedTarget,
    payload,
  };
}

function resultToAvro(r: FireResult): Record<string, unknown> {
  return {
    job_id: r.jobId,
    tenant_id: r.tenantId,
    fence_token: r.fenceToken,
    fire_id: r.fireId,
    scheduled_for: r.scheduledFor.getTime(),
    spread_offset_ms: r.spreadOffsetMs ?? 0,
    started_at: r.startedAt.getTime(),
    finished_at: r.finishedAt.getTime(),
    attempt: r.attempt,
    outcome: r.outcome,
    http_status: r.httpStatus,
    error: r.error,
    duration_ms: r.durationMs,
  };
}

function resultFromAvro(v: Record<string, unknown>): FireResult {
  if (typeof v.job_id !== 'string' || typeof v.outcome !== 'string')
    throw new UndecodableMessageError('value is not a FireResult record');
  return {
    jobId: v.job_id,
    tenantId: String(v.tenant_id),
    fenceToken: Number(v.fence_token),
    fireId: String(v.fire_id),
    scheduledFor: new Date(Number(v.scheduled_for)),
    ...(Number(v.spread_offset_ms ?? 0) > 0 ? { spreadOffsetMs: Number(v.spread_offset_ms) } : {}),
    startedAt: new Date(Number(v.started_at)),
    finishedAt: new Date(Number(v.finished_at)),
    attempt: Number(v.attempt),
    outcome: v.outcome as FireOutcome,
    httpStatus: (v.http_status ?? null) as number | null,
    error: (v.error ?? null) as string | null,
    durationMs: Number(v.duration_ms),
  };
}
