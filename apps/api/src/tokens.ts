/** Injection tokens for values that are not classes. */
export const CONFIG = Symbol('TickworkConfig');
export const POOL = Symbol('Pool');
export const TENANTS = Symbol('TenantRegistry');
export const LISTEN = Symbol('ApiListenConfig');
export const KAFKA_PROBE = Symbol('KafkaProbe');
export const READINESS = Symbol('Readiness');
export const API_METRICS = Symbol('ApiMetrics');
/** The databases of the store's shard map (ShardPools). */
export const SHARD_POOLS = Symbol('ShardPools');
/** The store's repositories for the shard map (StoreRepositories). */
export const STORE = Symbol('StoreRepositories');
