/**
 * Backfills over a sharded store: a backfill lives in its job's shard database (beside the job,
 * its fires and the scheduler's runner of that database), so every call is routed by the job id.
 * Backfill ids are per database; a backfill is always named with its job.
 */
import {
  NotShardedError,
  type AuditEntry,
  type BackfillPlan,
  type BackfillRequest,
  type CommandStamp,
  type Job,
  type ShardEpoch,
} from '@tickwork/domain';
import { BackfillRepository } from '../repositories/backfill.repository';
import type { ShardPools } from './shard-pools';

export class RoutedBackfillRepository extends BackfillRepository {
  private readonly byDatabase: Map<string, BackfillRepository>;

  constructor(private readonly pools: ShardPools) {
    super(pools.databases[0]!.pool);
    this.byDatabase = new Map(pools.databases.map((d) => [d.identity, new BackfillRepository(d.pool)]));
  }

  private of(jobId: string): BackfillRepository {
    return this.byDatabase.get(this.pools.ofJob(jobId).identity)!;
  }

  override findJob(jobId: string) {
    return this.of(jobId).findJob(jobId);
  }

  override ledger(jobId: string, from: Date, to: Date) {
    return this.of(jobId).ledger(jobId, from, to);
  }

  override create(req: {
    job: Job;
    request: BackfillRequest;
    plan: BackfillPlan;
    createdBy: string;
    audit: AuditEntry;
    command?: CommandStamp;
  }) {
    return this.of(req.job.jobId).create(req);
  }

  override get(jobId: string, backfillId: number) {
    return this.of(jobId).get(jobId, backfillId);
  }

  override list(jobId: string, limit: number, beforeId?: number) {
    return this.of(jobId).list(jobId, limit, beforeId);
  }

  override items(jobId: string, backfillId: number, limit: number, afterSeq?: number) {
    return this.of(jobId).items(jobId, backfillId, limit, afterSeq);
  }

  override cancel(jobId: string, backfillId: number, by: string, audit: AuditEntry) {
    return this.of(jobId).cancel(jobId, backfillId, by, audit);
  }

  // The runner's side: each scheduler runs one BackfillRunner per database over that database's
  // own repository; through the routed one these would read one database as if it were all.
  override activeCount(_shards: readonly number[]): Promise<number> {
    return Promise.reject(new NotShardedError("counting active backfills through the API's routed store"));
  }

  override due(_owner: string, _shards: readonly ShardEpoch[], _limit: number) {
    return Promise.reject(new NotShardedError("finding due backfills through the API's routed store"));
  }

  override fireNext(..._args: Parameters<BackfillRepository['fireNext']>) {
    return Promise.reject(new NotShardedError("firing a backfill through the API's routed store"));
  }
}
