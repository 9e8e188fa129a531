export { openDatabase, openMessaging, waitFor, type Messaging } from './infrastructure';
export { LazyKafkaAdmin } from './kafka-admin';
