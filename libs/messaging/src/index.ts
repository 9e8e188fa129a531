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
export { tickworkTopicSpecs, provisionTopics, TopicLayoutError, type TopicLayout } from './topics';
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
