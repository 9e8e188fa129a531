/**
 * The repositories the API and the commands consumer use, for the store's shard map: the plain
 * ones over DATABASE_URL when one database holds every shard (nothing changes), routed ones when
 * several do, and refusing ones (NotShardedError) for what is not routed yet (docs/scale.md).
 */
import { NotShardedError } from '@tickwork/domain';
import type { Pool } from 'pg';
import { BackfillRepository } from '../repositories/backfill.repository';
import { BulkRepository } from '../repositories/bulk.repository';
import { CalendarRepository } from '../repositories/calendar.repository';
import { ClusterStatsRepository } from '../repositories/cluster-stats.repository';
import { HistoryRepository } from '../repositories/history.repository';
import { InsightRepository } from '../repositories/insight.repository';
import { JobRepository } from '../repositories/job.repository';
import { mergeSortedPages } from './merged-pages';
import {
  RoutedClusterStatsRepository,
  RoutedHistoryRepository,
  RoutedJobRepository,
} from './routed-repositories';
import { RoutedBackfillRepository } from './routed-backfills';
import { RoutedBulkRepository } from './routed-bulk';
import { RoutedInsightRepository } from './routed-insight';
import type { ShardPools } from './shard-pools';

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
    calendars: new RoutedCalendarRepository(pools),
    bulk: new RoutedBulkRepository(pools),
    backfills: new RoutedBackfillRepository(pools),
    insight: new RoutedInsightRepository(pools),
    clusterStats: new RoutedClusterStatsRepository(pools),
  };
}

/**
 * Business calendars over a sharded store: a copy in every database, because each database's
 * claims read the calendars of the jobs they plan (JOB_CALENDARS_SQL). Reads use the database of
 * shard 0; a write goes to every database in turn, that one first, so a refused write (its check
 * throws) changes none. Not atomic across databases: a write that fails after the first database
 * leaves the copies apart until the calendar is written again (docs/scale.md). Deleting a calendar
 * is refused (its check must count the jobs of every database at once).
 */
export class RoutedCalendarRepository extends CalendarRepository {
  private readonly each: { readonly pool: Pool; readonly repo: CalendarRepository }[];

  constructor(private readonly pools: ShardPools) {
    super(pools.ofShard(0).pool);
    // Databases are ordered by lowest shard: the one of shard 0 comes first, answers the reads,
    // and its write checks the request before any other database is written.
    this.each = pools.databases.map((d) => ({ pool: d.pool, repo: new CalendarRepository(d.pool) }));
  }

  private get first(): CalendarRepository {
    return this.each[0]!.repo;
  }

  override find(...args: Parameters<CalendarRepository['find']>): ReturnType<CalendarRepository['find']> {
    return this.first.find(...args);
  }

  override list(...args: Parameters<CalendarRepository['list']>): ReturnType<CalendarRepository['list']> {
    return this.first.list(...args);
  }

  override resolve(
    ...args: Parameters<CalendarRepository['resolve']>
  ): ReturnType<CalendarRepository['resolve']> {
    return this.first.resolve(...args);
  }

  override async write(
    ...args: Parameters<CalendarRepository['write']>
  ): ReturnType<CalendarRepository['write']> {
    const [first, ...rest] = this.each;
    const written = await first!.repo.write(...args);
    for (const { repo } of rest) await repo.write(...args);
    return written;
  }

  override delete(): ReturnType<CalendarRepository['delete']> {
    return Promise.reject(new NotShardedError('deleting a business calendar'));
  }

  /** The jobs using a calendar in every database, merged by job id (each page after the same id). */
  override async jobsUsing(
    ...args: Parameters<CalendarRepository['jobsUsing']>
  ): ReturnType<CalendarRepository['jobsUsing']> {
    const parts = await Promise.all(this.each.map(({ repo }) => repo.jobsUsing(...args)));
    return mergeSortedPages(parts, args[3], (a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  }

  override replan(
    ...args: Parameters<CalendarRepository['replan']>
  ): ReturnType<CalendarRepository['replan']> {
    const pool = this.pools.ofJob(args[0].jobId).pool;
    return this.each.find((e) => e.pool === pool)!.repo.replan(...args);
  }
}
