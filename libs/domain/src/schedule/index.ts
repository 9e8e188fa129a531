/** The time brain's pure core: schedules, cron with DST policies, occurrences, misfire planning, jitter. */
export * from './schedule';
export {
  parseCron,
  compileCron,
  usesHashToken,
  ParsedCron,
  type CronParseResult,
  type CronFields,
} from './cron-expression';
export {
  effectiveGapPolicy,
  effectiveRepeatPolicy,
  cronShiftsAt,
  nextCronInstantAfter,
  SearchBudgetExceeded,
  type EffectiveGapPolicy,
  type EffectiveRepeatPolicy,
} from './cron-fires';
export { isKnownTimeZone, warmUpTimeZones, zoneOffsetMs } from './time-zone';
export {
  nextFireAfter,
  firstFireAtOrAfter,
  previewFires,
  nextOccurrenceAfter,
  firstOccurrenceAtOrAfter,
  nextOccurrenceAfterOccurrence,
  nextOccurrencePointAfter,
  occurrenceBefore,
  previewOccurrences,
  OccurrenceCursor,
  MAX_PREVIEW_FIRES,
  type Occurrence,
  type OccurrencePoint,
  type OccurrenceSearch,
} from './occurrences';
export {
  parseSchedule,
  parseIsoInstant,
  SCHEDULE_KINDS,
  DST_GAP_POLICIES,
  DST_REPEAT_POLICIES,
  MAX_INTERVAL_MS,
  type ScheduleParseOptions,
  type ScheduleParseResult,
  type RawSchedule,
} from './parse-schedule';
export {
  planMisfire,
  DEFAULT_ENUMERATION_LIMIT,
  type MisfirePlan,
  type MisfireRules,
  type PlannedFire,
  type SkippedOccurrences,
  type OccurrenceSkipReason,
} from './misfire';
export { jitterOffsetMs, jitteredFireTime, defaultHerdWindowMs, spreadOffsetMs } from './jitter';
