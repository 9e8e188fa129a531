/** What a delivery derives from a fire: the target request, the attempt's result, the same fire at another attempt. */
import type { FireEvent, FireOutcome, FireResult, RecordedRun, RunState } from '@tickwork/domain';
import { bindTraceContext, boundTraceContext } from '@tickwork/telemetry';
import type { TargetRequest } from './attempt';

/** What the target runners get of a fire. */
export function requestOf(fire: FireEvent): TargetRequest {
  return {
    jobId: fire.jobId,
    tenantId: fire.tenantId,
    fenceToken: fire.fenceToken,
    fireId: fire.fireId,
    scheduledFor: fire.scheduledFor,
    attempt: fire.attempt,
    body: fire.payload === null ? null : JSON.stringify(fire.payload),
    traceHeaders: boundTraceContext(fire),
  };
}

/** The result of one attempt of `fire`, with the times the ledger recorded for it, in its trace. */
export function resultOf(
  fire: FireEvent,
  { startedAt, finishedAt }: RecordedRun,
  outcome: FireOutcome,
  httpStatus: number | null,
  error: string | null,
): FireResult {
  return inTraceOf(fire, {
    jobId: fire.jobId,
    tenantId: fire.tenantId,
    fenceToken: fire.fenceToken,
    fireId: fire.fireId,
    scheduledFor: fire.scheduledFor,
    ...(fire.spreadOffsetMs ? { spreadOffsetMs: fire.spreadOffsetMs } : {}),
    startedAt,
    finishedAt,
    attempt: fire.attempt,
    outcome,
    httpStatus,
    error,
    durationMs: finishedAt.getTime() - startedAt.getTime(),
  });
}

/** `fire` at another attempt, in the same trace. */
export function atAttempt(fire: FireEvent, attempt: number): FireEvent {
  return attempt === fire.attempt ? fire : inTraceOf(fire, { ...fire, attempt });
}

/** `derived` (a copy of `fire`, or its result), bound to the trace `fire` carries. */
export function inTraceOf<T extends object>(fire: FireEvent, derived: T): T {
  bindTraceContext(derived, boundTraceContext(fire));
  return derived;
}

/** The result a recorded run stands for (published again by a re-delivery that finds it). */
export function resultOfRun(run: RunState): FireResult {
  const startedAt = run.startedAt ?? run.scheduledFor;
  const finishedAt = run.finishedAt ?? startedAt;
  return {
    jobId: run.jobId,
    tenantId: run.tenantId,
    fenceToken: run.fenceToken,
    fireId: run.fireId,
    scheduledFor: run.scheduledFor,
    ...(run.spreadOffsetMs ? { spreadOffsetMs: run.spreadOffsetMs } : {}),
    startedAt,
    finishedAt,
    attempt: run.attempt,
    outcome: run.status === 'RUNNING' ? 'FAILED' : run.status,
    httpStatus: run.httpStatus,
    error: run.error,
    durationMs: finishedAt.getTime() - startedAt.getTime(),
  };
}
