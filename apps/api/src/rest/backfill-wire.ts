/** Backfills as REST JSON (snake_case; the gRPC messages carry the same fields). */
import type { Backfill, JsonValue } from '@tickwork/domain';
import type { BackfillDetail, BackfillPreview } from '@tickwork/jobs';

type Wire = Record<string, JsonValue>;

/** A dry run's answer: the occurrences a backfill would fire, in order, and what it leaves out. */
export function backfillPreviewJson(p: BackfillPreview): Wire {
  return {
    dry_run: true,
    job_id: p.jobId,
    from: p.request.from.toISOString(),
    to: p.request.to.toISOString(),
    max_per_second: p.request.maxPerSecond,
    skip_reasons: [...p.request.skipReasons],
    planned: p.plan.items.length,
    already_ran: p.plan.alreadyRan,
    excluded: { ...p.plan.excluded },
    estimated_duration_ms: p.estimatedDurationMs,
    occurrences: p.plan.items.map((i) => ({
      nominal_time: i.nominal.toISOString(),
      dst_shift_ms: i.dstShiftMs,
      reason: i.reason,
    })),
  };
}

/** A backfill and its progress. */
export function backfillJson(b: Backfill): Wire {
  return {
    backfill_id: String(b.backfillId),
    job_id: b.jobId,
    tenant_id: b.tenantId,
    from: b.from.toISOString(),
    to: b.to.toISOString(),
    max_per_second: b.maxPerSecond,
    skip_reasons: [...b.skipReasons],
    status: b.status,
    planned: b.planned,
    fired: b.fired,
    found_ran: b.foundRan,
    remaining: Math.max(0, b.planned - b.fired - b.foundRan),
    already_ran: b.alreadyRan,
    excluded: { ...b.excluded },
    created_by: b.createdBy,
    created_at: b.createdAt.toISOString(),
    started_at: b.startedAt?.toISOString() ?? null,
    finished_at: b.finishedAt?.toISOString() ?? null,
    cancelled_by: b.cancelledBy,
    failure: b.failure,
  };
}

/** A backfill with each planned occurrence and what became of it. */
export function backfillDetailJson(d: BackfillDetail): Wire {
  return {
    ...backfillJson(d.backfill),
    occurrences: d.occurrences.map((i) => ({
      nominal_time: i.nominal.toISOString(),
      dst_shift_ms: i.dstShiftMs,
      reason: i.reason,
      state: i.state,
      fence_token: i.fenceToken === null ? null : String(i.fenceToken),
    })),
  };
}
