/**
 * The one way an app builds its JobService: the API and the scheduler's commands consumer must
 * accept and plan a job alike, so both derive its settings from the config and tenant registry here.
 */
import { ownTopics, type TenantRegistry, type TickworkConfig } from '@tickwork/config';
import { MAX_JITTER_MS } from '@tickwork/domain';
import { JobService, type JobServiceOptions } from './job-service';
import type { CalendarResolver, HistoryStore, JobStore } from './ports';

/** The stores a JobService works on. */
export interface JobServiceStores {
  readonly jobs: JobStore;
  readonly history: HistoryStore;
  /** Resolves the business calendars jobs name (policies.calendars). */
  readonly calendars: CalendarResolver;
}

/** The JobService of an app, over its stores, with the settings of its config and tenant registry. */
export function createJobService(
  stores: JobServiceStores,
  config: TickworkConfig,
  tenants: TenantRegistry,
): JobService {
  return new JobService(stores.jobs, stores.history, {
    ...jobServiceOptionsOf(config, tenants),
    calendars: stores.calendars,
  });
}

/** The JobService settings that follow from an app's config and tenant registry. */
function jobServiceOptionsOf(config: TickworkConfig, tenants: TenantRegistry): JobServiceOptions {
  return {
    shardCount: config.shardCount,
    herdJitterMs: config.scheduler.herdJitterMs,
    // An edit preview plans due occurrences with the scheduler's settings.
    claimPlan: { maxCatchUp: config.scheduler.maxCatchUp, lookaheadMs: config.scheduler.lookaheadMs },
    limits: {
      minIntervalMs: config.api.minIntervalMs,
      maxPayloadBytes: config.api.maxPayloadBytes,
      maxJitterMs: MAX_JITTER_MS,
      // A Kafka target may not write to Tickwork's own topics (refused at create, not at fire time).
      reservedTopics: ownTopics(config.topics),
    },
    quotas: (tenantId) => tenants.quotasFor(tenantId),
  };
}
