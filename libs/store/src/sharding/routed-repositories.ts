/**
 * The job store over a sharded schedule store: each job's reads and writes go to its shard's
 * database, and cross-shard listings merge a page from every database (merged-pages.ts).
 *
 * Each class extends the single-database repository it stands in for, so the services take it
 * unchanged, and overrides every public method (routed-repositories.spec.ts checks that none is
 * left to fall through to the main database: a listing that read one database and answered as if
 * it were all would be silently wrong).
 */
import type { FireKey } from '@tickwork/domain';
import type { Pool } from 'pg';
import type {
  AuditEntry,
  CommandStamp,
  DeadLetterEntry,
  JobListQuery,
  MutationMeta,
  NewJob,
  OccurrenceLedgerCursor,
} from '@tickwork/domain';
import { HistoryRepository } from '../repositories/history.repository';
import { JobRepository, type PgLockedJob } from '../repositories/job.repository';
import { ClusterStatsRepository } from '../repositories/cluster-stats.repository';
import { ExecutorLivenessRepository } from '../repositories/executor-liveness.repository';
import { RunRepository, type HolderLiveness } from '../repositories/run.repository';
import type { RecordedRun, RunCompletion, RunStart, UnleasedRun } from '@tickwork/domain';
import type { FireEvent, JsonValue } from '@tickwork/domain';
import { mergeJobPages, mergeSortedPages } from './merged-pages';
import type { ShardDatabasePool, ShardPools } from './shard-pools';

/** Runs `work` against every database at once; answers in the databases' order. */
function everyDatabase<T>(pools: ShardPools, work: (db: ShardDatabasePool) => Promise<T>): Promise<T[]> {
  return Promise.all(pools.databases.map(work));
}

/** Jobs, their changes, command outcomes, idempotency keys and job audit, in each job's shard database. */
export class RoutedJobRepository extends JobRepository {
  private readonly byDatabase: Map<Pool, JobRepository>;

  constructor(
    private readonly pools: ShardPools,
    /** The DATABASE_URL database: audit of refusals that name no job. */
    private readonly main: Pool,
  ) {
    super(main);
    this.byDatabase = new Map(pools.databases.map((d) => [d.pool, new JobRepository(d.pool)]));
    if (!this.byDatabase.has(main)) this.byDatabase.set(main, new JobRepository(main));
  }

  private of(jobId: string): JobRepository {
    return this.byDatabase.get(this.pools.ofJob(jobId).pool)!;
  }

  override insertJob(job: NewJob) {
    return this.of(job.definition.jobId).insertJob(job);
  }

  override findJob(jobId: string) {
    return this.of(jobId).findJob(jobId);
  }

  /** A page over every database, merged by job id (keyset: the token's position holds across databases). */
  override async listJobs(q: JobListQuery) {
    const parts = await everyDatabase(this.pools, (d) => this.byDatabase.get(d.pool)!.listJobs(q));
    return mergeJobPages(parts, q.limit);
  }

  override mutate<T>(
    jobId: string,
    meta: MutationMeta,
    work: (job: Parameters<Parameters<JobRepository['mutate']>[2]>[0], tx: PgLockedJob) => Promise<T>,
  ): Promise<T> {
    return this.of(jobId).mutate(jobId, meta, work);
  }

  override recordCommandRejection(c: CommandStamp, jobId: string, code: string, reason: string) {
    return this.of(jobId).recordCommandRejection(c, jobId, code, reason);
  }

  /**
   * A key is claimed in the database of the job it created, so it is looked up in every database.
   * Two concurrent first requests under one key with no job_id may pick ids of two databases and
   * both create (docs/scale.md); a retry after either committed finds it.
   */
  override async findIdempotencyKey(tenantId: string, key: string, retentionMs: number) {
    const found = await everyDatabase(this.pools, (d) =>
      this.byDatabase.get(d.pool)!.findIdempotencyKey(tenantId, key, retentionMs),
    );
    return found.find((f) => f !== null) ?? null;
  }

  /** A refusal about a job is audited with the job's other events; one naming no job in the main database. */
  override recordRefusal(
    audit: AuditEntry,
    what: {
      tenantId: string | null;
      jobId: string | null;
      outcome: string;
      details?: Record<string, JsonValue>;
    },
  ) {
    const repo = what.jobId !== null ? this.of(what.jobId) : this.byDatabase.get(this.main)!;
    return repo.recordRefusal(audit, what);
  }
}

/** Runs, fires and occurrences in each job's shard database; dead letters merged newest first. */
export class RoutedHistoryRepository extends HistoryRepository {
  private readonly byDatabase: Map<Pool, HistoryRepository>;

  constructor(
    private readonly pools: ShardPools,
    main: Pool,
  ) {
    super(main);
    this.byDatabase = new Map(pools.databases.map((d) => [d.pool, new HistoryRepository(d.pool)]));
  }

  private of(jobId: string): HistoryRepository {
    return this.byDatabase.get(this.pools.ofJob(jobId).pool)!;
  }

  override listRuns(jobId: string, limit: number, beforeFenceToken?: number) {
    return this.of(jobId).listRuns(jobId, limit, beforeFenceToken);
  }

  override async lastRuns(jobIds: readonly string[]) {
    const groups = this.pools.group(jobIds, (id) => this.pools.ofJob(id).shards[0]!);
    const maps = await Promise.all(
      [...groups].map(([db, ids]) => this.byDatabase.get(db.pool)!.lastRuns(ids)),
    );
    return new Map(maps.flatMap((m) => [...m]));
  }

  override findRun(jobId: string, fenceToken: number) {
    return this.of(jobId).findRun(jobId, fenceToken);
  }

  override listClaimedAhead(jobId: string, limit: number) {
    return this.of(jobId).listClaimedAhead(jobId, limit);
  }

  override listOccurrences(jobId: string, limit: number, cursor?: OccurrenceLedgerCursor) {
    return this.of(jobId).listOccurrences(jobId, limit, cursor);
  }

  /** One job's dead letters from its database; all of them merged from every database by (time, job, fence) descending. */
  override async listDeadLetters(q: {
    tenantId?: string;
    jobId?: string;
    limit: number;
    before?: DeadLetterEntry['cursor'];
  }): Promise<DeadLetterEntry[]> {
    if (q.jobId !== undefined) return this.of(q.jobId).listDeadLetters(q);
    const parts = await everyDatabase(this.pools, (d) => this.byDatabase.get(d.pool)!.listDeadLetters(q));
    return mergeSortedPages(parts, q.limit, newestDeadLetterFirst);
  }
}

/** The order of listDeadLetters: (dead-lettered at, job id, fence token), all descending. */
export function newestDeadLetterFirst(a: DeadLetterEntry, b: DeadLetterEntry): number {
  const at = BigInt(b.cursor.atMicros) - BigInt(a.cursor.atMicros);
  if (at !== 0n) return at > 0n ? 1 : -1;
  if (a.cursor.jobId !== b.cursor.jobId) return a.cursor.jobId < b.cursor.jobId ? 1 : -1;
  return b.cursor.fenceToken - a.cursor.fenceToken;
}

/**
 * The executor's run ledger over a sharded store: each fire's statements go to its job's shard
 * database (the fire carries its job id; its shard follows from it).
 */
export class RoutedRunRepository extends RunRepository {
  private readonly byDatabase: Map<Pool, RunRepository>;

  constructor(
    private readonly pools: ShardPools,
    liveness?: HolderLiveness,
  ) {
    super(pools.databases[0]!.pool, liveness);
    this.byDatabase = new Map(pools.databases.map((d) => [d.pool, new RunRepository(d.pool, liveness)]));
  }

  private of(jobId: string): RunRepository {
    return this.byDatabase.get(this.pools.ofJob(jobId).pool)!;
  }

  /** Splits keyed items by database, runs `work` on each group, and answers in the items' order. */
  private async split<I, R>(
    items: readonly I[],
    jobIdOf: (item: I) => string,
    work: (repo: RunRepository, group: I[]) => Promise<R[]>,
  ): Promise<R[]> {
    const indexed = items.map((item, i) => ({ item, i }));
    const groups = this.pools.group(indexed, (x) => this.pools.ofJob(jobIdOf(x.item)).shards[0]!);
    const out: R[] = new Array<R>(items.length);
    await Promise.all(
      [...groups].map(async ([db, group]) => {
        const results = await work(
          this.byDatabase.get(db.pool)!,
          group.map((g) => g.item),
        );
        group.forEach((g, k) => (out[g.i] = results[k]!));
      }),
    );
    return out;
  }

  override beginRun(fire: FireEvent, owner: string, leaseMs: number, leaseToken?: string): Promise<RunStart> {
    return this.of(fire.jobId).beginRun(fire, owner, leaseMs, leaseToken);
  }

  override beginRuns(
    fires: readonly FireEvent[],
    owner: string,
    leaseMs: number,
    leaseTokens?: readonly (string | undefined)[],
  ): Promise<RunStart[]> {
    // Each fire keeps its own lease token through the split.
    const items = fires.map((fire, i) => ({ fire, token: leaseTokens?.[i] }));
    return this.split(
      items,
      (x) => x.fire.jobId,
      (repo, group) =>
        repo.beginRuns(
          group.map((g) => g.fire),
          owner,
          leaseMs,
          leaseTokens && group.map((g) => g.token),
        ),
    );
  }

  override mayRunUnleased(key: FireKey) {
    return this.of(key.jobId).mayRunUnleased(key);
  }

  override recordUnleasedRun(run: UnleasedRun) {
    return this.of(run.fire.jobId).recordUnleasedRun(run);
  }

  override mayRunUnleasedMany(keys: readonly FireKey[]) {
    return this.split(
      keys,
      (k) => k.jobId,
      (repo, group) => repo.mayRunUnleasedMany(group),
    );
  }

  override recordUnleasedRuns(items: readonly UnleasedRun[]): Promise<(RecordedRun | null)[]> {
    return this.split(
      items,
      (r) => r.fire.jobId,
      (repo, group) => repo.recordUnleasedRuns(group),
    );
  }

  override heartbeat(key: FireKey, leaseToken: string, leaseMs: number) {
    return this.of(key.jobId).heartbeat(key, leaseToken, leaseMs);
  }

  override heartbeats(
    ...args: Parameters<RunRepository['heartbeats']>
  ): ReturnType<RunRepository['heartbeats']> {
    return this.split(
      args[0],
      (k) => k.key.jobId,
      (repo, group) => repo.heartbeats(group),
    );
  }

  override completeRun(key: FireKey, leaseToken: string, outcome: RunCompletion) {
    return this.of(key.jobId).completeRun(key, leaseToken, outcome);
  }

  override completeRuns(
    ...args: Parameters<RunRepository['completeRuns']>
  ): ReturnType<RunRepository['completeRuns']> {
    const [items] = args;
    return this.split(
      items,
      (x) => x.key.jobId,
      (repo, group) => repo.completeRuns(group),
    );
  }

  override markHandedOff(key: FireKey, status: 'RETRYING' | 'DEAD_LETTERED', attempt: number) {
    return this.of(key.jobId).markHandedOff(key, status, attempt);
  }

  override releaseRun(key: FireKey, leaseToken: string) {
    return this.of(key.jobId).releaseRun(key, leaseToken);
  }

  /** Purges every database (each its own batch). */
  override async purgeFinishedRuns(retentionMs: number, batchSize: number) {
    const counts = await everyDatabase(this.pools, (d) =>
      this.byDatabase.get(d.pool)!.purgeFinishedRuns(retentionMs, batchSize),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  override findRun(key: FireKey) {
    return this.of(key.jobId).findRun(key);
  }

  override findRunState(key: FireKey) {
    return this.of(key.jobId).findRunState(key);
  }

  override listRuns(jobId: string, limit: number) {
    return this.of(jobId).listRuns(jobId, limit);
  }
}

/**
 * Executor liveness beats in every database: each database's run ledger judges the holders of its
 * own leases by the beats beside it (RunRepository's takeover reads executor_liveness in SQL).
 */
export class EveryDatabaseLivenessRepository extends ExecutorLivenessRepository {
  private readonly each: ExecutorLivenessRepository[];

  constructor(pools: ShardPools) {
    super(pools.databases[0]!.pool);
    this.each = pools.databases.map((d) => new ExecutorLivenessRepository(d.pool));
  }

  override async beat(issuer: string, instanceId: string, continuityMs: number): Promise<void> {
    await Promise.all(this.each.map((r) => r.beat(issuer, instanceId, continuityMs)));
  }

  override async retire(issuer: string): Promise<void> {
    await Promise.all(this.each.map((r) => r.retire(issuer)));
  }

  override async forgetSilent(olderThanMs: number): Promise<number> {
    const counts = await Promise.all(this.each.map((r) => r.forgetSilent(olderThanMs)));
    return counts.reduce((a, b) => a + b, 0);
  }
}

/** The cluster gauges' per-shard figures, each shard's from its own database. */
export class RoutedClusterStatsRepository extends ClusterStatsRepository {
  constructor(private readonly pools: ShardPools) {
    super(pools.databases[0]!.pool);
  }

  private async perShard<T extends { shard: number }>(
    read: (repo: ClusterStatsRepository) => Promise<T[]>,
  ): Promise<T[]> {
    const parts = await everyDatabase(this.pools, async (d) =>
      (await read(new ClusterStatsRepository(d.pool))).filter((r) => d.shards.includes(r.shard)),
    );
    return parts.flat().sort((a, b) => a.shard - b.shard);
  }

  override dueBacklog(shardCount: number, cap?: number) {
    return this.perShard((r) => r.dueBacklog(shardCount, cap));
  }

  override outbox(shardCount: number, cap?: number) {
    return this.perShard((r) => r.outbox(shardCount, cap));
  }

  /** Each database counts the shards it does not hold as unowned too: those are taken off. */
  override async unownedShards(shardCount: number): Promise<number> {
    const counts = await everyDatabase(this.pools, async (d) =>
      Math.max(
        0,
        (await new ClusterStatsRepository(d.pool).unownedShards(shardCount)) - (shardCount - d.shards.length),
      ),
    );
    return counts.reduce((a, b) => a + b, 0);
  }
}
