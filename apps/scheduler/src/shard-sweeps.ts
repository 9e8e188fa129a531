/**
 * The scheduler's sweeps over one database's held shards (each made not started): pauses whose
 * time has come, backfills, and the fire SLO.
 */
import type { TickworkConfig } from '@tickwork/config';
import type { TenantTokenBuckets } from '@tickwork/domain';
import { BackfillRunner, deadManSample, PauseSweep, SloSweeper } from '@tickwork/scheduling';
import { BackfillRepository, BulkRepository, SloRepository } from '@tickwork/store';
import { BackfillMetrics, SloMetrics, type Telemetry } from '@tickwork/telemetry';
import type { HeldDatabase } from './ownership';
import type { SchedulerReports } from './scheduler-reports';

/** How often the scheduler resumes jobs whose pause-until has come: a pause ends at most this late. */
const PAUSE_SWEEP_EVERY_MS = 1_000;

/** Resumes the jobs of one database's held shards whose pause-until has come. */
export function pauseSweepOf(
  config: TickworkConfig,
  { database, held }: HeldDatabase,
  { metrics, log }: SchedulerReports,
): PauseSweep {
  const bulk = new BulkRepository(database.pool);
  return new PauseSweep({
    everyMs: PAUSE_SWEEP_EVERY_MS,
    batchSize: 500,
    shards: () => held.claimable().map((s) => s.shard),
    resume: async (shards, limit) =>
      (await bulk.resumeExpiredPauses(shards, limit, config.instanceId)).length,
    onResumed: (count) => log.log(`resumed ${count} job(s) whose pause-until has come`),
    onError: (e) => {
      metrics.error('pause-sweep');
      log.warn(`resuming jobs whose pause-until has come failed (retried): ${e.message}`);
    },
  });
}

/**
 * Backfills of the held shards, paced and within the tenants' fire-rate caps (the fire loops'
 * buckets): their fires go into the outbox, which the fire loops' relay publishes at once.
 */
export function backfillRunnerOf(
  config: TickworkConfig,
  { database, held }: HeldDatabase,
  buckets: TenantTokenBuckets | undefined,
  telemetry: Telemetry,
  { metrics, log }: SchedulerReports,
): BackfillRunner {
  const runner: BackfillRunner = new BackfillRunner(
    new BackfillRepository(database.pool),
    {
      owner: config.instanceId,
      everyMs: Math.min(config.scheduler.tickMs, 100),
      maxPerStep: 500,
      maxPerTick: 100,
      shards: () => held.claimable(),
      ...(buckets ? { buckets } : {}),
    },
    {
      onFired: (fired, backfillId) => {
        backfillMetrics.fired(fired);
        log.debug(`backfill ${backfillId}: ${fired.length} fire(s) in the outbox`);
      },
      onFinished: (backfillId, status) => log.log(`backfill ${backfillId} ${status}`),
      onError: (e) => {
        metrics.error('backfill-runner');
        log.warn(`backfill runner (retried): ${e.message}`);
      },
    },
  );
  const backfillMetrics = new BackfillMetrics(telemetry.tenants, () => runner.activeBackfills());
  return runner;
}

/** The fire SLO sweep over the held shards: LATE / MISSED into the ledger, and their metrics. */
export function sloSweeperOf(
  config: TickworkConfig,
  { database, held }: HeldDatabase,
  telemetry: Telemetry,
  { metrics, log }: SchedulerReports,
): SloSweeper {
  const slo = new SloMetrics(telemetry.tenants);
  return new SloSweeper(
    new SloRepository(database.pool),
    held,
    {
      owner: config.instanceId,
      defaults: { toleranceMs: config.slo.toleranceMs, missedAfterMs: config.slo.missedAfterMs },
      sweepMs: config.slo.sweepMs,
      // Fires claimed ahead (lookahead) are not due before then; a sweep period lets runs start.
      settleMs: config.scheduler.lookaheadMs + config.slo.sweepMs,
      batchLimit: 500,
      maxFiresPerSweep: 5_000,
      maxMetricJobs: config.slo.maxMetricJobs,
    },
    {
      onSwept: (_shard, swept) => {
        if (swept.onTime.length === 0 && swept.recorded.length === 0) return;
        slo.judged([
          ...swept.onTime.map((onTime) => ({ ...onTime, result: 'ON_TIME' as const })),
          ...swept.recorded.map((violation) => ({
            tenantId: violation.tenantId,
            jobId: violation.jobId,
            sloMetrics: violation.sloMetrics,
            result: violation.reason,
          })),
        ]);
        for (const violation of swept.recorded)
          log.debug(
            `occurrence ${violation.reason} for job ${violation.jobId}${violation.latenessMs !== null ? ` (${violation.latenessMs} ms late)` : ''}`,
          );
      },
      onMetricJobs: (jobs, now) =>
        slo.jobsSampled(
          jobs.map((job) => ({ tenantId: job.tenantId, jobId: job.jobId, ...deadManSample(job, now) })),
        ),
      onError: (e) => {
        metrics.error('slo-sweeper');
        log.warn(`fire SLO sweep: ${e.message}`);
      },
    },
  );
}
