export { openDatabase, openMessaging, waitFor, type Messaging } from './infrastructure';
export { LazyKafkaAdmin } from './kafka-admin';
export { observeKafkajsPatches, KAFKAJS_PATCH_INFO } from './kafkajs-patch-metric';
export { MetricsController, TELEMETRY } from './metrics-controller';
export { openShardDatabases, closeShardDatabases } from './shard-databases';
