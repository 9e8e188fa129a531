/** Domain values → the REST API's snake_case JSON. */
import {
  fireIdOf,
  jobToWire,
  maskTargetSecrets,
  type FireEvent,
  type Job,
  type JsonValue,
  type Run,
} from '@tickwork/domain';
import { etagOf, type PreviewedFire } from '@tickwork/jobs';
import type { DeadLetterEntry, OccurrenceEntry } from '@tickwork/store';

type Wire = Record<string, JsonValue>;
const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** A job as REST shows it: the stored job (secret headers masked), its etag, and (GetJob) its last run. */
export function jobJson(job: Job, lastRun?: Run | null): Wire {
  const wire = jobToWire(job);
  return {
    ...wire,
    target: maskTargetSecrets(wire.target as Wire),
    etag: etagOf(job),
    ...(job.pausedUntil ? { paused_until: job.pausedUntil.toISOString() } : {}),
    ...(lastRun !== undefined ? { last_run: lastRun ? runJson(lastRun) : null } : {}),
  };
}

/** A run. */
export function runJson(run: Run): Wire {
  return {
    job_id: run.jobId,
    fire_id: run.fireId,
    fence_token: run.fenceToken,
    tenant_id: run.tenantId,
    status: run.status,
    attempt: run.attempt,
    nominal_time: run.nominalTime.toISOString(),
    scheduled_for: run.scheduledFor.toISOString(),
    started_at: iso(run.startedAt),
    finished_at: iso(run.finishedAt),
    http_status: run.httpStatus,
    error: run.error,
    spread_offset_ms: run.spreadOffsetMs ?? 0,
    // From the nominal time under a herd window (the slot's offset counts), else from scheduled_for.
    lateness_ms: run.startedAt
      ? run.startedAt.getTime() - run.scheduledFor.getTime() + (run.spreadOffsetMs ?? 0)
      : null,
  };
}

/** An occurrence ledger entry. */
export function occurrenceJson(o: OccurrenceEntry, jobId: string): Wire {
  if (o.kind === 'FIRE') {
    return {
      outcome: 'FIRED',
      nominal_time: o.nominalTime.toISOString(),
      last_nominal_time: o.nominalTime.toISOString(),
      occurrences: 1,
      reason: null,
      fence_token: o.fenceToken,
      fire_id: fireIdOf({ jobId, fenceToken: o.fenceToken }),
      trigger: o.trigger,
      scheduled_for: o.scheduledFor.toISOString(),
      spread_offset_ms: o.spreadOffsetMs,
      claimed_at: o.claimedAt.toISOString(),
      enqueued_at: iso(o.enqueuedAt),
      run_status: o.runStatus,
    };
  }
  return {
    outcome: o.reason === 'COALESCED' ? 'COALESCED' : o.reason === 'OVERLAP' ? 'DEFERRED' : 'SKIPPED',
    nominal_time: o.firstNominal.toISOString(),
    last_nominal_time: o.lastNominal.toISOString(),
    occurrences: o.occurrences,
    reason: o.reason,
    recorded_at: o.recordedAt.toISOString(),
  };
}

/** A dead letter. */
export function deadLetterJson(d: DeadLetterEntry): Wire {
  return {
    ...runJson(d.run),
    dead_lettered_at: d.deadLetteredAt.toISOString(),
    replay_fire_id:
      d.replayFenceToken !== null ? fireIdOf({ jobId: d.run.jobId, fenceToken: d.replayFenceToken }) : null,
    replayed_at: iso(d.replayedAt),
  };
}

/** A fire created by TriggerJob or ReplayDeadLetter. */
export function fireJson(f: FireEvent): Wire {
  return { fire_id: f.fireId, fence_token: f.fenceToken, scheduled_for: f.scheduledFor.toISOString() };
}

/** A previewed fire time. */
export function previewJson(p: PreviewedFire): Wire {
  return {
    at: p.at.toISOString(),
    local_time: p.localTime,
    time_zone: p.timeZone,
    ...(p.shiftedFrom !== null ? { shifted_from: p.shiftedFrom } : {}),
    ...(p.slotAt !== null
      ? { slot_at: p.slotAt.toISOString(), spread_offset_ms: p.spreadOffsetMs ?? 0 }
      : {}),
  };
}
