export type { AttemptOutcome, TargetRequest, TargetRunner } from './attempt';
export { WebhookRunner } from './webhook-runner';
export { KafkaRunner } from './kafka-runner';
export { FireExecutor, type ExecutorOptions, type ExecutionReport, type ExecutorEvents, type FireOutcomeSink } from './fire-executor';
export { FireBatchHandler, KafkaOutcomeSink, Slots, type FireConsumerEvents } from './fire-consumer';
