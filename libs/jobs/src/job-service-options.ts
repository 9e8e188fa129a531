import { ownTopics, type TenantRegistry, type TickworkConfig } from '@tickwork/config';
import { DEFAULT_JOB_LIMITS } from '@tickwork/domain';
import type { JobServiceOptions } from './job-service';

/**
 * The JobService settings every app derives from its config and tenant registry, in one place:
 * the API and the scheduler's command consumer must accept and plan a job alike.
 */
export function jobServiceOptionsOf(config: TickworkConfig, tenants: TenantRegistry): JobServiceOptions {
  return {
    shardCount: config.shardCount,
    herdJitterMs: config.scheduler.herdJitterMs,
    // An edit preview plans due occurrences with the scheduler's settings.
    claimPlan: { maxCatchUp: config.scheduler.maxCatchUp, lookaheadMs: config.scheduler.lookaheadMs },
    limits: {
      minIntervalMs: config.api.minIntervalMs,
      maxPayloadBytes: config.api.maxPayloadBytes,
      maxJitterMs: DEFAULT_JOB_LIMITS.maxJitterMs,
      // A Kafka target may not write to Tickwork's own topics (refused at create, not at fire time).
      reservedTopics: ownTopics(config.topics),
    },
    quotas: (tenantId) => tenants.quotasFor(tenantId),
  };
}
