/**
 * Schedule definitions: when a job's occurrences are due.
 * All instants are UTC `Date`s; wall-clock reasoning happens only for cron and rrule in the job's IANA zone.
 */

/** What a cron schedule does with a wall-clock time that does not exist (spring-forward gap). */
export type DstGapPolicy = 'AUTO' | 'SHIFT' | 'SKIP';
/** What a cron schedule does with a wall-clock time that occurs twice (fall-back overlap). */
export type DstRepeatPolicy = 'AUTO' | 'FIRST' | 'LAST' | 'BOTH';

/** Limits shared by the recurring kinds. */
export interface ScheduleBounds {
  /** No occurrence before this instant. */
  readonly startAt?: Date;
  /** No occurrence after this instant. */
  readonly endAt?: Date;
  /** Stop after this many fires. */
  readonly maxFires?: number;
}

/** Fire once at a fixed instant. */
export interface OnceSchedule {
  readonly kind: 'once';
  readonly at: Date;
}

/** Fire every `everyMs`, anchored at `anchor` (occurrences are anchor + k·everyMs, so no drift). */
export interface IntervalSchedule extends ScheduleBounds {
  readonly kind: 'interval';
  readonly everyMs: number;
  readonly anchor: Date;
}

/** Fire on a 5- or 6-field cron expression evaluated in an IANA time zone. */
export interface CronSchedule extends ScheduleBounds {
  readonly kind: 'cron';
  readonly expression: string;
  readonly timeZone: string;
  readonly dstGap: DstGapPolicy;
  readonly dstRepeat: DstRepeatPolicy;
  /**
   * Where the expression's `H` tokens land: the job's id (Jenkins-style hashed values, stable per job).
   * Not part of the definition a client writes; set from the job id wherever a job's schedule is read.
   */
  readonly hashSeed?: string;
}

/**
 * Fire on an RFC 5545 recurrence rule (`FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0`) from `dtstart`, a local
 * wall time in `timeZone`, less the `exdates` (local wall times), with the same DST policies as cron.
 */
export interface RruleSchedule extends ScheduleBounds {
  readonly kind: 'rrule';
  readonly rule: string;
  /** Local wall time `YYYY-MM-DDTHH:MM:SS` in `timeZone`. */
  readonly dtstart: string;
  readonly timeZone: string;
  /** Local wall times `YYYY-MM-DDTHH:MM:SS` that do not fire. */
  readonly exdates: readonly string[];
  readonly dstGap: DstGapPolicy;
  readonly dstRepeat: DstRepeatPolicy;
}

export type Schedule = OnceSchedule | IntervalSchedule | CronSchedule | RruleSchedule;
export type ScheduleKind = Schedule['kind'];
