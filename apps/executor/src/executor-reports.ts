/** Where the executor's parts report: one set of metrics, the app's log and the per-fire log. */
import type { Logger } from '@nestjs/common';
import type { ExecutorMetrics, Logger as PinoLogger } from '@tickwork/telemetry';

/** The metrics and logs every part of the executor reports to. */
export interface ExecutorReports {
  readonly metrics: ExecutorMetrics;
  readonly log: Logger;
  /** Fire lines go to pino directly, so their fields are built only when the level is on. */
  readonly fireLog: PinoLogger;
}
