/**
 * The cluster insight views over a sharded store: shard leases from each shard's own database,
 * runs in flight summed per executor over every database, and lateness of one job from its
 * database. Lateness over a tenant or everything is refused: its percentiles are computed in each
 * database from a sample and cannot be merged exactly.
 */
import {
  NotShardedError,
  type ExecutorInFlight,
  type LatenessScope,
  type ShardLease,
} from '@tickwork/domain';
import { InsightRepository } from '../repositories/insight.repository';
import type { ShardPools } from './shard-pools';

export class RoutedInsightRepository extends InsightRepository {
  private readonly each: { readonly shards: ReadonlySet<number>; readonly repo: InsightRepository }[];

  constructor(private readonly pools: ShardPools) {
    super(pools.databases[0]!.pool);
    this.each = pools.databases.map((d) => ({
      shards: new Set(d.shards),
      repo: new InsightRepository(d.pool),
    }));
  }

  /** Each shard's lease as its own database holds it (another database's row of it is not the lease). */
  override async shardLeases(): Promise<ShardLease[]> {
    const parts = await Promise.all(
      this.each.map(async (d) => (await d.repo.shardLeases()).filter((l) => d.shards.has(l.shard))),
    );
    return parts.flat().sort((a, b) => a.shard - b.shard);
  }

  /** Runs in flight per executor, summed over every database (an executor writes to all). */
  override async inFlight(): Promise<ExecutorInFlight[]> {
    const byOwner = new Map<string, ExecutorInFlight>();
    for (const part of await Promise.all(this.each.map((d) => d.repo.inFlight())))
      for (const e of part) {
        const had = byOwner.get(e.owner);
        byOwner.set(
          e.owner,
          had ? { owner: e.owner, running: had.running + e.running, retrying: had.retrying + e.retrying } : e,
        );
      }
    return [...byOwner.values()].sort((a, b) => (a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0));
  }

  /** One job's lateness from its database; wider scopes are refused (see above). */
  override lateness(
    scope: LatenessScope,
    windowMs: number,
    bucketCount: number,
    perBucket?: number,
    countCap?: number,
  ) {
    if (!scope.jobId)
      return Promise.reject(new NotShardedError('lateness over a tenant or every job (name a job_id)'));
    const db = this.pools.ofJob(scope.jobId);
    return this.each[this.pools.databases.indexOf(db)]!.repo.lateness(
      scope,
      windowMs,
      bucketCount,
      perBucket,
      countCap,
    );
  }
}
