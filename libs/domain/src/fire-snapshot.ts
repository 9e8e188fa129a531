/**
 * The fire event as stored in a `fires` row's `event` column, the one format for every fire:
 * claimed, manual, replayed and backfilled ones, all re-published from this column by the outbox
 * relay. This module is its only encoder: a claim binds `fireSnapshotHead` and the store adds the
 * job row's target and payload (which it already holds) under the keys `target` and `payload`.
 * (The Kafka wire format is another: the Avro codecs of libs/messaging, fed from schemas/.)
 */
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

/** A snapshot without the job's target and payload (which the claim's statement adds). */
export type FireSnapshotHead = Omit<FireEventSnapshot, 'target' | 'payload'>;

/** FireEvent → the stored snapshot's keys other than target and payload. */
export function fireSnapshotHead(e: FireEvent): FireSnapshotHead {
  return {
    job_id: e.jobId,
    tenant_id: e.tenantId,
    fence_token: e.fenceToken,
    fire_id: e.fireId,
    scheduled_for: e.scheduledFor.toISOString(),
    nominal_time: e.nominalTime.toISOString(),
    ...(e.spreadOffsetMs ? { spread_offset_ms: e.spreadOffsetMs } : {}),
    attempt: e.attempt,
  };
}

/** FireEvent → the jsonb stored in fires.event. */
export function fireEventSnapshot(e: FireEvent): FireEventSnapshot {
  return { ...fireSnapshotHead(e), target: targetToWire(e.target), payload: e.payload };
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
