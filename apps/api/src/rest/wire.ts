/** Domain values → the REST API's snake_case JSON. */
import {
  fireIdOf,
  jobToWire,
  maskTargetSecrets,
  type FireEvent,
  type Job,
  type JsonValue,
  type EditSide,
  type PreviewedOccurrence,
  type Run,
  type DeadLetterEntry,
  type OccurrenceEntry,
} from '@tickwork/domain';
import { etagOf, type PreviewedFire, type UpdatePreview } from '@tickwork/jobs';

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

/** A run; `trace_id` is its fire's trace when the ledger read it (null when untraced or purged). */
export function runJson(
  run: Run & { readonly traceId?: string | null; readonly trigger?: string | null },
): Wire {
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
    job_version: run.jobVersion ?? null,
    trace_id: run.traceId ?? null,
    trigger: run.trigger ?? null,
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
      // LATE or MISSED once the scheduler judged the fire against its tolerance; null otherwise.
      reason: o.slo?.reason ?? null,
      ...(o.slo ? { lateness_ms: o.slo.latenessMs } : {}),
      fence_token: o.fenceToken,
      fire_id: fireIdOf({ jobId, fenceToken: o.fenceToken }),
      trigger: o.trigger,
      scheduled_for: o.scheduledFor.toISOString(),
      spread_offset_ms: o.spreadOffsetMs,
      claimed_at: o.claimedAt.toISOString(),
      enqueued_at: iso(o.enqueuedAt),
      run_status: o.runStatus,
      job_version: o.jobVersion,
      // CALENDAR_SHIFT: a business calendar moved this occurrence off a closed day.
      calendar: o.calendarShift
        ? {
            reason: 'CALENDAR_SHIFT',
            ...calendarRefJson(o.calendarShift.calendar),
            shift_ms: o.calendarShift.shiftMs,
          }
        : null,
    };
  }
  return {
    outcome: o.reason === 'COALESCED' ? 'COALESCED' : o.reason === 'OVERLAP' ? 'DEFERRED' : 'SKIPPED',
    nominal_time: o.firstNominal.toISOString(),
    last_nominal_time: o.lastNominal.toISOString(),
    occurrences: o.occurrences,
    reason: o.reason,
    recorded_at: o.recordedAt.toISOString(),
    job_version: o.jobVersion,
    calendar: o.calendar ? { reason: 'CALENDAR_SKIP', ...calendarRefJson(o.calendar) } : null,
  };
}

/** `name@version` as the ledger records a calendar, as JSON {name, version}. */
function calendarRefJson(ref: string): { name: string; version: number } {
  const at = ref.lastIndexOf('@');
  return { name: ref.slice(0, at), version: Number(ref.slice(at + 1)) };
}

/** A dry-run update: the job as the edit would leave it, with its `edit_preview`. */
export function updatePreviewJson(p: UpdatePreview): Wire {
  const i = p.impact;
  const occurrence = (o: PreviewedOccurrence): Wire => ({
    nominal_time: o.nominalTime.toISOString(),
    scheduled_for: o.scheduledFor.toISOString(),
    dst_shift_ms: o.dstShiftMs ?? 0,
    ...(o.calendarShiftMs ? { calendar_shift_ms: o.calendarShiftMs } : {}),
    catch_up: o.catchUp,
    claimed: o.claimed,
  });
  const side = (s: EditSide): Wire => ({
    status: s.status,
    occurrences: s.occurrences.map(occurrence),
    due: {
      due: s.due.due,
      on_resume: s.due.onResume,
      catch_up_fires: s.due.catchUpFires,
      coalesced: s.due.coalesced,
      skipped: s.due.skipped.map((k) => ({
        reason: k.reason,
        first_nominal_time: k.firstNominal.toISOString(),
        last_nominal_time: k.lastNominal.toISOString(),
        occurrences: k.occurrences,
      })),
    },
  });
  return {
    ...jobJson(p.edited),
    edit_preview: {
      current_version: p.current.version,
      count: p.count,
      replanned: i.replanned,
      before: side(i.before),
      after: side(i.after),
      appearing: i.appearing.map(occurrence),
      disappearing: i.disappearing.map(occurrence),
      compared_until: iso(i.comparedUntil),
      moved: i.moved.map((m) => ({ before: occurrence(m.before), after: occurrence(m.after) })),
      claimed_ahead: i.claimedAhead.map((c) => ({
        fence_token: c.fenceToken,
        fire_id: fireIdOf({ jobId: p.current.jobId, fenceToken: c.fenceToken }),
        nominal_time: c.nominalTime.toISOString(),
        scheduled_for: c.scheduledFor.toISOString(),
        dst_shift_ms: c.dstShiftMs,
        job_version: c.jobVersion,
        enqueued: c.enqueued,
        in_new_schedule: c.inNewSchedule,
      })),
    },
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
    ...(p.calendar
      ? {
          calendar: {
            reason: p.calendar.reason,
            name: p.calendar.name,
            version: p.calendar.version,
            why: p.calendar.why,
            ...(p.calendar.shiftMs !== undefined ? { shift_ms: p.calendar.shiftMs } : {}),
          },
        }
      : {}),
  };
}
