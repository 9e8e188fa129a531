export type {
  ConsumerHandlers,
  ConsumerOptions,
  Headers,
  InboundBatch,
  InboundMessage,
  MessageBus,
  MessageConsumer,
  MessageProducer,
  OutboundMessage,
  TopicAdmin,
  TopicDescription,
  TopicSpec,
} from './ports';
export { createKafkaBus, isBrokerError, type KafkaConnection, type BusLogger } from './kafkajs/kafkajs-bus';
export {
  installKafkajsPatches,
  kafkajsPatchReport,
  assertKafkajsVersion,
  KAFKAJS_PATCHES,
  KAFKAJS_VERSION,
  type KafkajsPatch,
  type KafkajsPatchReport,
  type PatchLogger,
} from './kafkajs/patches';
export { tickworkTopicSpecs, provisionTopics, TopicLayoutError, type TopicLayout } from './topics';
export { replicationLayoutProblems, type ReplicationLayout } from './replication';
export {
  EventCodecs,
  ensureCompatibility,
  UndecodableMessageError,
  readSchema,
  type CodecTopics,
  type SchemaName,
} from './codecs';
export {
  CommandCodec,
  readCommandSchema,
  type CommandDecodeFailure,
  type CommandDecodeResult,
  type DecodedScheduleCommand,
} from './command-codec';
