/**
 * The repositories the API and the commands consumer use, for the store's shard map: the plain
 * ones over DATABASE_URL when one database holds every shard (nothing changes), routed ones when
 * several do, and refusing ones (NotShardedError) for what is not routed yet (docs/scale.md).
 */
import type { Pool } from 'pg';
import { BackfillRepository } from '../repositories/backfill.repository';
import { BulkRepository } from '../repositories/bulk.repository';
import { CalendarRepository } from '../repositories/calendar.repository';
import { ClusterStatsRepository } from '../repositories/cluster-stats.repository';
import { HistoryRepository } from '../repositories/history.repository';
import { InsightRepository } from '../repositories/insight.repository';
import { JobRepository } from '../repositories/job.repository';
import {
  refusedWhenSharded,
  RoutedClusterStatsRepository,
  RoutedHistoryRepository,
  RoutedJobRepository,
} from './routed-repositories';
import { NotShardedError, type ShardPools } from './shard-pools';

export interface StoreRepositories {
  readonly jobs: JobRepository;
  readonly history: HistoryRepository;
  readonly calendars: CalendarRepository;
  readonly bulk: BulkRepository;
  readonly backfills: BackfillRepository;
  readonly insight: InsightRepository;
  readonly clusterStats: ClusterStatsRepository;
}

/** The store's repositories over `pools` (the shard map's databases) and `main` (DATABASE_URL). */
export function storeRepositories(pools: ShardPools, main: Pool): StoreRepositories {
  if (!pools.sharded) {
    const pool = pools.databases[0]!.pool;
    return {
      jobs: new JobRepository(pool),
      history: new HistoryRepository(pool),
      calendars: new CalendarRepository(pool),
      bulk: new BulkRepository(pool),
      backfills: new BackfillRepository(pool),
      insight: new InsightRepository(pool),
      clusterStats: new ClusterStatsRepository(pool),
    };
  }
  return {
    jobs: new RoutedJobRepository(pools, main),
    history: new RoutedHistoryRepository(pools, main),
    calendars: new CalendarsNotSharded(main),
    bulk: refusedWhenSharded(new BulkRepository(main), pools, 'a bulk action'),
    backfills: refusedWhenSharded(new BackfillRepository(main), pools, 'a backfill'),
    insight: refusedWhenSharded(new InsightRepository(main), pools, 'the cluster insight views'),
    clusterStats: new RoutedClusterStatsRepository(pools),
  };
}

/**
 * Business calendars over a sharded store: not routed yet (each claim reads its own database's
 * copy, and writing every copy alike is not built), so a job may name none; asking for none works.
 */
class CalendarsNotSharded extends CalendarRepository {
  private refuse(): Promise<never> {
    return Promise.reject(new NotShardedError('business calendars'));
  }
  override find(): ReturnType<CalendarRepository['find']> {
    return this.refuse();
  }
  override list(): ReturnType<CalendarRepository['list']> {
    return this.refuse();
  }
  override resolve(
    ...args: Parameters<CalendarRepository['resolve']>
  ): ReturnType<CalendarRepository['resolve']> {
    return args[1].length === 0 ? Promise.resolve(new Map()) : this.refuse();
  }
  override write(): ReturnType<CalendarRepository['write']> {
    return this.refuse();
  }
  override delete(): ReturnType<CalendarRepository['delete']> {
    return this.refuse();
  }
  override jobsUsing(): ReturnType<CalendarRepository['jobsUsing']> {
    return this.refuse();
  }
  override replan(): ReturnType<CalendarRepository['replan']> {
    return this.refuse();
  }
}
