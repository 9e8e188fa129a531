/** Jobs: what to fire (target + payload), when (schedule), and how (policies). */
import type { FenceToken } from './fence';
import type { ResumeCatchUp } from './bulk-action';
import type { JobPolicies } from './policies';
import type { Schedule } from './schedule/schedule';
import type { BusinessCalendar } from './schedule/business-calendar';
import type { Target } from './target';

/** JSON value carried as a job's payload. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** SCHEDULED jobs are scanned when due; PAUSED ones are not; COMPLETED ones have no occurrence left. */
export type JobStatus = 'SCHEDULED' | 'PAUSED' | 'COMPLETED';
export const JOB_STATUSES: readonly JobStatus[] = ['SCHEDULED', 'PAUSED', 'COMPLETED'];

/** What a client defines. */
export interface JobDefinition {
  readonly jobId: string;
  readonly tenantId: string;
  readonly schedule: Schedule;
  readonly target: Target;
  readonly payload: JsonValue;
  readonly policies: JobPolicies;
  readonly labels: Readonly<Record<string, string>>;
}

/** A job as stored: its definition plus the scheduler's state. */
export interface Job extends JobDefinition {
  readonly shard: number;
  readonly status: JobStatus;
  /** When the next occurrence is due to be claimed: its nominal time plus jitter. */
  readonly nextRunAt: Date | null;
  /** The next occurrence's nominal (schedule) time. */
  readonly nextNominalAt: Date | null;
  /**
   * How far dst_gap SHIFT moved the next occurrence past a DST gap (0 or absent: not moved). With
   * nextNominalAt it is the schedule's cursor: two occurrences can share a nominal instant.
   */
  readonly nextDstShiftMs?: number;
  /**
   * How far the job's calendar rule moved the next occurrence (NEXT/PREVIOUS_BUSINESS_DAY; 0 or absent:
   * not moved). The schedule's own point is nextNominalAt − nextCalendarShiftMs.
   */
  readonly nextCalendarShiftMs?: number;
  /** The calendars policies.calendars names, as resolved for the tenant when the job was read for a claim. */
  readonly calendars?: readonly BusinessCalendar[];
  readonly fenceToken: FenceToken;
  readonly firesCount: number;
  readonly version: number;
  /** A PAUSED job paused with `until`: the scheduler resumes it by itself at this instant. */
  readonly pausedUntil?: Date | null;
  /**
   * Set by a resume that chose what to do with the occurrences missed while paused; the next
   * claim plans them under it instead of the job's misfire policy, then clears it.
   */
  readonly resumeCatchUp?: ResumeCatchUp | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** What the scheduler reads of a job to claim it: everything but the bookkeeping fields. */
export type ClaimableJob = Omit<Job, 'labels' | 'version' | 'createdAt' | 'updatedAt'>;

export const JOB_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const TENANT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
