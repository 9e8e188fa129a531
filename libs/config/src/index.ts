export { loadConfig, ownTopics } from './config';
export type { TickworkConfig, KafkaConfig, TopicNames } from './config';
export {
  compactRanges,
  databaseIdentity,
  parseStoreShardMap,
  singleDatabaseMap,
  STORE_SHARDS_VARIABLE,
  type ShardDatabase,
  type StoreShardMap,
} from './store-shards';
export { ConfigError, EnvReader, parseDuration } from './env';
export {
  loadTenants,
  hashToken,
  DEFAULT_TENANT_QUOTAS,
  type TenantRegistry,
  type TenantQuotas,
  type Principal,
  type Role,
  type AuthMode,
} from './tenants';
export { loadApiListenConfig, type ApiListenConfig, type TlsFiles } from './api-config';
export { schemaDirectory } from './schema-files';
