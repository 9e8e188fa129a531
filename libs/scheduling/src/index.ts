export type { ClaimStore, FireOutbox, ShardLeases, SloStore, BackfillStore, DueBackfillRef } from './ports';
export { ShardOwnership, type OwnershipEvents } from './shard-ownership';
export { FirePublisher } from './fire-publisher';
export { FireLoop, releaseThrough, type FireLoopOptions, type FireLoopEvents } from './fire-loop';
export { SharedDueProbe, probeOfShards, type SharedDueProbeOptions } from './shared-due-probe';
export { TracedClaimStore, MeteredClaimStore } from './claim-telemetry';
export { PauseSweep, type PauseSweepOptions } from './pause-sweep';
export {
  SloSweeper,
  judgeCandidate,
  deadManSample,
  type SloSweeperOptions,
  type SloSweeperEvents,
} from './slo-sweeper';
export { BackfillRunner, type BackfillRunnerOptions, type BackfillRunnerEvents } from './backfill-runner';
export type { ClaimableShards } from './shard-subset';
export { ShardOwnershipByDatabase, type LeaseDatabase, type ShardOwner } from './shard-ownership-by-database';
