/** Backfills between tickwork.admin.v1 messages and the service (the REST JSON's fields, proto types). */
import { ValidationError, type Backfill, type BackfillItemState, type JsonValue } from '@tickwork/domain';
import type { BackfillDetail, BackfillPreview } from '@tickwork/jobs';
import { isoFromTimestamp, timestamp } from './proto-mapping';

type Msg = Record<string, unknown>;

/**
 * CreateBackfillRequest → the request body the domain validates. Proto defaults mean "not given"
 * (max_per_second 0, skip_reasons empty); only_never_fired asks for no skip reason at all.
 */
export function backfillRequestFromProto(req: Msg): Record<string, JsonValue> {
  const reasons = Array.isArray(req.skip_reasons) ? (req.skip_reasons as unknown[]).map(String) : [];
  if (req.only_never_fired === true && reasons.length > 0)
    throw new ValidationError([
      { field: 'skip_reasons', message: 'must be empty with only_never_fired (which counts no skip reason)' },
    ]);
  const from = isoFromTimestamp(req.from);
  const to = isoFromTimestamp(req.to);
  return {
    ...(from !== undefined ? { from } : {}),
    ...(to !== undefined ? { to } : {}),
    dry_run: req.dry_run === true,
    ...(typeof req.max_per_second === 'number' && req.max_per_second !== 0
      ? { max_per_second: req.max_per_second }
      : {}),
    ...(reasons.length > 0
      ? { skip_reasons: reasons }
      : req.only_never_fired === true
        ? { skip_reasons: [] }
        : {}),
  };
}

function occurrenceToProto(i: {
  nominal: Date;
  dstShiftMs: number;
  reason: string;
  state?: BackfillItemState['state'];
  fenceToken?: number | null;
}): Msg {
  return {
    nominal_time: timestamp(i.nominal),
    dst_shift_ms: i.dstShiftMs,
    reason: i.reason,
    state: i.state ?? '',
    fence_token: i.fenceToken ?? 0,
  };
}

/** A dry run's plan. */
export function backfillPlanToProto(p: BackfillPreview): Msg {
  return {
    job_id: p.jobId,
    from: timestamp(p.request.from),
    to: timestamp(p.request.to),
    max_per_second: p.request.maxPerSecond,
    skip_reasons: [...p.request.skipReasons],
    planned: p.plan.items.length,
    already_ran: p.plan.alreadyRan,
    excluded: { ...p.plan.excluded },
    estimated_duration_ms: p.estimatedDurationMs,
    occurrences: p.plan.items.map((i) => occurrenceToProto(i)),
  };
}

/** A backfill (with its occurrences when given). */
export function backfillToProto(b: Backfill, occurrences?: BackfillDetail['occurrences']): Msg {
  return {
    backfill_id: String(b.backfillId),
    job_id: b.jobId,
    tenant_id: b.tenantId,
    from: timestamp(b.from),
    to: timestamp(b.to),
    max_per_second: b.maxPerSecond,
    skip_reasons: [...b.skipReasons],
    status: `BACKFILL_STATUS_${b.status}`,
    planned: b.planned,
    fired: b.fired,
    found_ran: b.foundRan,
    remaining: Math.max(0, b.planned - b.fired - b.foundRan),
    already_ran: b.alreadyRan,
    excluded: { ...b.excluded },
    created_by: b.createdBy,
    created_at: timestamp(b.createdAt),
    started_at: timestamp(b.startedAt),
    finished_at: timestamp(b.finishedAt),
    cancelled_by: b.cancelledBy ?? '',
    failure: b.failure ?? '',
    occurrences: (occurrences ?? []).map(occurrenceToProto),
  };
}
