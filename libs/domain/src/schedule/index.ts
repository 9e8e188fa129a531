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
export {
  parseRrule,
  compileRrule,
  parseLocalWallTime,
  formatLocalWallTime,
  CompiledRrule,
  RRULE_FREQUENCIES,
  RRULE_WEEKDAYS,
  MAX_RRULE_COUNT,
  MAX_PERIOD_VISITS,
  type RruleParts,
  type RruleWeekday,
  type RruleFrequency,
  type RruleParseResult,
} from './rrule';
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
  MAX_RRULE_EXDATES,
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
export * from './business-calendar';
