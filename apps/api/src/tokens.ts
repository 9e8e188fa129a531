/** Injection tokens for values that are not classes. */
export const CONFIG = Symbol('TickworkConfig');
export const POOL = Symbol('Pool');
export const TENANTS = Symbol('TenantRegistry');
export const LISTEN = Symbol('ApiListenConfig');
export const KAFKA_PROBE = Symbol('KafkaProbe');
export const READINESS = Symbol('Readiness');
export const API_METRICS = Symbol('ApiMetrics');

/** The jobs use cases' store ports (libs/jobs), each provided by its libs/store repository. */
export const JOB_STORE = Symbol('JobStore');
export const HISTORY_STORE = Symbol('HistoryStore');
export const CALENDAR_STORE = Symbol('CalendarStore');
export const INSIGHT_STORE = Symbol('InsightStore');
export const CLUSTER_STATS_STORE = Symbol('ClusterStatsStore');
export const BULK_STORE = Symbol('BulkStore');
export const BACKFILL_STORE = Symbol('BackfillStore');
/** The databases of the store's shard map (ShardPools). */
export const SHARD_POOLS = Symbol('ShardPools');
/** The store's repositories for the shard map (StoreRepositories). */
export const STORE = Symbol('StoreRepositories');
