/**
 * The fire event as stored in a `fires` row's `event` column, the one format for every fire:
 * claimed, manual, replayed and backfilled ones, all re-published from this column by the outbox
 * relay. `FireEventSnapshot` is the one definition of its shape: `fireEventSnapshot` encodes it
 * here, and the claim's statement (libs/store/src/sql/write-claims.ts) projects the same keys from
 * the values the claim builder bound (fire ids, ISO instants) and the job row's target and payload,
 * through a map typed against this interface. (The Kafka wire format is another: the Avro codecs
 * of libs/messaging, fed from schemas/.)
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
