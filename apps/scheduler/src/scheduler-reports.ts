/** Where the scheduler's parts report: one set of metrics, the app's log and the per-fire log. */
import type { Logger } from '@nestjs/common';
import type { Logger as PinoLogger, SchedulerMetrics } from '@tickwork/telemetry';

/** The metrics and logs every part of the scheduler reports to. */
export interface SchedulerReports {
  readonly metrics: SchedulerMetrics;
  readonly log: Logger;
  /** Fire lines (debug) go to pino directly, so their fields are built only when enabled. */
  readonly fireLog: PinoLogger;
}
