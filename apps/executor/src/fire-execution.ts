/**
 * The executor's fire path, one factory per port: the run ledger and the liveness beat in
 * PostgreSQL (one database, or every database of the shard map), the webhook and Kafka targets,
 * the FireExecutor over them, and the processor of fetched messages.
 */
import type { Logger } from '@nestjs/common';
import { ownTopics, type TickworkConfig } from '@tickwork/config';
import {
  CoalescingLedger,
  DestinationGuard,
  FireExecutor,
  FireMessageProcessor,
  KafkaRunner,
  LivenessBeat,
  parseAllowList,
  TracedKafkaRunner,
  TracedLedger,
  TracedProcessor,
  TracedWebhookRunner,
  WebhookRunner,
  WebhookSigner,
  type BatchingProducer,
  type ExecutorEvents,
  type KafkaOutcomeSink,
  type LedgerStep,
  type Slots,
} from '@tickwork/execution';
import type { EventCodecs } from '@tickwork/messaging';
import {
  EveryDatabaseLivenessRepository,
  ExecutorLivenessRepository,
  RoutedRunRepository,
  RunRepository,
  type ShardPools,
} from '@tickwork/store';
import { fireLogFields, LogThrottle } from '@tickwork/telemetry';
import type { ExecutorReports } from './executor-reports';

/** The liveness beat (LivenessBeat): once a second; a witness of a death has beaten in the last 2.5 s. */
const LIVENESS_BEAT_MS = 1_000;
const LIVENESS_WITNESS_FRESH_MS = 2_500;
/** A database blip makes every fire in flight retry its ledger write: one line per this long, not one per fire. */
const LEDGER_RETRY_LOG_EVERY_MS = 5_000;

/** The run ledger: each run's row is in its job's shard database. */
export function runLedgerOf(config: TickworkConfig, shardPools: ShardPools): RunRepository {
  const holderLiveness = {
    deadAfterMs: config.executor.deadAfterMs,
    witnessFreshMs: LIVENESS_WITNESS_FRESH_MS,
  };
  return shardPools.sharded
    ? new RoutedRunRepository(shardPools, holderLiveness)
    : new RunRepository(shardPools.ofShard(0).pool, holderLiveness);
}

/**
 * The liveness beat naming this process's leases (issued by `leaseIssuer`), so that once it dies
 * they are taken over within TICKWORK_EXECUTOR_DEAD_AFTER_MS, not when they expire (not started).
 */
export function livenessBeatOf(
  config: TickworkConfig,
  shardPools: ShardPools,
  leaseIssuer: string,
  log: Logger,
): LivenessBeat {
  const beatErrors = new LogThrottle(10_000);
  const beats = shardPools.sharded
    ? new EveryDatabaseLivenessRepository(shardPools)
    : new ExecutorLivenessRepository(shardPools.ofShard(0).pool);
  return new LivenessBeat(beats, {
    issuer: leaseIssuer,
    instanceId: config.instanceId,
    intervalMs: LIVENESS_BEAT_MS,
    onError: (e) => {
      const { write, suppressed } = beatErrors.admit(LogThrottle.kindOf(e.message));
      if (write) log.warn(`liveness beat failed: ${e.message}${beatErrors.note(suppressed)}`);
    },
  });
}

/** Webhook calls: only to allowed destinations, signed with the tenants' secrets. */
export function webhookRunnerOf(config: TickworkConfig): WebhookRunner {
  const { executor } = config;
  return new WebhookRunner({
    guard: new DestinationGuard(parseAllowList(executor.webhookAllowList)),
    signer: new WebhookSigner(executor.webhookSecrets),
    connectionsPerOrigin: executor.concurrency,
  });
}

/** What the FireExecutor works through. */
export interface FireExecutorPorts {
  readonly runs: RunRepository;
  readonly webhooks: WebhookRunner;
  /** The executor's batched produces: Kafka targets, and the outcomes through `sink`. */
  readonly batching: BatchingProducer;
  readonly sink: KafkaOutcomeSink;
  /** The issuer of this process's lease tokens, which its liveness beat names. */
  readonly leaseIssuer: string;
  /** Target calls in flight: the executor's concurrency. */
  readonly webhookSlots: Slots;
}

/** The FireExecutor over traced ports: the ledger (coalesced), the webhook and Kafka targets. */
export function fireExecutorOf(
  config: TickworkConfig,
  ports: FireExecutorPorts,
  reports: ExecutorReports,
): FireExecutor {
  const { executor } = config;
  const { metrics } = reports;
  const targetCall = (type: 'webhook' | 'kafka', outcome: string, ms: number) =>
    metrics.targetCall(type, outcome, ms);
  return new FireExecutor(
    new TracedLedger(new CoalescingLedger(ports.runs), {
      onHeartbeat: (renewed) => metrics.leaseHeartbeat(renewed),
    }),
    new TracedWebhookRunner(ports.webhooks, targetCall),
    new TracedKafkaRunner(new KafkaRunner(ports.batching, ownTopics(config.topics)), targetCall),
    ports.sink,
    {
      owner: config.instanceId,
      leaseIssuer: ports.leaseIssuer,
      runLeaseMs: executor.runLeaseMs,
      heartbeatMs: executor.heartbeatMs,
      runRetentionMs: executor.runRetentionMs,
      webhookSlots: ports.webhookSlots,
    },
    fireExecutorEvents(reports),
  );
}

/** What the FireExecutor reports: metrics for all of it, fire lines for what a person should see. */
function fireExecutorEvents({ metrics, log, fireLog }: ExecutorReports): ExecutorEvents {
  return {
    onExecuted: (fire, result) => {
      metrics.attempted(result);
      if (fireLog.isLevelEnabled('debug'))
        fireLog.debug(
          {
            ...fireLogFields(fire),
            outcome: result.outcome,
            http_status: result.httpStatus,
            duration_ms: result.durationMs,
            start_lateness_ms: result.startedAt.getTime() - result.scheduledFor.getTime(),
          },
          'fire executed',
        );
    },
    onLedgerRetry: ledgerRetryReport(log),
    onDuplicate: (fire, reason) => {
      metrics.duplicate(reason);
      if (fireLog.isLevelEnabled('debug'))
        fireLog.debug({ ...fireLogFields(fire), reason }, 'duplicate delivery skipped');
    },
    onLeaseLost: (fire) =>
      fireLog.warn(
        fireLogFields(fire),
        `lease lost for fire ${fire.fireId}; its late outcome was not recorded (the new holder records it)`,
      ),
    onDeadLettered: (fire, reason, detail) => {
      metrics.deadLettered(fire.tenantId, reason);
      fireLog.warn(
        { ...fireLogFields(fire), reason },
        `dead-lettered fire ${fire.fireId} attempt ${fire.attempt}: ${reason}: ${detail}`,
      );
    },
  };
}

/** Logs ledger statements being retried on a transient error: at most one line per LEDGER_RETRY_LOG_EVERY_MS. */
function ledgerRetryReport(log: Logger): (step: LedgerStep, e: Error) => void {
  let retriedSinceReport = 0;
  let reportedAt = 0;
  return (step, e) => {
    retriedSinceReport++;
    const now = Date.now();
    if (now - reportedAt < LEDGER_RETRY_LOG_EVERY_MS) return;
    log.warn(
      `run ledger unreachable (${step}: ${e.message}); ${retriedSinceReport} ledger statement(s) retried since the last report, outcomes held in memory`,
    );
    retriedSinceReport = 0;
    reportedAt = now;
  };
}

/**
 * The processor of fetched fire and retry messages: decoded, run through the executor, poison
 * dead-lettered; spans name the group each topic is consumed by.
 */
export function fireProcessorOf(
  config: TickworkConfig,
  codecs: EventCodecs,
  executor: FireExecutor,
  sink: KafkaOutcomeSink,
  { metrics, log }: ExecutorReports,
): TracedProcessor {
  const { groupId } = config.executor;
  const processor = new FireMessageProcessor(codecs, executor, sink, config.topics.retryTiers, {
    onPoison: (m, reason) => {
      metrics.deadLettered('unknown', 'UNDECODABLE');
      log.warn(`dead-lettered undecodable message ${m.topic}/${m.partition}/${m.offset}: ${reason}`);
    },
  });
  const retryTopics = new Set(config.topics.retryTiers.map((tier) => tier.topic));
  return new TracedProcessor(processor, (topic) => (retryTopics.has(topic) ? `${groupId}.retry` : groupId));
}
