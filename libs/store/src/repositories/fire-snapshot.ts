/**
 * The fire event as stored in a `fires` row's `event` column, the one format for every fire:
 * claimed ones (built in SQL by FireRepository.claimDueJobs, which must produce these same keys),
 * manual and replayed ones, all re-published from this column by the outbox relay.
 */
import { targetFromWire, targetToWire, type FireEvent, type JsonValue } from '@tickwork/domain';

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

/** FireEvent → the jsonb stored in fires.event. */
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
