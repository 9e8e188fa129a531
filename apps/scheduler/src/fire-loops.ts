/**
 * The scheduler's claim lanes: how a claimed job is planned, the tenants' fire-rate caps, and the
 * fire loops over one database's held shards, with what they report.
 */
import type { TenantRegistry, TickworkConfig } from '@tickwork/config';
import { planClaimedJob, TenantTokenBuckets, type ClaimedFire, type ClaimPlanner } from '@tickwork/domain';
import { isBrokerError } from '@tickwork/messaging';
import {
  FireLoop,
  FirePublisher,
  MeteredClaimStore,
  releaseThrough,
  SharedDueProbe,
  TracedClaimStore,
  type FireLoopEvents,
} from '@tickwork/scheduling';
import { FireStore, isSessionLoss } from '@tickwork/store';
import { fireLogFields, type Logger as PinoLogger, type SchedulerMetrics } from '@tickwork/telemetry';
import type { HeldDatabase } from './ownership';
import type { SchedulerReports } from './scheduler-reports';

/** What every claim lane of this instance shares. */
export interface FireLanesShared {
  readonly publisher: FirePublisher;
  readonly planner: ClaimPlanner;
  /** Per-tenant fire-rate caps; none when no tenant is capped. */
  readonly buckets: TenantTokenBuckets | undefined;
  /** Fires claimed early (lookahead) wait in one place, so all lanes' due fires share a send. */
  readonly release: ReturnType<typeof releaseThrough>;
  readonly events: FireLoopEvents;
}

/** Plans each claimed job; jobs with business calendars plan through them (CALENDAR_SKIP / CALENDAR_SHIFT). */
export function claimPlannerOf(config: TickworkConfig, metrics: SchedulerMetrics): ClaimPlanner {
  const planOptions = {
    maxCatchUp: config.scheduler.maxCatchUp,
    herdJitterMs: config.scheduler.herdJitterMs,
    lookaheadMs: config.scheduler.lookaheadMs,
  };
  return ({ job, previousFireInFlight }, now) => {
    const plan = planClaimedJob(job, job.nextNominalAt ?? now, now, planOptions, previousFireInFlight);
    if (job.calendars?.length)
      metrics.calendarShifted(job.tenantId, plan.fires.filter((f) => f.calendar).length);
    return plan;
  };
}

/**
 * Per-tenant fire-rate caps: each tenant's max_fires_per_second from the tenant registry when
 * one is configured, else TICKWORK_TENANT_MAX_FIRES_PER_SEC for all (0 = no cap). Each instance
 * enforces its share of a tenant's cluster-wide rate: the fraction of the shards it holds.
 */
export function tenantFireRateCaps(
  config: TickworkConfig,
  tenants: TenantRegistry,
  heldShardCount: () => number,
): TenantTokenBuckets | undefined {
  const fallback = config.scheduler.tenantMaxFiresPerSec;
  if (tenants.source === 'none' && fallback <= 0) return undefined;
  const clusterRate = (tenantId: string) =>
    tenants.source !== 'none' ? tenants.quotasFor(tenantId).maxFiresPerSecond : fallback;
  return new TenantTokenBuckets((tenantId) => {
    const rate = clusterRate(tenantId);
    if (rate <= 0) return null;
    const share = heldShardCount() / config.shardCount;
    const ratePerSec = Math.max(1, rate * share);
    return { ratePerSec, burst: ratePerSec };
  });
}

/** The claim lanes over one database's held shards, sharing one due probe per tick (not started). */
export function fireLoopsOf(
  config: TickworkConfig,
  { database, held }: HeldDatabase,
  shared: FireLanesShared,
  { metrics, log }: SchedulerReports,
): FireLoop[] {
  const { instanceId, scheduler } = config;
  const lanes = scheduler.claimLanes;
  // The claim through its decorators: spans per claim and fire, then skip and parking metrics.
  const store = new FireStore(database.pool);
  const claims = new MeteredClaimStore(new TracedClaimStore(store), metrics, (jobIds) =>
    log.warn(
      `parked (paused) ${jobIds.length} job(s) the claim could not plan or store: [${jobIds.slice(0, 20).join(', ')}]; the reason is in each job's occurrence ledger`,
    ),
  );
  // One probe per tick for all lanes: an idle instance costs one statement per tick.
  const dueProbe = new SharedDueProbe(store, held, {
    owner: instanceId,
    lookaheadMs: scheduler.lookaheadMs,
    relayAgeMs: scheduler.outboxRelayAgeMs,
    maxAgeMs: scheduler.tickMs / 2,
  });
  return Array.from(
    { length: lanes },
    (_, index) =>
      new FireLoop(
        claims,
        store,
        held,
        shared.publisher,
        shared.planner,
        {
          owner: instanceId,
          tickMs: scheduler.tickMs,
          batchSize: scheduler.claimBatchSize,
          lookaheadMs: scheduler.lookaheadMs,
          maxHeldFires: scheduler.lookaheadMaxFires,
          relayAgeMs: scheduler.outboxRelayAgeMs,
          ...(shared.buckets ? { buckets: shared.buckets } : {}),
          lane: { index, count: lanes },
          dueProbe,
          release: shared.release,
        },
        shared.events,
      ),
  );
}

/**
 * What the fire loops report: metrics for all of it, logs for what a person should see. A lost
 * database session calls `verifyLeases`.
 */
export function fireLoopEvents(
  { metrics, log, fireLog }: SchedulerReports,
  verifyLeases: () => void,
): FireLoopEvents {
  return {
    onClaimed: (claimed) => {
      metrics.fireClaimed(claimed.map((f) => f.event));
      logFires(fireLog, 'fire claimed', claimed);
    },
    onDeferred: (tenants) => {
      metrics.deferred(tenants);
      log.debug(`rate cap deferred due fires of tenants [${tenants.join(', ')}]`);
    },
    onFencedOut: (shards) => {
      metrics.fencedOut(shards);
      log.warn(`claim fenced out of shards [${shards.join(', ')}]`);
    },
    onEnqueued: (fires, relayed, ackedAtMs) => {
      metrics.enqueued(
        fires.map((f) => f.event),
        relayed,
        Date.now(),
        ackedAtMs,
      );
      if (relayed) log.log(`re-enqueued ${fires.length} orphaned fires from the outbox`);
      logFires(fireLog, relayed ? 'fire re-enqueued from the outbox' : 'fire enqueued', fires);
    },
    onError: (e) => {
      metrics.error('fire-loop');
      // A broker's connection error looks like a session's (ECONNREFUSED): it is not one.
      if (!isSessionLoss(e) || isBrokerError(e)) {
        log.error(`fire loop: ${e.message}`);
        return;
      }
      // The claim rolled back with its session. The process may have been frozen past its
      // lease: check the leases now, so a lost one self-fences (and rejoins) at once; if they
      // still hold, the next tick claims on a new session.
      log.warn(`fire loop: database session lost (${e.message}); checking the shard leases`);
      verifyLeases();
    },
  };
}

/** Debug lines, one per fire, with its identity and trace. */
function logFires(fireLog: PinoLogger, what: string, fires: readonly ClaimedFire[]): void {
  if (!fireLog.isLevelEnabled('debug')) return;
  const now = Date.now();
  for (const fire of fires)
    fireLog.debug(
      {
        ...fireLogFields(fire.event),
        shard: fire.shard,
        scheduled_for: fire.event.scheduledFor.toISOString(),
        lateness_ms: now - fire.event.scheduledFor.getTime(),
      },
      what,
    );
}
