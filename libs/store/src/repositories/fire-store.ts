/**
 * The scheduler's claim and outbox on PostgreSQL (the adapter of libs/scheduling's ClaimStore and
 * FireOutbox ports): claim due jobs under the shard fence, record their fires in the outbox and
 * advance their schedules, all in one transaction; then mark fires enqueued. The statements are in
 * ../sql; what is written is built by the caller's ClaimBuilder (the domain's buildClaim).
 */
import type { Pool, PoolClient } from 'pg';
import {
  claimColumns,
  claimLanes,
  lanesSaturated,
  type ClaimBuilder,
  type ClaimedFire,
  type ClaimRequest,
  type ClaimResult,
  type ClaimSkip,
  type DueProbe,
  type DueProbeRequest,
  type JobClaim,
  type PendingFiresRequest,
  type UnplannableJob,
} from '@tickwork/domain';
import { inTransaction } from '../database';
import { lockHeldLeases } from '../sql/claim-leases';
import { isRowDataError } from '../sql/db';
import { lockDueJobs } from '../sql/due-jobs';
import { purgeFireLog } from '../sql/fire-log';
import { recordSkips } from '../sql/occurrence-skips';
import { markEnqueued, pendingFires } from '../sql/outbox';
import { parkJobs } from '../sql/park-jobs';
import { probeDue } from '../sql/probe-due';
import { dropRefired, writeClaims } from '../sql/write-claims';

/** What one write of a group of jobs produced. */
interface WriteOutcome {
  readonly fires: ClaimedFire[];
  readonly skips: readonly ClaimSkip[];
}

/** A claim that claimed nothing. */
function idleClaim(now: Date, fencedOut: readonly number[]): ClaimResult {
  return { now, fencedOut, fires: [], skipped: 0, scanned: 0, parked: [], saturated: false, skips: [] };
}

export class FireStore {
  constructor(private readonly pool: Pool) {}

  /**
   * Claims up to `limit` due jobs of the shards whose lease the caller still holds (owner,
   * epoch, not expired — checked under a share lock on the lease rows, so a takeover waits for
   * this transaction and then fences it out). Each claimed occurrence gets its own fence token.
   */
  async claimDueJobs(req: ClaimRequest, build: ClaimBuilder): Promise<ClaimResult> {
    try {
      return await this.claimInTransaction(req, build, false);
    } catch (e) {
      // One job's data broke the batch's statement (an instant or a number the database refuses):
      // claim again, writing the jobs in halves under savepoints, so the ones that fail alone are
      // parked and the rest of the batch (and the lane) goes on. Rare, so the common claim pays
      // no savepoint for it. `build` is called again: the first attempt rolled back.
      if (!isRowDataError(e)) throw e;
      return this.claimInTransaction(req, build, true);
    }
  }

  /** The lock-free probe of the shards the caller appears to hold (sql/probe-due.ts). */
  probeDue(req: DueProbeRequest): Promise<DueProbe> {
    return probeDue(this.pool, req);
  }

  /** Unconfirmed outbox batches to relay (sql/outbox.ts). */
  pendingFires(req: PendingFiresRequest): Promise<ClaimedFire[]> {
    return pendingFires(this.pool, req);
  }

  /** Marks outbox batches as confirmed on Kafka. */
  markEnqueued(batchIds: readonly number[]): Promise<void> {
    return markEnqueued(this.pool, batchIds);
  }

  /** Fire-log retention, one page (sql/fire-log.ts); returns the rows deleted. */
  purgeFireLog(retentionMs: number, batchSize: number): Promise<number> {
    return purgeFireLog(this.pool, retentionMs, batchSize);
  }

  private async claimInTransaction(
    req: ClaimRequest,
    build: ClaimBuilder,
    isolate: boolean,
  ): Promise<ClaimResult> {
    // The claim reads only the due tenants: its own probe skips the outbox.
    const probe = req.probe ?? (await probeDue(this.pool, req));
    if (probe.due.length === 0)
      return idleClaim(
        probe.now,
        req.shards.map((s) => s.shard).filter((s) => !probe.held.includes(s)),
      );
    return inTransaction(this.pool, async (client) => {
      const { held, now } = await lockHeldLeases(client, req.owner, req.shards);
      const fencedOut = req.shards.map((s) => s.shard).filter((s) => !held.includes(s));
      const idle = idleClaim(now, fencedOut);
      // The tenants the probe found due, in the shards whose lease still holds. A tenant that
      // became due since the probe is claimed on the next tick.
      const dueTenants = probe.due.filter((d) => held.includes(d.shard));
      if (dueTenants.length === 0) return idle;
      const tenantIds = [...new Set(dueTenants.map((r) => r.tenant_id))];
      const lanes = claimLanes(dueTenants, req.tenantCaps?.(tenantIds), req.limit);
      if (lanes.shard.length === 0) return idle;

      const locked = await lockDueJobs(client, lanes, req.lookaheadMs);
      if (locked.scanned === 0) return idle;
      const batch = build(locked.due, now);
      const parked: UnplannableJob[] = [...locked.unreadable, ...batch.unplannable];
      const written: WriteOutcome[] = [];
      if (batch.jobs.length > 0) {
        if (isolate) await this.writeIsolating(client, req.owner, batch.jobs, parked, written);
        else written.push(await this.writeJobs(client, req.owner, batch.jobs));
      }
      if (parked.length > 0) await parkJobs(client, parked, now);
      const skips = written.flatMap((o) => o.skips);
      return {
        now,
        fencedOut,
        fires: written.flatMap((o) => o.fires),
        skipped: skips.reduce((n, s) => n + s.occurrences, 0),
        skips,
        scanned: locked.scanned,
        parked: parked.map((b) => b.jobId),
        saturated: lanesSaturated(lanes, locked.perLane),
      };
    });
  }

  /**
   * Writes the jobs in groups, each under a savepoint: a group whose statement fails on a row's
   * data is rolled back and split in halves, down to the job that fails alone, which is parked
   * with the database's reason. About 2·log2(n) statements per bad job.
   */
  private async writeIsolating(
    client: PoolClient,
    owner: string,
    group: readonly JobClaim[],
    parked: UnplannableJob[],
    written: WriteOutcome[],
  ): Promise<void> {
    await client.query('SAVEPOINT claim_write');
    try {
      written.push(await this.writeJobs(client, owner, group));
      await client.query('RELEASE SAVEPOINT claim_write');
      return;
    } catch (e) {
      if (!isRowDataError(e)) throw e;
      await client.query('ROLLBACK TO SAVEPOINT claim_write');
      await client.query('RELEASE SAVEPOINT claim_write');
      if (group.length === 1) {
        const w = group[0]!;
        parked.push({
          jobId: w.jobId,
          tenantId: w.tenantId,
          nominal: w.dueNominal,
          error: (e as Error).message,
        });
        return;
      }
    }
    const half = Math.ceil(group.length / 2);
    await this.writeIsolating(client, owner, group.slice(0, half), parked, written);
    await this.writeIsolating(client, owner, group.slice(half), parked, written);
  }

  /** Advances `group`'s jobs, records their fires in new outbox batches and their skips. */
  private async writeJobs(
    client: PoolClient,
    owner: string,
    group: readonly JobClaim[],
  ): Promise<WriteOutcome> {
    const columns = claimColumns(group);
    const { batchOfShard, refired } = await writeClaims(client, owner, columns);
    const fires: ClaimedFire[] = [];
    const dropped = new Map<number, number>();
    for (const w of group)
      for (const f of w.fires) {
        const batchId = batchOfShard.get(f.shard)!;
        if (refired.has(f.event.fireId)) dropped.set(batchId, (dropped.get(batchId) ?? 0) + 1);
        else fires.push({ ...f, batchId });
      }
    if (dropped.size > 0) await dropRefired(client, dropped);
    await recordSkips(client, columns.skips);
    return { fires, skips: group.flatMap((w) => w.skips) };
  }
}
