export { loadConfig } from './config';
export type { TickworkConfig, KafkaConfig, TopicNames } from './config';
export { ConfigError, EnvReader, parseDuration } from './env';
