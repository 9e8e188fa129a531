/**
 * The scheduler's hot path: claim due jobs under the shard fence, record their fires in the
 * outbox and advance their schedules, all in one transaction; then mark fires enqueued.
 */
import type { Pool, PoolClient } from 'pg';
import {
  fireIdOf,
  instantRangeProblem,
  isInstantInRange,
  MAX_EVENT_AGE_MS,
  storedScheduleProblem,
  storedTargetProblem,
  type ClaimableJob,
  type DueOccurrencePlan,
  type FireEvent,
  type ShardEpoch,
} from '@tickwork/domain';
import { bindTraceContext, type JobTraceOrigin, type TraceCarrier } from '@tickwork/telemetry';
import { inTransaction } from '../database';
import { ClaimTrace } from './claim-trace';
import { fireEventFromSnapshot, type FireEventSnapshot } from './fire-snapshot';
import { CLAIM_COLUMNS, claimableJobFromRow, type ClaimRow } from './rows';
import { JOB_CALENDARS_SQL } from './calendar-rows';

/** A due job as the claim sees it: the job, and whether its previous fire is still in flight. */
export interface DueJob {
  readonly job: ClaimableJob;
  /** Only computed for overlap FORBID jobs: the latest fire has not reached a final state. */
  readonly previousFireInFlight: boolean;
}

/** Plans one due job at database time `now` (pure; the domain's planDueOccurrences). */
export type ClaimPlanner = (due: DueJob, now: Date) => DueOccurrencePlan;

export interface ClaimRequest {
  readonly owner: string;
  readonly shards: readonly ShardEpoch[];
  readonly limit: number;
  readonly lookaheadMs: number;
  /** Per-tenant caps for this batch, given the tenants with due work (fairness and quotas). */
  readonly tenantCaps?: (tenantIds: readonly string[]) => ReadonlyMap<string, number>;
  /** A fresh `probeDue` of these shards, to claim from instead of probing again. */
  readonly probe?: DueProbe;
}

export interface ClaimResult {
  /** Database time of the claim. */
  readonly now: Date;
  /** Shards whose lease was valid for this claim; the others were not scanned. */
  readonly fencedOut: readonly number[];
  readonly fires: readonly ClaimedFire[];
  readonly skipped: number;
  readonly scanned: number;
  /** Jobs whose stored definition could not be planned: paused so they cannot block the shard. */
  readonly parked: readonly string[];
  /** Some tenant filled its cap: more may be due right now. */
  readonly saturated: boolean;
  /** The skipped occurrences behind `skipped`, by tenant and reason. */
  readonly skips: readonly ClaimSkip[];
}

/** Occurrences of one job that the claim skipped, and why (MISFIRE_SKIP, COALESCED, OVERLAP, …). */
export interface ClaimSkip {
  readonly tenantId: string;
  readonly reason: string;
  readonly occurrences: number;
}

export interface ClaimedFire {
  readonly shard: number;
  /** The outbox batch the fire was claimed in: Kafka's acknowledgement is recorded per batch. */
  readonly batchId: number;
  readonly event: FireEvent;
}

interface BrokenJob {
  readonly jobId: string;
  readonly tenantId: string;
  /** The due occurrence, as stored (it may be what is wrong with the job). */
  readonly nominal: unknown;
  readonly error: string;
}

/** One claimed occurrence's fires row: two may share a nominal instant, never a DST shift as well. */
interface FireRow {
  readonly jobId: string;
  readonly token: number;
  readonly nominal: string;
  readonly shift: number;
  readonly scheduled: string;
  /** The herd window's offset of the slot (0: none). */
  readonly spread: number;
  /** How far a calendar rule moved the occurrence (0: not moved), and the calendar `name@version`. */
  readonly calendarShift: number;
  readonly calendar: string | null;
}

/** One planned job's share of a claim's write, its instants already as ISO text. */
interface JobWrite {
  readonly jobId: string;
  readonly tenantId: string;
  readonly dueNominal: Date | null;
  readonly n: number;
  readonly next: string | null;
  readonly nextNominal: string | null;
  readonly nextShift: number;
  readonly nextCalendarShift: number;
  readonly status: 'SCHEDULED' | 'COMPLETED';
  readonly fires: readonly ClaimedFire[];
  readonly fireRows: readonly FireRow[];
  /** Per fire, the trace context to store (set once the claim's spans are begun). */
  traces: readonly (string | null)[];
  readonly skips: readonly ClaimSkip[];
  readonly skipRows: readonly {
    jobId: string;
    tenantId: string;
    reason: string;
    first: string;
    last: string;
    count: number;
    calendar: string | null;
  }[];
  readonly skipped: number;
}

/** What one write of a group of jobs produced. */
interface WriteOutcome {
  readonly fires: ClaimedFire[];
  readonly skips: readonly ClaimSkip[];
}

/**
 * max_event_age_ms of a job's retry policy as SQL, bounded: a value the validation would refuse
 * (not a number, or beyond double precision or an interval) must not fail the claim's statement
 * for every job of its lane.
 */
const MAX_EVENT_AGE_SQL = `(CASE WHEN jsonb_typeof(j.policies->'retry'->'max_event_age_ms') = 'number'
      THEN least(greatest((j.policies->'retry'->>'max_event_age_ms')::numeric, 0), ${MAX_EVENT_AGE_MS})::double precision
      ELSE 86400000 END)`;

/**
 * An error of one row's data (SQLSTATE class 22: a value out of range, an invalid datetime …;
 * class 23: a constraint the row breaks): another group of jobs may well succeed.
 */
export function isRowDataError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

/** What in a due job, as stored, the claim cannot work with; undefined when nothing. */
function storedJobProblem(job: ClaimableJob): string | undefined {
  const schedule = storedScheduleProblem(job.schedule) ?? storedTargetProblem(job.target);
  if (schedule !== undefined) return schedule;
  const nominal = job.nextNominalAt as unknown;
  if (nominal !== null && !(nominal instanceof Date && isInstantInRange(nominal.getTime())))
    return `next_nominal_at ${nominal instanceof Date ? (instantRangeProblem(nominal) ?? '') : `is ${String(nominal)}`}`;
  if (!Number.isSafeInteger(job.fenceToken) || !Number.isSafeInteger(job.firesCount))
    return `fence_token ${job.fenceToken} or fires_count ${job.firesCount} is beyond what the claim can count`;
  return undefined;
}

/** An instant of a plan as ISO text, refusing one the store and the wires cannot hold. */
function planned(at: Date, what: string): string {
  const problem = instantRangeProblem(at);
  if (problem !== undefined) throw new Error(`planned ${what} ${problem}`);
  return at.toISOString();
}

/** The write of one planned job; throws when the plan holds what the store could not. */
function jobWriteOf(job: ClaimableJob, p: DueOccurrencePlan): JobWrite {
  if (!Number.isSafeInteger(job.fenceToken + p.fires.length + 1))
    throw new Error(`fence_token ${job.fenceToken} + ${p.fires.length} is beyond what the claim can count`);
  const fires: ClaimedFire[] = [];
  const fireRows: FireRow[] = [];
  p.fires.forEach((f, i) => {
    const fenceToken = job.fenceToken + i + 1;
    const event: FireEvent = {
      jobId: job.jobId,
      tenantId: job.tenantId,
      fenceToken,
      fireId: fireIdOf({ jobId: job.jobId, fenceToken }),
      scheduledFor: f.scheduledFor,
      nominalTime: f.nominalTime,
      ...(f.spreadOffsetMs ? { spreadOffsetMs: f.spreadOffsetMs } : {}),
      attempt: 1,
      target: job.target,
      payload: job.payload,
      // The job has waited since its due time: a coalesced fire stands for occurrences since then.
      ...(i === 0 && job.nextRunAt && job.nextRunAt.getTime() < f.scheduledFor.getTime()
        ? { dueSince: job.nextRunAt }
        : {}),
    };
    fires.push({ shard: job.shard, batchId: 0, event });
    fireRows.push({
      jobId: job.jobId,
      token: fenceToken,
      nominal: planned(f.nominalTime, 'nominal time'),
      shift: f.dstShiftMs ?? 0,
      scheduled: planned(f.scheduledFor, 'fire time'),
      spread: f.spreadOffsetMs ?? 0,
      calendarShift: f.calendarShiftMs ?? 0,
      calendar: f.calendar ?? null,
    });
  });
  const skips: ClaimSkip[] = [];
  const skipRows: JobWrite['skipRows'][number][] = [];
  let skipped = 0;
  for (const k of p.skips) {
    skipped += k.occurrences;
    skips.push({ tenantId: job.tenantId, reason: k.reason, occurrences: k.occurrences });
    skipRows.push({
      jobId: job.jobId,
      tenantId: job.tenantId,
      reason: k.reason,
      first: planned(k.firstNominal, 'skipped occurrence'),
      last: planned(k.lastNominal, 'skipped occurrence'),
      count: k.occurrences,
      calendar: k.calendar ?? null,
    });
  }
  return {
    jobId: job.jobId,
    tenantId: job.tenantId,
    dueNominal: job.nextNominalAt,
    n: p.fires.length,
    next: p.next ? planned(p.next.scheduledFor, 'next run') : null,
    nextNominal: p.next ? planned(p.next.nominalTime, 'next occurrence') : null,
    nextShift: p.next?.dstShiftMs ?? 0,
    nextCalendarShift: p.next?.calendarShiftMs ?? 0,
    status: p.next ? 'SCHEDULED' : 'COMPLETED',
    fires,
    fireRows,
    traces: [],
    skips,
    skipRows,
    skipped,
  };
}

/** A tenant with due work in a shard. */
export interface DueTenant {
  readonly shard: number;
  readonly tenant_id: string;
}

/** What a lock-free probe saw in the shards the caller appears to hold. */
export interface DueProbe {
  readonly now: Date;
  /** Shards whose lease the caller held at the probe (without a lock). */
  readonly held: readonly number[];
  readonly due: readonly DueTenant[];
  /** Held shards with outbox batches to relay (orphaned past `relayAgeMs`, or manual). */
  readonly relay: readonly number[];
}

export interface DueProbeRequest {
  readonly owner: string;
  readonly shards: readonly ShardEpoch[];
  readonly lookaheadMs: number;
  /**
   * Outbox batches of scheduled claims this far past their release time count as orphaned (see
   * `pendingFires`).
   * Absent: the outbox is not looked at and `relay` is empty (a claim's own probe).
   */
  readonly relayAgeMs?: number;
}

/** The part of a probe that concerns `shards` (a lane's share of an instance-wide probe). */
export function probeOfShards(probe: DueProbe, shards: ReadonlySet<number>): DueProbe {
  return {
    now: probe.now,
    held: probe.held.filter((s) => shards.has(s)),
    due: probe.due.filter((d) => shards.has(d.shard)),
    relay: probe.relay.filter((s) => shards.has(s)),
  };
}

interface LeaseRow {
  shard: number;
  db_now: Date;
}

/** A claim that claimed nothing. */
function idleClaim(now: Date, fencedOut: readonly number[]): ClaimResult {
  return { now, fencedOut, fires: [], skipped: 0, scanned: 0, parked: [], saturated: false, skips: [] };
}

export class FireRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * Claims up to `limit` due jobs of the shards whose lease the caller still holds (owner,
   * epoch, not expired — checked under a share lock on the lease rows, so a takeover waits for
   * this transaction and then fences it out). Each claimed occurrence gets its own fence token.
   */
  async claimDueJobs(req: ClaimRequest, plan: ClaimPlanner): Promise<ClaimResult> {
    try {
      return await this.tracedClaim(req, plan, false);
    } catch (e) {
      // One job's data broke the batch's statement (an instant or a number the database refuses):
      // claim again, writing the jobs in halves under savepoints, so the ones that fail alone are
      // parked and the rest of the batch (and the lane) goes on. Rare, so the common claim pays
      // no savepoint for it.
      if (!isRowDataError(e)) throw e;
      return this.tracedClaim(req, plan, true);
    }
  }

  private async tracedClaim(req: ClaimRequest, plan: ClaimPlanner, isolate: boolean): Promise<ClaimResult> {
    // Spans are made only for claims that claimed or skipped something (most ticks find nothing),
    // and end after the commit: a rolled-back claim's spans say it failed.
    const claimTrace = new ClaimTrace(req.shards.length);
    try {
      const result = await this.claimInTransaction(req, plan, claimTrace, isolate);
      claimTrace.end();
      return result;
    } catch (e) {
      claimTrace.fail(e);
      throw e;
    }
  }

  /**
   * Which tenants have due work, and which shards have outbox batches to relay, in the shards the
   * caller appears to hold — one statement, no transaction, no locks — so that an idle tick (the
   * common case) costs one round trip for all of an instance's lanes. The claim transaction
   * re-checks the leases under a share lock before touching anything.
   */
  async probeDue(req: DueProbeRequest): Promise<DueProbe> {
    const { rows } = await this.pool.query<{
      db_now: Date;
      held: number[];
      due: DueTenant[];
      relay: number[];
    }>(
      `WITH RECURSIVE held AS (
         SELECT l.shard
           FROM shard_leases l
           JOIN unnest($1::int[], $2::bigint[]) AS o(shard, epoch) ON o.shard = l.shard AND o.epoch = l.epoch
          WHERE l.owner = $3 AND l.expires_at > now()
       ), t(shard, tenant_id) AS (
         -- A loose index scan over the tenants of each shard (one index probe per tenant).
         SELECT h.shard, (SELECT tenant_id FROM jobs WHERE shard = h.shard AND status = 'SCHEDULED' ORDER BY tenant_id LIMIT 1)
           FROM held h
         UNION ALL
         SELECT t.shard, (SELECT j.tenant_id FROM jobs j
                           WHERE j.shard = t.shard AND j.status = 'SCHEDULED' AND j.tenant_id > t.tenant_id
                           ORDER BY j.tenant_id LIMIT 1)
           FROM t WHERE t.tenant_id IS NOT NULL
       )
       SELECT now() AS db_now,
              ARRAY(SELECT shard FROM held) AS held,
              coalesce((
                SELECT json_agg(json_build_object('shard', t.shard, 'tenant_id', t.tenant_id))
                  FROM t
                 WHERE t.tenant_id IS NOT NULL
                   -- One probe per tenant for a due row.
                   AND EXISTS (SELECT 1 FROM jobs j
                                WHERE j.shard = t.shard AND j.tenant_id = t.tenant_id AND j.status = 'SCHEDULED'
                                  AND j.next_run_at <= now() + make_interval(secs => $4::double precision / 1000))
              ), '[]'::json) AS due,
              ARRAY(SELECT h.shard FROM held h
                     WHERE $5::double precision IS NOT NULL
                       AND EXISTS (SELECT 1 FROM fire_batches b
                                    WHERE b.shard = h.shard AND b.enqueued_at IS NULL
                                      AND (b.trigger <> 'SCHEDULE'
                                           OR b.release_at <= now() - make_interval(secs => $5::double precision / 1000)))
              ) AS relay`,
      [
        req.shards.map((s) => s.shard),
        req.shards.map((s) => s.epoch),
        req.owner,
        req.lookaheadMs,
        req.relayAgeMs ?? null,
      ],
    );
    const row = rows[0]!;
    return { now: row.db_now, held: row.held, due: row.due, relay: row.relay };
  }

  private async claimInTransaction(
    req: ClaimRequest,
    plan: ClaimPlanner,
    claimTrace: ClaimTrace,
    isolate: boolean,
  ): Promise<ClaimResult> {
    // The claim reads only the due tenants: its own probe skips the outbox.
    const probe = req.probe ?? (await this.probeDue(req));
    if (probe.due.length === 0) {
      return idleClaim(
        probe.now,
        req.shards.map((s) => s.shard).filter((s) => !probe.held.includes(s)),
      );
    }
    return inTransaction(this.pool, async (client) => {
      // KEY SHARE: a takeover (it bumps the epoch, a key column since migration 8) waits for this
      // claim; the owner's renewals (expires_at only) do not, so they never stall the claim lanes.
      const leases = await client.query<LeaseRow>(
        `SELECT l.shard, now() AS db_now
           FROM shard_leases l
           JOIN unnest($1::int[], $2::bigint[]) AS o(shard, epoch) ON o.shard = l.shard AND o.epoch = l.epoch
          WHERE l.owner = $3 AND l.expires_at > now()
          FOR KEY SHARE OF l`,
        [req.shards.map((s) => s.shard), req.shards.map((s) => s.epoch), req.owner],
      );
      const held = leases.rows.map((r) => r.shard);
      const fencedOut = req.shards.map((s) => s.shard).filter((s) => !held.includes(s));
      const now = leases.rows[0]?.db_now ?? (await client.query<{ now: Date }>('SELECT now()')).rows[0]!.now;
      const idle = idleClaim(now, fencedOut);
      if (held.length === 0) return idle;

      // The tenants the probe found due, in the shards whose lease still holds. A tenant that
      // became due since the probe is claimed on the next tick.
      const tenants = { rows: probe.due.filter((d) => held.includes(d.shard)) };
      if (tenants.rows.length === 0) return idle;

      const tenantIds = [...new Set(tenants.rows.map((r) => r.tenant_id))];
      const caps = req.tenantCaps?.(tenantIds) ?? new Map(tenantIds.map((t) => [t, req.limit]));
      // A tenant's cap is spread over the shards where it has due work.
      const shardsPerTenant = new Map<string, number>();
      for (const r of tenants.rows)
        shardsPerTenant.set(r.tenant_id, (shardsPerTenant.get(r.tenant_id) ?? 0) + 1);
      const q = { shard: [] as number[], tenant: [] as string[], cap: [] as number[] };
      for (const r of tenants.rows) {
        const cap = Math.ceil((caps.get(r.tenant_id) ?? 0) / shardsPerTenant.get(r.tenant_id)!);
        if (cap <= 0) continue;
        q.shard.push(r.shard);
        q.tenant.push(r.tenant_id);
        q.cap.push(cap);
      }
      if (q.shard.length === 0) return { ...idle, saturated: false };

      const due = await client.query<
        ClaimRow & { in_flight: boolean; slot: number; origin_trace: JobTraceOrigin | null }
      >(
        `SELECT d.*, q.cap AS slot
           FROM unnest($1::int[], $2::text[], $3::int[]) AS q(shard, tenant_id, cap)
           CROSS JOIN LATERAL (
             SELECT ${CLAIM_COLUMNS.split(', ')
               .map((c) => `j.${c}`)
               .join(', ')},
                    (j.policies->>'overlap' = 'FORBID' AND EXISTS (
                      SELECT 1 FROM fires f
                        LEFT JOIN job_runs r ON r.job_id = f.job_id AND r.fence_token = f.fence_token
                       WHERE f.job_id = j.job_id AND f.fence_token = j.fence_token
                         AND (   (r.status IS NULL AND f.claimed_at > now() - make_interval(secs => ${MAX_EVENT_AGE_SQL} / 1000))
                              OR (r.status = 'RUNNING' AND r.lease_expires_at > now())
                              OR r.status = 'RETRYING'))) AS in_flight,
                    ${JOB_CALENDARS_SQL} AS calendars,
                    j.trace_context AS origin_trace
               FROM jobs j
              WHERE j.shard = q.shard AND j.tenant_id = q.tenant_id AND j.status = 'SCHEDULED'
                AND j.next_run_at <= now() + make_interval(secs => $4::double precision / 1000)
              ORDER BY j.next_run_at
              LIMIT q.cap
              FOR UPDATE OF j SKIP LOCKED
           ) d`,
        [q.shard, q.tenant, q.cap, req.lookaheadMs],
      );
      if (due.rows.length === 0) return idle;
      const perGroup = new Map<string, number>();
      for (const r of due.rows)
        perGroup.set(`${r.shard}|${r.tenant_id}`, (perGroup.get(`${r.shard}|${r.tenant_id}`) ?? 0) + 1);
      const saturated = q.shard.some((s, i) => (perGroup.get(`${s}|${q.tenant[i]}`) ?? 0) >= q.cap[i]!);
      const dueJobs: DueJob[] = [];
      const broken: BrokenJob[] = [];
      const origins = new Map<string, JobTraceOrigin>();
      for (const r of due.rows) {
        if (r.origin_trace) origins.set(r.job_id, r.origin_trace);
        try {
          const job = claimableJobFromRow(r);
          const problem = storedJobProblem(job);
          if (problem !== undefined) throw new Error(problem);
          dueJobs.push({ job, previousFireInFlight: r.in_flight === true });
        } catch (e) {
          broken.push({
            jobId: r.job_id,
            tenantId: r.tenant_id,
            nominal: r.next_nominal_at,
            error: (e as Error).message,
          });
        }
      }
      const result = await this.applyPlans(client, req.owner, now, fencedOut, dueJobs, plan, broken, {
        claimTrace,
        origins,
        isolate,
      });
      return { ...result, scanned: due.rows.length, saturated };
    });
  }

  private async applyPlans(
    client: PoolClient,
    owner: string,
    now: Date,
    fencedOut: number[],
    dueJobs: DueJob[],
    plan: ClaimPlanner,
    broken: BrokenJob[],
    tracing: {
      readonly claimTrace: ClaimTrace;
      readonly origins: ReadonlyMap<string, JobTraceOrigin>;
      readonly isolate: boolean;
    },
  ): Promise<Omit<ClaimResult, 'saturated'>> {
    const writes: JobWrite[] = [];
    let skippedInPlan = 0;
    for (const due of dueJobs) {
      const job = due.job;
      try {
        const w = jobWriteOf(job, plan(due, now));
        writes.push(w);
        skippedInPlan += w.skipped;
      } catch (e) {
        // A planning error, or a plan the store could not hold: the job is parked, the batch goes on.
        broken.push({
          jobId: job.jobId,
          tenantId: job.tenantId,
          nominal: job.nextNominalAt,
          error: (e as Error).message,
        });
      }
    }

    const allFires = writes.flatMap((w) => w.fires);
    const traces =
      allFires.length > 0 || skippedInPlan > 0
        ? tracing.claimTrace.begin(
            allFires.map((f) => ({ ...f, origin: tracing.origins.get(f.event.jobId) })),
            skippedInPlan,
          )
        : [];
    let at = 0;
    for (const w of writes) {
      w.traces = traces.slice(at, at + w.fires.length);
      at += w.fires.length;
    }

    const written: WriteOutcome[] = [];
    if (writes.length > 0) {
      if (tracing.isolate) await this.writeIsolating(client, owner, writes, broken, written);
      else written.push(await this.writeJobs(client, owner, writes));
    }
    if (broken.length > 0) await this.parkBrokenJobs(client, broken, now);
    const fires = written.flatMap((o) => o.fires);
    const skips = written.flatMap((o) => o.skips);
    return {
      now,
      fencedOut,
      fires,
      skipped: skips.reduce((n, s) => n + s.occurrences, 0),
      skips,
      scanned: dueJobs.length + broken.length,
      parked: broken.map((b) => b.jobId),
    };
  }

  /**
   * Writes the jobs in groups, each under a savepoint: a group whose statement fails on a row's
   * data is rolled back and split in halves, down to the job that fails alone, which is parked
   * with the database's reason. About 2·log2(n) statements per bad job.
   */
  private async writeIsolating(
    client: PoolClient,
    owner: string,
    group: readonly JobWrite[],
    broken: BrokenJob[],
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
        broken.push({
          jobId: w.jobId,
          tenantId: w.tenantId,
          nominal: w.dueNominal,
          error: (e as Error).message,
        });
        return;
      }
    }
    const half = Math.ceil(group.length / 2);
    await this.writeIsolating(client, owner, group.slice(0, half), broken, written);
    await this.writeIsolating(client, owner, group.slice(half), broken, written);
  }

  /** Advances `group`'s jobs, records their fires in new outbox batches and their skips. */
  private async writeJobs(
    client: PoolClient,
    owner: string,
    group: readonly JobWrite[],
  ): Promise<WriteOutcome> {
    const fires: ClaimedFire[] = group.flatMap((w) => w.fires.map((f) => ({ ...f })));
    const rows = group.flatMap((w) => w.fireRows);
    const traces = group.flatMap((w) => w.traces);
    // One statement advances the jobs, opens one outbox batch per shard of this claim (a relay
    // takes over a shard's batches whole) and records the fires in them. The fire rows take the
    // job's tenant, target and payload from the UPDATE's RETURNING, not from a second read of
    // the jobs, and the event snapshot is built by the server: binding it from here would send
    // megabytes of JSON per batch that the database already has.
    // An occurrence that already has a fire (a schedule changed or a job re-created after its
    // occurrence was claimed early) is not fired twice: its row is not inserted, and its event is
    // returned among `refired` and dropped here.
    const claimed = await client.query<{
      batch_id: string | null;
      shard: number | null;
      refired: string | null;
    }>(
      `WITH u AS (
         UPDATE jobs j
            SET fence_token = j.fence_token + v.n,
                fires_count = j.fires_count + v.n,
                next_run_at = v.next,
                next_nominal_at = v.nominal,
                next_dst_shift_ms = v.shift,
                next_calendar_shift_ms = v.cal_shift,
                status = v.status,
                -- A resume's catch-up choice applies to this claim, the first after the resume.
                resume_catch_up = NULL,
                last_fired_at = CASE WHEN v.n > 0 THEN now() ELSE j.last_fired_at END,
                updated_at = now()
           FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::timestamptz[], $5::text[], $13::int[], $16::bigint[]) AS v(job_id, n, next, nominal, status, shift, cal_shift)
          WHERE j.job_id = v.job_id
         RETURNING j.job_id, j.tenant_id, j.shard, j.target, j.payload, j.version
       ), b AS (
         -- A batch claimed ahead is due on Kafka at its latest fire's time (the relay waits for it).
         INSERT INTO fire_batches (shard, trigger, claimed_by, fires, release_at)
         SELECT x.shard, 'SCHEDULE', $11, count(*), greatest(now(), max(x.scheduled))
           FROM unnest($12::int[], $9::timestamptz[]) AS x(shard, scheduled) GROUP BY x.shard
         RETURNING batch_id, shard
       ), f AS (
         -- Each fire records the job version it was claimed under (its event is that version's snapshot).
         INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, dst_shift_ms, scheduled_for, spread_offset_ms, claimed_by, trace_context, batch_id, job_version, calendar_shift_ms, calendar, event)
         SELECT v.job_id, v.token, u.tenant_id, u.shard, v.nominal, v.shift, v.scheduled, v.spread, $11, v.trace, b.batch_id, u.version, v.cal_shift, v.calendar,
                jsonb_build_object(
                  'job_id', v.job_id, 'tenant_id', u.tenant_id, 'fence_token', v.token,
                  'fire_id', v.job_id || ':' || v.token,
                  'scheduled_for', to_char(v.scheduled AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                  'nominal_time', to_char(v.nominal AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                  'attempt', 1, 'target', u.target, 'payload', u.payload)
                || CASE WHEN v.spread > 0 THEN jsonb_build_object('spread_offset_ms', v.spread) ELSE '{}'::jsonb END
           FROM unnest($6::text[], $7::bigint[], $8::timestamptz[], $9::timestamptz[], $10::jsonb[], $14::int[], $15::bigint[], $17::bigint[], $18::text[]) AS v(job_id, token, nominal, scheduled, trace, shift, spread, cal_shift, calendar)
           JOIN u ON u.job_id = v.job_id
           JOIN b ON b.shard = u.shard
         -- An occurrence is (nominal instant, DST shift, calendar shift): two at one instant are both fired.
         ON CONFLICT (job_id, nominal_time, dst_shift_ms, calendar_shift_ms) WHERE trigger = 'SCHEDULE' DO NOTHING
         RETURNING job_id, fence_token
       )
       SELECT batch_id, shard, NULL AS refired FROM b
       UNION ALL
       SELECT NULL, NULL, v.job_id || ':' || v.token
         FROM unnest($6::text[], $7::bigint[]) AS v(job_id, token)
        WHERE NOT EXISTS (SELECT 1 FROM f WHERE f.job_id = v.job_id AND f.fence_token = v.token)`,
      [
        group.map((w) => w.jobId),
        group.map((w) => w.n),
        group.map((w) => w.next),
        group.map((w) => w.nextNominal),
        group.map((w) => w.status),
        rows.map((r) => r.jobId),
        rows.map((r) => r.token),
        rows.map((r) => r.nominal),
        rows.map((r) => r.scheduled),
        traces,
        owner,
        fires.map((f) => f.shard),
        group.map((w) => w.nextShift),
        rows.map((r) => r.shift),
        rows.map((r) => r.spread),
        group.map((w) => w.nextCalendarShift),
        rows.map((r) => r.calendarShift),
        rows.map((r) => r.calendar),
      ],
    );
    const batchOfShard = new Map<number, number>();
    const refired = new Set<string>();
    for (const r of claimed.rows)
      if (r.refired !== null) refired.add(r.refired);
      else batchOfShard.set(r.shard!, Number(r.batch_id));
    for (let i = 0; i < fires.length; i++) {
      const f = fires[i]!;
      fires[i] = { ...f, batchId: batchOfShard.get(f.shard)! };
    }
    if (refired.size > 0) await this.dropRefired(client, fires, refired);
    const skip = group.flatMap((w) => w.skipRows);
    if (skip.length > 0) {
      await client.query(
        // With the job version the skip was planned under (the job row is locked by this claim).
        `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences, calendar, job_version)
         SELECT k.*, j.version
           FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::bigint[], $7::text[])
                AS k(job_id, tenant_id, reason, first_nominal, last_nominal, occurrences, calendar)
           LEFT JOIN jobs j ON j.job_id = k.job_id`,
        [
          skip.map((k) => k.jobId),
          skip.map((k) => k.tenantId),
          skip.map((k) => k.reason),
          skip.map((k) => k.first),
          skip.map((k) => k.last),
          skip.map((k) => k.count),
          skip.map((k) => k.calendar),
        ],
      );
    }
    return { fires, skips: group.flatMap((w) => w.skips) };
  }

  /**
   * Takes the occurrences that already had a fire out of `fires` (in place) and out of their
   * batches' counts; a batch left with no fire is deleted, so no empty batch waits for a relay.
   */
  private async dropRefired(
    client: PoolClient,
    fires: ClaimedFire[],
    refired: ReadonlySet<string>,
  ): Promise<void> {
    const dropped = new Map<number, number>();
    for (let i = fires.length - 1; i >= 0; i--) {
      const f = fires[i]!;
      if (!refired.has(f.event.fireId)) continue;
      dropped.set(f.batchId, (dropped.get(f.batchId) ?? 0) + 1);
      fires.splice(i, 1);
    }
    await client.query(
      `WITH d AS (SELECT * FROM unnest($1::bigint[], $2::int[]) AS d(batch_id, n)),
            emptied AS (DELETE FROM fire_batches b USING d WHERE b.batch_id = d.batch_id AND b.fires <= d.n)
       UPDATE fire_batches b SET fires = b.fires - d.n FROM d WHERE b.batch_id = d.batch_id AND b.fires > d.n`,
      [[...dropped.keys()], [...dropped.values()]],
    );
  }

  /**
   * A job whose stored definition cannot be planned (it should never happen: the boundary
   * validates) must not block its shard: it is paused, and the occurrence ledger says why.
   */
  private async parkBrokenJobs(client: PoolClient, broken: BrokenJob[], now: Date): Promise<void> {
    // The ledger row's instant: the job's due occurrence when it is one the store can hold, else now.
    const at = (b: BrokenJob) =>
      b.nominal instanceof Date && isInstantInRange(b.nominal.getTime()) ? b.nominal : now;
    await client.query(
      `UPDATE jobs SET status = 'PAUSED', updated_at = now() WHERE job_id = ANY($1::text[])`,
      [broken.map((b) => b.jobId)],
    );
    await client.query(
      `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences)
       SELECT v.id, v.tenant, 'INVALID_DEFINITION: ' || v.err, v.at, v.at, 1
         FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[]) AS v(id, tenant, at, err)`,
      [
        broken.map((b) => b.jobId),
        broken.map((b) => b.tenantId),
        broken.map(at),
        // PostgreSQL text holds no NUL; the reason may quote a stored value that has one.
        broken.map((b) => b.error.split(String.fromCharCode(0)).join('').slice(0, 500)),
      ],
    );
  }

  /**
   * Fire-log retention: deletes the oldest confirmed batches claimed more than `retentionMs` ago,
   * with their fires — whole batches, about `batchSize` fires per call (at least one batch) —
   * and skipped-occurrence records and fire SLO verdicts as old. Batches still in the outbox are never touched.
   * Returns the fires deleted.
   */
  async purgeFireLog(retentionMs: number, batchSize: number): Promise<number> {
    const { rows } = await this.pool.query<{ fires: string; skips: string }>(
      `WITH candidates AS (
         SELECT batch_id, sum(fires) OVER (ORDER BY batch_id) - fires AS before
           FROM (SELECT batch_id, fires FROM fire_batches
                  WHERE enqueued_at IS NOT NULL
                    AND claimed_at < now() - make_interval(secs => $1::double precision / 1000)
                  ORDER BY batch_id
                  LIMIT $2
                  FOR UPDATE SKIP LOCKED) o
       ), doomed AS (
         SELECT batch_id FROM candidates WHERE before < $2
       ), gone AS (
         DELETE FROM fires f USING doomed d WHERE f.batch_id = d.batch_id RETURNING 1
       ), batches AS (
         DELETE FROM fire_batches b USING doomed d WHERE b.batch_id = d.batch_id
       ), skips AS (
         DELETE FROM occurrence_skips
          WHERE id IN (SELECT id FROM occurrence_skips
                        WHERE recorded_at < now() - make_interval(secs => $1::double precision / 1000)
                        ORDER BY id LIMIT $2)
         RETURNING 1
       ), slo AS (
         -- Fire SLO verdicts as old go with their fires.
         DELETE FROM occurrence_slo
          WHERE (job_id, fence_token) IN (SELECT job_id, fence_token FROM occurrence_slo
                        WHERE recorded_at < now() - make_interval(secs => $1::double precision / 1000)
                        ORDER BY recorded_at LIMIT $2)
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM gone) AS fires,
              GREATEST((SELECT count(*) FROM skips), (SELECT count(*) FROM slo)) AS skips`,
      [retentionMs, batchSize],
    );
    // A pass ends when a call comes back short: count skips too, or a backlog of them would stop it.
    return Math.max(Number(rows[0]!.fires), Number(rows[0]!.skips));
  }

  /** Marks outbox batches as confirmed on Kafka (every fire of each was acknowledged). */
  async markEnqueued(batchIds: readonly number[]): Promise<void> {
    if (batchIds.length === 0) return;
    await this.pool.query(
      `UPDATE fire_batches SET enqueued_at = now() WHERE batch_id = ANY($1::bigint[]) AND enqueued_at IS NULL`,
      [[...new Set(batchIds)]],
    );
  }

  /**
   * Outbox batches of shards the caller holds that were due on Kafka (their release time: the
   * claim, or the latest fire's time for a batch claimed ahead) at least `minAgeMs` ago and are
   * not confirmed — fires whose claimer died between commit and produce — oldest first, whole
   * batches only, up to about `limit` fires (at least one batch). `exclude`: batches the caller is
   * still publishing itself (held for their time, or waiting for their acknowledgement).
   */
  async pendingFires(req: {
    owner: string;
    shards: readonly ShardEpoch[];
    minAgeMs: number;
    limit: number;
    exclude?: readonly number[];
  }): Promise<ClaimedFire[]> {
    const { rows } = await this.pool.query<{
      shard: number;
      batch_id: string;
      event: FireEventSnapshot;
      trace_context: TraceCarrier | null;
    }>(
      `WITH pending AS (
         SELECT b.batch_id, b.claimed_at, sum(b.fires) OVER (ORDER BY b.claimed_at, b.batch_id) - b.fires AS before
           FROM fire_batches b
           JOIN shard_leases l ON l.shard = b.shard
           JOIN unnest($1::int[], $2::bigint[]) AS o(shard, epoch) ON o.shard = l.shard AND o.epoch = l.epoch
          WHERE l.owner = $3 AND l.expires_at > now()
            AND b.enqueued_at IS NULL
            AND b.batch_id <> ALL($6::bigint[])
            -- Manual and replayed fires have no claimer publishing them: relay them at once. A
            -- claimed batch is orphaned once it is the relay age past its release time.
            AND (b.trigger <> 'SCHEDULE' OR b.release_at <= now() - make_interval(secs => $4::double precision / 1000))
       )
       SELECT f.shard, f.batch_id, f.event, f.trace_context
         FROM pending p
         JOIN fires f ON f.batch_id = p.batch_id
        WHERE p.before < $5
        ORDER BY p.claimed_at, p.batch_id`,
      [
        req.shards.map((s) => s.shard),
        req.shards.map((s) => s.epoch),
        req.owner,
        req.minAgeMs,
        req.limit,
        req.exclude ?? [],
      ],
    );
    return rows.map((r) => {
      const event = fireEventFromSnapshot(r.event);
      // A relayed fire is published under the trace it was claimed in.
      bindTraceContext(event, r.trace_context ?? undefined);
      return { shard: r.shard, batchId: Number(r.batch_id), event };
    });
  }
}
