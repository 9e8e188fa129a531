/**
 * The fire event as the `fires` table keeps it. A fire claimed by the schedule stores no event:
 * its event is its own columns (FireColumns) and its job's target and payload, which the claim
 * would otherwise copy into every fire row (measured: 15 % of the claim's statement). Should the
 * job's target or payload change, or the job be deleted, while such a fire may still be read (by
 * the outbox relay or a dead-letter replay), a trigger freezes the old pair into `fires.event` as a
 * FrozenTarget (migration 0032). Manual, replayed, backfilled and bulk fires store the whole
 * snapshot (FireEventSnapshot). `fireEventOfRow` reads any of the three forms. (The Kafka wire
 * format is another: the Avro codecs of libs/messaging, fed from schemas/.)
 */
import { fireIdOf } from './fence';
import { targetFromWire, targetToWire } from './job-wire';
import type { FireEvent } from './fire';
import type { JsonValue } from './job';

export interface FireEventSnapshot {
  job_id: string;
  tenant_id: string;
  fence_token: number;
  fire_id: string;
  scheduled_for: string;
  nominal_time: string;
  /** Absent in snapshots written before herd windows: 0. */
  spread_offset_ms?: number;
  attempt: number;
  target: Record<string, JsonValue>;
  payload: JsonValue;
}

/** FireEvent → the jsonb stored in fires.event (spread_offset_ms only when not 0). */
export function fireEventSnapshot(e: FireEvent): FireEventSnapshot {
  return {
    job_id: e.jobId,
    tenant_id: e.tenantId,
    fence_token: e.fenceToken,
    fire_id: e.fireId,
    scheduled_for: e.scheduledFor.toISOString(),
    nominal_time: e.nominalTime.toISOString(),
    ...(e.spreadOffsetMs ? { spread_offset_ms: e.spreadOffsetMs } : {}),
    attempt: e.attempt,
    target: targetToWire(e.target),
    payload: e.payload,
  };
}

/** fires.event → FireEvent. */
export function fireEventFromSnapshot(s: FireEventSnapshot): FireEvent {
  return {
    jobId: s.job_id,
    tenantId: s.tenant_id,
    fenceToken: Number(s.fence_token),
    fireId: s.fire_id,
    scheduledFor: new Date(s.scheduled_for),
    nominalTime: new Date(s.nominal_time),
    ...(s.spread_offset_ms ? { spreadOffsetMs: Number(s.spread_offset_ms) } : {}),
    attempt: s.attempt,
    target: targetFromWire(s.target),
    payload: s.payload,
  };
}

/** The target and payload a job had when they changed under a fire that may still be read. */
export interface FrozenTarget {
  target: Record<string, JsonValue>;
  payload: JsonValue;
}

/** A fire row's own columns, from which a claimed fire's event is rebuilt. */
export interface FireColumns {
  readonly job_id: string;
  readonly tenant_id: string;
  readonly fence_token: number | string;
  readonly scheduled_for: Date;
  readonly nominal_time: Date;
  readonly spread_offset_ms: number | string | null;
}

/**
 * A fire row → its FireEvent: the whole snapshot when one is stored; otherwise the row's columns
 * with the frozen target and payload, or else the job's current ones (unchanged since the claim,
 * or the trigger would have frozen them).
 */
export function fireEventOfRow(
  row: FireColumns,
  stored: FireEventSnapshot | FrozenTarget | null,
  job: FrozenTarget | null,
): FireEvent {
  if (stored && 'job_id' in stored) return fireEventFromSnapshot(stored);
  const source = stored ?? job;
  const fenceToken = Number(row.fence_token);
  if (!source)
    throw new Error(
      `fire ${fireIdOf({ jobId: row.job_id, fenceToken })} has no stored event and its job is gone`,
    );
  const spread = Number(row.spread_offset_ms ?? 0);
  return {
    jobId: row.job_id,
    tenantId: row.tenant_id,
    fenceToken,
    fireId: fireIdOf({ jobId: row.job_id, fenceToken }),
    scheduledFor: row.scheduled_for,
    nominalTime: row.nominal_time,
    ...(spread ? { spreadOffsetMs: spread } : {}),
    attempt: 1,
    target: targetFromWire(source.target),
    payload: source.payload,
  };
}
