export { ShardOwnership, type OwnershipEvents } from './shard-ownership';
export { FirePublisher } from './fire-publisher';
export { FireLoop, releaseThrough, type FireLoopOptions, type FireLoopEvents } from './fire-loop';
export { SharedDueProbe, type SharedDueProbeOptions } from './shared-due-probe';
export { PauseSweep, type PauseSweepOptions } from './pause-sweep';
