export type { AttemptOutcome, TargetCall, TargetRequest, TargetRunner } from './attempt';
export { WebhookRunner, parseRetryAfter, type WebhookRunnerOptions } from './webhook-runner';
export { KafkaRunner } from './kafka-runner';
export { BatchingProducer, type BatchingOptions } from './batching-producer';
export {
  DestinationGuard,
  DestinationRefusedError,
  classifyAddress,
  parseAddress,
  parseAllowList,
  parseCidr,
  type AddressClass,
  type AllowEntry,
} from './destination-guard';
export { guardedConnector, guardedLookup, type Resolver } from './webhook-connector';
export { WebhookSigner, decodeWebhookSecret, DEFAULT_TENANT_SECRETS } from './webhook-signer';
export {
  backoffCapMs,
  fullJitterDelayMs,
  pickRetryTier,
  planRetry,
  type DeadLetterReason,
  type RetryDecision,
  type RetryTier,
} from './retry-plan';
export { FireExecutor } from './delivery-router';
export type {
  DeliveryContext,
  ExecutionReport,
  ExecutorEvents,
  ExecutorOptions,
  LedgerStep,
} from './delivery';
export type { RunLedger } from './run-ledger';
export { issueLeaseToken, newLeaseIssuer } from './lease-token';
export { HEADERS, KafkaOutcomeSink, sourceOf, type FireOutcomeSink, type SinkTopics } from './outcome-sink';
export { Slots } from './slots';
export { Coalescer, CoalescingLedger, type BatchRunStore } from './coalescing-ledger';
export {
  PartitionFlow,
  type FlowControl,
  type FlowEvents,
  type FlowStats,
  type MessageProcessor,
  type ProcessResult,
} from './partition-flow';
export { FireMessageProcessor, type FireProcessorEvents } from './fire-processor';
export { LivenessBeat, type LivenessBeatOptions, type LivenessStore } from './liveness-beat';
export { RunPurger, type RunPurgerOptions, type RunPurgeStore } from './run-purger';
export {
  callOutcome,
  TracedKafkaRunner,
  TracedLedger,
  TracedProcessor,
  TracedWebhookRunner,
  type LedgerObserver,
  type TargetCallObserver,
} from './tracing';
