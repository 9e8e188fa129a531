/**
 * A bulk action over the store, one bounded window of jobs at a time: which jobs it looks at, the
 * locked candidates of a window, and the change it decides for them. libs/jobs' BulkStore port
 * speaks it; libs/store's BulkRepository implements it.
 */
import type { JsonValue } from './job';
import type { LabelSelector, ResumeCatchUp } from './bulk-action';

/** Which jobs a bulk action looks at: a tenant's (or every tenant's) jobs matching the selector. */
export interface BulkScope {
  /** Null: every tenant (an admin naming none). */
  readonly tenantId: string | null;
  readonly selector: LabelSelector;
}

/** One matching job of a window, locked, as a bulk action decides what to do with it. */
export interface BulkCandidate {
  readonly jobId: string;
  readonly tenantId: string;
  readonly status: 'SCHEDULED' | 'PAUSED' | 'COMPLETED';
  /** The job has a stored next occurrence (a resume keeps it; without one it must be planned). */
  readonly hasNext: boolean;
  readonly pausedUntil: Date | null;
}

/** What a bulk action did to one matched job: the audit row's outcome. */
export interface BulkJobOutcome {
  readonly jobId: string;
  readonly tenantId: string;
  /** OK (changed), UNCHANGED, or an error code (FAILED_PRECONDITION …). */
  readonly outcome: string;
  readonly details?: Record<string, JsonValue>;
}

/** The changes a window makes, decided from its candidates. */
export interface BulkWindowChange {
  readonly outcomes: readonly BulkJobOutcome[];
  /** PAUSE: jobs to pause (or whose pause-until changes). */
  readonly pause?: {
    readonly jobIds: readonly string[];
    readonly until: Date | null;
    readonly resume: Record<string, JsonValue> | null;
  };
  /** RESUME: jobs to resume from their stored next occurrence. */
  readonly resume?: { readonly jobIds: readonly string[]; readonly catchUp: ResumeCatchUp | null };
  /** TRIGGER: jobs to fire now, once (trigger MANUAL). */
  readonly trigger?: { readonly jobIds: readonly string[]; readonly claimedBy: string };
  /** DELETE: jobs to delete (tombstone kept, fire history dropped, as DeleteJob). */
  readonly delete?: { readonly jobIds: readonly string[] };
}

/** A job the sweep resumed at the end of its pause-until. */
export interface ResumedPause {
  readonly jobId: string;
  readonly tenantId: string;
  readonly resumed: boolean;
}
