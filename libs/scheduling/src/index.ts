export { ShardOwnership, type OwnershipEvents } from './shard-ownership';
export { FirePublisher } from './fire-publisher';
export { FireLoop, releaseThrough, type FireLoopOptions, type FireLoopEvents } from './fire-loop';
export { SharedDueProbe, type SharedDueProbeOptions } from './shared-due-probe';
export { PauseSweep, type PauseSweepOptions } from './pause-sweep';
export {
  SloSweeper,
  judgeCandidate,
  deadManSample,
  type SloSweeperOptions,
  type SloSweeperEvents,
} from './slo-sweeper';
export {
  BackfillRunner,
  type BackfillRunnerOptions,
  type BackfillRunnerEvents,
  type BackfillStore,
  type DueBackfillRef,
} from './backfill-runner';
export { claimableAmong, type ClaimableShards } from './shard-subset';
