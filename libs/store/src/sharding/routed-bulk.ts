/**
 * Label-wide (bulk) actions over a sharded store: the matching jobs are counted in every database
 * and changed one bounded window at a time, database after database. Each window is one
 * transaction in one database, as it is on one database; the window cursor names its database.
 */
import {
  NotShardedError,
  type AuditEntry,
  type BulkCandidate,
  type BulkScope,
  type BulkWindowChange,
  type JsonValue,
  type ResumedPause,
} from '@tickwork/domain';
import { BulkRepository } from '../repositories/bulk.repository';
import type { ShardPools } from './shard-pools';

/** A window cursor: the database's index in the map and the last job id done there (none: its start). */
export function bulkCursorOf(database: number, after: string | null): string {
  return `${database}:${after ?? ''}`;
}

/** Reads a cursor of bulkCursorOf (null: the first database's start); throws on a foreign one. */
export function parseBulkCursor(
  cursor: string | null,
  databases: number,
): { database: number; after: string | null } {
  if (cursor === null) return { database: 0, after: null };
  const colon = cursor.indexOf(':');
  const database = Number(cursor.slice(0, colon));
  if (colon < 1 || !Number.isInteger(database) || database < 0 || database >= databases)
    throw new Error(`not a bulk window cursor of this store: ${JSON.stringify(cursor)}`);
  const after = cursor.slice(colon + 1);
  return { database, after: after === '' ? null : after };
}

export class RoutedBulkRepository extends BulkRepository {
  private readonly each: BulkRepository[];

  constructor(pools: ShardPools) {
    super(pools.databases[0]!.pool);
    this.each = pools.databases.map((d) => new BulkRepository(d.pool));
  }

  /** Matches summed over every database; the sample is the lowest job ids of all. */
  override async count(scope: BulkScope, sample: number): Promise<{ matched: number; sample: string[] }> {
    const parts = await Promise.all(this.each.map((r) => r.count(scope, sample)));
    return {
      matched: parts.reduce((n, p) => n + p.matched, 0),
      sample: parts
        .flatMap((p) => p.sample)
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
        .slice(0, sample),
    };
  }

  /** The next window of the database the cursor names; when that one is done, the next database's start. */
  override async window<T extends BulkWindowChange>(
    scope: BulkScope,
    cursor: string | null,
    scan: number,
    audit: AuditEntry,
    auditDetails: Record<string, JsonValue>,
    decide: (candidates: readonly BulkCandidate[]) => T,
  ): Promise<{ end: string | null; change: T }> {
    const { database, after } = parseBulkCursor(cursor, this.each.length);
    const { end, change } = await this.each[database]!.window(
      scope,
      after,
      scan,
      audit,
      auditDetails,
      decide,
    );
    if (end !== null) return { end: bulkCursorOf(database, end), change };
    return { end: database + 1 < this.each.length ? bulkCursorOf(database + 1, null) : null, change };
  }

  // The scheduler's pause sweep runs per database over that database's own repository.
  override resumeExpiredPauses(
    _shards: readonly number[],
    _limit: number,
    _instance: string,
  ): Promise<ResumedPause[]> {
    return Promise.reject(new NotShardedError("the pause sweep through the API's routed store"));
  }
}
