/** The executor's purge of run history past its retention. */
import type { Logger } from '@nestjs/common';
import type { TickworkConfig } from '@tickwork/config';
import { RunPurger } from '@tickwork/execution';
import { FireStore, type RunRepository, type ShardPools } from '@tickwork/store';

/**
 * The purger of run history (not started), or none when TICKWORK_RUN_PURGE_INTERVAL
 * is 0. Run history is the runs and the fire log (fires, their outbox batches, skipped
 * occurrences): one retention for both, so an occurrence's fire and run go together.
 */
export function runPurgerOf(
  config: TickworkConfig,
  runs: RunRepository,
  shardPools: ShardPools,
  log: Logger,
): RunPurger | undefined {
  const { executor } = config;
  if (executor.runPurgeIntervalMs <= 0) return undefined;
  const fireLogs = shardPools.databases.map((database) => new FireStore(database.pool));
  const history = {
    purgeFinishedRuns: async (retentionMs: number, batchSize: number) => {
      let purged = await runs.purgeFinishedRuns(retentionMs, batchSize);
      for (const fireLog of fireLogs) purged += await fireLog.purgeFireLog(retentionMs, batchSize);
      return purged;
    },
  };
  return new RunPurger(history, {
    retentionMs: executor.runRetentionMs,
    intervalMs: executor.runPurgeIntervalMs,
    batchSize: executor.runPurgeBatchSize,
    onPurged: (count) => log.log(`purged ${count} runs and fires older than ${executor.runRetentionMs} ms`),
    onError: (e) =>
      log.warn(`run purge failed, next pass in ${executor.runPurgeIntervalMs} ms: ${e.message}`),
  });
}
