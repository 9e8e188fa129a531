/** Tickwork's domain: jobs, schedules, fences, fires, runs and validation. Pure TypeScript, no I/O. */
export * from './job';
export * from './target';
export * from './secret-headers';
export * from './policies';
export * from './fence';
export * from './fire';
export * from './run';
export * from './shard';
export * from './validation';
export * from './instant';
export * from './job-wire';
export * from './schedule';
export * from './claim-planner';
export * from './quota';
export * from './bulk-action';
