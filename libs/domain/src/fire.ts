/** Fires: one claimed occurrence of a job, as handed from the scheduler to the executors. */
import type { FenceToken } from './fence';
import type { JsonValue } from './job';
import type { Target } from './target';

/** The fire event published to the fires topic. */
export interface FireEvent {
  readonly jobId: string;
  readonly tenantId: string;
  readonly fenceToken: FenceToken;
  readonly fireId: string;
  /** When the fire should run: the nominal time plus the job's deterministic jitter. */
  readonly scheduledFor: Date;
  /** The schedule's occurrence time before jitter. */
  readonly nominalTime: Date;
  /**
   * The herd window's offset (policies.spread_ms) that put scheduledFor where it is; lateness counts
   * from scheduledFor − spreadOffsetMs (the nominal time). 0 or absent: lateness counts from scheduledFor.
   */
  readonly spreadOffsetMs?: number;
  readonly attempt: number;
  readonly target: Target;
  readonly payload: JsonValue;
  /**
   * When the job came due for this fire, when that is earlier than `scheduledFor`: a `FIRE_ONCE`
   * fire that coalesced missed occurrences has been due since the first of them. Executors start
   * overdue fires in this order (a Kafka header; not part of the Avro event).
   */
  readonly dueSince?: Date;
}

export type FireOutcome = 'SUCCEEDED' | 'FAILED' | 'RETRYING' | 'DEAD_LETTERED' | 'SKIPPED';

/** The result event published to the fire-results topic after each attempt and final outcome. */
export interface FireResult {
  readonly jobId: string;
  readonly tenantId: string;
  readonly fenceToken: FenceToken;
  readonly fireId: string;
  readonly scheduledFor: Date;
  /** As FireEvent.spreadOffsetMs: lateness counts from scheduledFor − spreadOffsetMs. */
  readonly spreadOffsetMs?: number;
  readonly startedAt: Date;
  readonly finishedAt: Date;
  readonly attempt: number;
  readonly outcome: FireOutcome;
  readonly httpStatus: number | null;
  readonly error: string | null;
  readonly durationMs: number;
}

/** The instant a fire's lateness is measured from: its nominal time under a herd window, else its scheduled time. */
export function latenessOrigin(f: { readonly scheduledFor: Date; readonly spreadOffsetMs?: number }): number {
  return f.scheduledFor.getTime() - (f.spreadOffsetMs ?? 0);
}
