/** The run ledger: the executor's idempotency key and lease per fire (job_id, fence_token). */
import type { Pool } from 'pg';
import {
  policiesFromWire,
  type DeadLetterReason,
  LEASE_ISSUER_CHARS,
  type FireEvent,
  type FireKey,
  type RecordedRun,
  type ResultEventsPolicy,
  type Run,
  type RunCompletion,
  type RunStart,
  type RunState,
  type RunStatus,
  type UnleasedRun,
} from '@tickwork/domain';
import { isTransientDatabaseError } from '../transient-error';
import { RUN_COLUMNS, runFromRow, type RunRow } from './rows';

// The ledger's vocabulary is the domain's (the executor's RunLedger port speaks it).
export type { RecordedRun, RunCompletion, RunStart, RunState, UnleasedRun } from '@tickwork/domain';

interface RunStateRow extends RunRow {
  next_attempt_at: Date | null;
  handed_off_at: Date | null;
  dead_letter_reason: DeadLetterReason | null;
  lease_remaining_ms: number;
}

const STATE_COLUMNS = `${RUN_COLUMNS}, next_attempt_at, handed_off_at, dead_letter_reason,
  GREATEST(0, COALESCE(EXTRACT(EPOCH FROM (lease_expires_at - now())) * 1000, 0))::float8 AS lease_remaining_ms`;

function stateFromRow(row: RunStateRow): RunState {
  return {
    ...runFromRow(row),
    nextAttemptAt: row.next_attempt_at,
    handedOffAt: row.handed_off_at,
    leaseRemainingMs: row.lease_remaining_ms,
    deadLetterReason: row.dead_letter_reason,
  };
}

const DEADLOCK = '40P01';

/** The rows of recordUnleasedRuns ($1-$7, $9, $10), as `i`. */
const UNLEASED_INPUT = `unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
                       $7::double precision[], $9::int[], $10::uuid[], $11::bigint[])
                AS i(job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, duration_ms, http_status, lease_token, spread_offset_ms)`;

/** The rows of completeRuns ($1-$8), as `c`. */
const COMPLETION_INPUT = `unnest($1::text[], $2::bigint[], $3::uuid[], $4::text[], $5::int[], $6::text[], $7::timestamptz[], $8::text[])
                AS c(job_id, fence_token, lease_token, status, http_status, error, next_attempt_at, dead_letter_reason)`;

/**
 * The run's job's result_events policy (null: none chosen, or the job is gone), for an unleased
 * run's record: a primary-key probe in the same statement, as beginRun reads the policies.
 */
const RESULT_EVENTS_OF = (runs: string) =>
  `(SELECT jj.policies ->> 'result_events' FROM jobs jj WHERE jj.job_id = ${runs}.job_id) AS result_events`;

/** Runs a statement again (a few times) when PostgreSQL picked it as a deadlock victim. */
async function retryOnDeadlock<T>(statement: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (e) {
      if ((e as { code?: string }).code !== DEADLOCK || attempt >= 3) throw e;
      await new Promise((r) => setTimeout(r, 10 * attempt));
    }
  }
}

/** How RunRepository judges a lease's holder dead before the lease expires (ExecutorLivenessRepository). */
export interface HolderLiveness {
  /** A holder silent this long, while a witness beat without a break, is dead: its runs are taken over. */
  readonly deadAfterMs: number;
  /** A witness's last beat is at most this old (it is beating now). */
  readonly witnessFreshMs: number;
}

/** The defaults: silent 5 s (five beats missed) while another executor beat within the last 2.5 s. */
export const DEFAULT_HOLDER_LIVENESS: HolderLiveness = { deadAfterMs: 5_000, witnessFreshMs: 2_500 };

/** The run ledger in PostgreSQL (job_runs): implements libs/execution's RunLedger port. */
export class RunRepository {
  constructor(
    private readonly pool: Pool,
    private readonly liveness: HolderLiveness = DEFAULT_HOLDER_LIVENESS,
  ) {}

  /** Whether `error`, thrown by one of these statements, says the database could not be reached (try again) rather than that the statement was wrong. */
  isUnavailable(error: unknown): boolean {
    return isTransientDatabaseError(error);
  }

  /**
   * Starts (or takes over) the run of a fire, in one round trip that also reads the job's retry
   * policy. Inserts RUNNING with a new lease token; takes over a RUNNING run whose lease expired,
   * or a RETRYING run whose failed attempt is older than this one. Anything else is skipped:
   * final, running under a live lease, or a retry already scheduled for this or a later attempt.
   *
   * `leaseToken` (issueLeaseToken) is the token to lease the run under; without one the database
   * makes one up. A RUNNING run whose live lease was issued by the same issuer is taken back at
   * once: its issuer is not working on it (an executor never begins a fire it is running), so it is
   * a lease whose outcome write was given up, or this very insert tried again after its answer was
   * lost. A lease of any other issuer is left alone until it expires, or until its issuer is dead:
   * silent in executor_liveness for `deadAfterMs` of a stretch in which another executor, beating
   * now, beat without a break (so the database was reachable: see ExecutorLivenessRepository). An
   * issuer with no liveness row (an executor that does not beat) is never judged dead.
   */
  async beginRun(fire: FireEvent, owner: string, leaseMs: number, leaseToken?: string): Promise<RunStart> {
    return (
      await this.beginRuns([fire], owner, leaseMs, leaseToken === undefined ? undefined : [leaseToken])
    )[0]!;
  }

  /** beginRun for many fires in one statement (plus one read for the skipped); results in input order. */
  async beginRuns(
    fires: readonly FireEvent[],
    owner: string,
    leaseMs: number,
    leaseTokens?: readonly (string | undefined)[],
  ): Promise<RunStart[]> {
    const out = new Array<RunStart | undefined>(fires.length);
    // One statement may not touch a row twice: a fire delivered twice in one batch goes in the next round.
    let pending = fires.map((fire, i) => ({ fire, i, token: leaseTokens?.[i] }));
    while (pending.length > 0) {
      const seen = new Set<string>();
      const round: typeof pending = [];
      const later: typeof pending = [];
      for (const p of pending) {
        const k = `${p.fire.jobId}\u0000${p.fire.fenceToken}`;
        if (seen.has(k)) later.push(p);
        else {
          seen.add(k);
          round.push(p);
        }
      }
      const starts = await retryOnDeadlock(() =>
        this.beginRound(
          round.map((p) => p.fire),
          owner,
          leaseMs,
          round.map((p) => p.token ?? null),
        ),
      );
      round.forEach((p, j) => (out[p.i] = starts[j]));
      pending = later;
    }
    return out as RunStart[];
  }

  private async beginRound(
    fires: readonly FireEvent[],
    owner: string,
    leaseMs: number,
    tokens: readonly (string | null)[],
  ): Promise<RunStart[]> {
    const { rows } = await this.pool.query<{
      ord: number;
      lease_token: string | null;
      inserted: boolean | null;
      attempt: number | null;
      policies: Record<string, unknown> | null;
    }>(
      `WITH input AS (
         SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::int[],
                              $10::uuid[], $11::bigint[])
                  WITH ORDINALITY AS i(job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, attempt, lease_token, spread_offset_ms, ord)),
       up AS (
         INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, spread_offset_ms, attempt, status,
                               lease_owner, lease_token, lease_expires_at, started_at)
         SELECT i.job_id, i.fence_token, i.tenant_id, i.fire_id, i.nominal_time, i.scheduled_for, i.spread_offset_ms, i.attempt, 'RUNNING',
                $8, COALESCE(i.lease_token, gen_random_uuid()), now() + make_interval(secs => $9::double precision / 1000), now()
           FROM input i
          -- One lock order for every writer, so concurrent batches cannot deadlock each other.
          ORDER BY i.job_id, i.fence_token
         ON CONFLICT (job_id, fence_token) DO UPDATE
            SET lease_owner = EXCLUDED.lease_owner, lease_token = EXCLUDED.lease_token,
                lease_expires_at = EXCLUDED.lease_expires_at, status = 'RUNNING',
                attempt = GREATEST(job_runs.attempt, EXCLUDED.attempt), started_at = now(), finished_at = NULL,
                next_attempt_at = NULL, handed_off_at = NULL, updated_at = now()
          WHERE (job_runs.status = 'RUNNING' AND job_runs.lease_expires_at <= now())
             OR (job_runs.status = 'RETRYING' AND EXCLUDED.attempt > job_runs.attempt)
             -- A lease this executor issued and is not using (see beginRun): taken back at once.
             OR (job_runs.status = 'RUNNING' AND left(job_runs.lease_token::text, ${LEASE_ISSUER_CHARS}) = left(EXCLUDED.lease_token::text, ${LEASE_ISSUER_CHARS}))
             -- A lease whose issuer died (see beginRun): silent for $12 ms while a witness,
             -- beating now, beat without a break.
             OR (job_runs.status = 'RUNNING' AND EXISTS (
                  SELECT 1 FROM executor_liveness h JOIN executor_liveness w ON w.issuer <> h.issuer
                   WHERE h.issuer = left(job_runs.lease_token::text, ${LEASE_ISSUER_CHARS})
                     AND w.beat_at >= now() - make_interval(secs => $13::double precision / 1000)
                     AND GREATEST(h.beat_at, w.live_since) < now() - make_interval(secs => $12::double precision / 1000)))
         RETURNING job_id, fence_token, lease_token::text AS lease_token, (xmax = 0) AS inserted, attempt)
       SELECT i.ord::int AS ord, up.lease_token, up.inserted, up.attempt, j.policies
         FROM input i
         LEFT JOIN up ON up.job_id = i.job_id AND up.fence_token = i.fence_token
         -- LATERAL: one primary-key probe per fire. A plain join lets the planner hash the whole
         -- jobs table for a batch of a few hundred fires (it did, with fresh statistics: 25-50 ms
         -- of a 500-fire statement went to a sequential scan of 40k jobs).
         LEFT JOIN LATERAL (SELECT jj.policies FROM jobs jj WHERE jj.job_id = i.job_id) j ON true`,
      [
        fires.map((f) => f.jobId),
        fires.map((f) => f.fenceToken),
        fires.map((f) => f.tenantId),
        fires.map((f) => f.fireId),
        // ISO text: pg would format each Date of an array in JavaScript, several times slower.
        fires.map((f) => f.nominalTime.toISOString()),
        fires.map((f) => f.scheduledFor.toISOString()),
        fires.map((f) => f.attempt),
        owner,
        leaseMs,
        tokens,
        fires.map((f) => f.spreadOffsetMs ?? 0),
        this.liveness.deadAfterMs,
        this.liveness.witnessFreshMs,
      ],
    );
    const starts = new Array<RunStart | undefined>(fires.length);
    const skipped: number[] = [];
    // Read in this statement for the skipped too: a re-delivery re-publishing a recorded result.
    const resultEventsOf = new Map<number, ResultEventsPolicy>();
    for (const row of rows) {
      const i = row.ord - 1;
      const fire = fires[i]!;
      const policies = row.policies ? policiesFromWire(row.policies) : null;
      if (row.lease_token) {
        starts[i] = {
          action: 'execute',
          leaseToken: row.lease_token,
          takenOver: row.inserted === false,
          attempt: row.attempt ?? fire.attempt,
          retryPolicy: policies?.retry ?? null,
          ...(policies?.resultEvents ? { resultEvents: policies.resultEvents } : {}),
        };
      } else {
        skipped.push(i);
        if (policies?.resultEvents) resultEventsOf.set(i, policies.resultEvents);
      }
    }
    if (skipped.length > 0) {
      const states = await this.findRunStates(skipped.map((i) => fires[i]!));
      for (const i of skipped) {
        const fire = fires[i]!;
        const run = states.get(`${fire.jobId}\u0000${fire.fenceToken}`) ?? null;
        const status: RunStatus = run?.status ?? 'RUNNING';
        // A row we could not take and cannot see was inserted by a concurrent delivery: treat it as held.
        const reason =
          status === 'RUNNING' ? 'LEASE_HELD' : status === 'RETRYING' ? 'RETRY_SCHEDULED' : 'ALREADY_FINAL';
        const resultEvents = resultEventsOf.get(i);
        starts[i] = { action: 'skip', reason, status, run, ...(resultEvents ? { resultEvents } : {}) };
      }
    }
    return starts as RunStart[];
  }

  /** Whether this fire's first attempt may run without a lease (see mayRunUnleasedMany). */
  async mayRunUnleased(key: FireKey): Promise<boolean> {
    return (await this.mayRunUnleasedMany([key]))[0]!;
  }

  /** Records one successful first attempt that ran without a lease (see recordUnleasedRuns). */
  async recordUnleasedRun(run: UnleasedRun): Promise<RecordedRun | null> {
    return (await this.recordUnleasedRuns([run]))[0]!;
  }

  /**
   * For each fire: may its first attempt run without a lease? True when no run of it was ever
   * recorded and its job still exists. A read, one primary-key probe per table and fire.
   */
  async mayRunUnleasedMany(keys: readonly FireKey[]): Promise<boolean[]> {
    if (keys.length === 0) return [];
    // One index probe per table and fire: scalar subqueries with LIMIT. As EXISTS, PostgreSQL may
    // hash the whole of job_runs for a batch (a sequential scan per statement: it did, at 80 µs a
    // fire for 100k runs).
    const { rows } = await this.pool.query<{ ord: number; allowed: boolean }>(
      `SELECT k.ord::int AS ord,
              (SELECT true FROM job_runs r WHERE r.job_id = k.job_id AND r.fence_token = k.fence_token LIMIT 1) IS NULL
              AND (SELECT true FROM jobs j WHERE j.job_id = k.job_id LIMIT 1) IS NOT NULL AS allowed
         FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS k(job_id, fence_token, ord)`,
      [keys.map((k) => k.jobId), keys.map((k) => k.fenceToken)],
    );
    const out = new Array<boolean>(keys.length).fill(false);
    for (const r of rows) out[r.ord - 1] = r.allowed;
    return out;
  }

  /**
   * Records first attempts that ran without a lease and succeeded, in one insert, and returns the
   * times it recorded. Null where a run of the fire was recorded first (a concurrent delivery):
   * that run stands, this one is not recorded. Results in input order.
   */
  async recordUnleasedRuns(items: readonly UnleasedRun[]): Promise<(RecordedRun | null)[]> {
    if (items.length === 0) return [];
    const insert = `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, spread_offset_ms, attempt, status,
                               lease_owner, lease_token, started_at, finished_at, http_status)
         SELECT i.job_id, i.fence_token, i.tenant_id, i.fire_id, i.nominal_time, i.scheduled_for, i.spread_offset_ms, 1, 'SUCCEEDED',
                $8, i.lease_token, now() - make_interval(secs => i.duration_ms / 1000), now(), i.http_status
           FROM ${UNLEASED_INPUT}
          -- The lock order of every ledger writer that inserts.
          ORDER BY i.job_id, i.fence_token
         ON CONFLICT (job_id, fence_token) DO NOTHING
         RETURNING job_id, fence_token, started_at, finished_at, ${RESULT_EVENTS_OF('job_runs')}`;
    // Tried again: a row this very record stored on an earlier try whose answer was lost counts too
    // (the statement's snapshot does not see what ins inserts, so no row is counted twice). The
    // first try, the hot path, runs the plain insert.
    const text = items.some((x) => x.retried === true)
      ? `WITH ins AS (${insert})
         SELECT job_id, fence_token, started_at, finished_at, result_events FROM ins
         UNION ALL
         SELECT r.job_id, r.fence_token, r.started_at, r.finished_at, ${RESULT_EVENTS_OF('r')} FROM ${UNLEASED_INPUT} JOIN job_runs r
             ON r.job_id = i.job_id AND r.fence_token = i.fence_token AND r.lease_token = i.lease_token`
      : insert;
    const { rows } = await retryOnDeadlock(() =>
      this.pool.query<{
        job_id: string;
        fence_token: number;
        started_at: Date;
        finished_at: Date;
        result_events: string | null;
      }>(text, [
        items.map((x) => x.fire.jobId),
        items.map((x) => x.fire.fenceToken),
        items.map((x) => x.fire.tenantId),
        items.map((x) => x.fire.fireId),
        items.map((x) => x.fire.nominalTime.toISOString()),
        items.map((x) => x.fire.scheduledFor.toISOString()),
        items.map((x) => Math.max(0, x.durationMs)),
        items[0]!.owner,
        items.map((x) => x.httpStatus),
        items.map((x) => x.leaseToken ?? null),
        items.map((x) => x.fire.spreadOffsetMs ?? 0),
      ]),
    );
    const inserted = new Map(
      rows.map((r) => [
        `${r.job_id}\u0000${r.fence_token}`,
        {
          startedAt: r.started_at,
          finishedAt: r.finished_at,
          // ALL (absent) for a job deleted meanwhile, or one that never chose.
          ...(r.result_events === 'FAILURES' || r.result_events === 'NONE'
            ? { resultEvents: r.result_events as ResultEventsPolicy }
            : {}),
        },
      ]),
    );
    return items.map((x) => inserted.get(`${x.fire.jobId}\u0000${x.fire.fenceToken}`) ?? null);
  }

  /** Extends a live lease; false when the lease was lost (taken over or finished). */
  async heartbeat(key: FireKey, leaseToken: string, leaseMs: number): Promise<boolean> {
    return (await this.heartbeats([{ key, leaseToken, leaseMs }]))[0]!;
  }

  /** heartbeat for many runs in one statement; results in input order. */
  async heartbeats(
    items: readonly { readonly key: FireKey; readonly leaseToken: string; readonly leaseMs: number }[],
  ): Promise<boolean[]> {
    if (items.length === 0) return [];
    // A batch may meet another writer of the same rows (a completion racing its last heartbeat):
    // retried on deadlock, as completeRuns is.
    const { rows } = await retryOnDeadlock(() =>
      this.pool.query<{ job_id: string; fence_token: number; lease_token: string }>(
        `UPDATE job_runs r
            SET lease_expires_at = now() + make_interval(secs => h.lease_ms / 1000), updated_at = now()
           FROM unnest($1::text[], $2::bigint[], $3::uuid[], $4::double precision[])
                AS h(job_id, fence_token, lease_token, lease_ms)
          WHERE r.job_id = h.job_id AND r.fence_token = h.fence_token AND r.lease_token = h.lease_token
            AND r.status = 'RUNNING'
          RETURNING r.job_id, r.fence_token, r.lease_token::text AS lease_token`,
        [
          items.map((x) => x.key.jobId),
          items.map((x) => x.key.fenceToken),
          items.map((x) => x.leaseToken),
          items.map((x) => x.leaseMs),
        ],
      ),
    );
    const held = new Set(rows.map((r) => `${r.job_id}\u0000${r.fence_token}\u0000${r.lease_token}`));
    return items.map((x) => held.has(`${x.key.jobId}\u0000${x.key.fenceToken}\u0000${x.leaseToken}`));
  }

  /**
   * Records an attempt's outcome, only if the caller still holds the lease, and returns the run's
   * recorded start and finish; null when fenced out.
   */
  async completeRun(key: FireKey, leaseToken: string, outcome: RunCompletion): Promise<RecordedRun | null> {
    return (await this.completeRuns([{ key, leaseToken, outcome }]))[0]!;
  }

  /** completeRun for many runs in one statement; results in input order. */
  async completeRuns(
    items: readonly { readonly key: FireKey; readonly leaseToken: string; readonly outcome: RunCompletion }[],
  ): Promise<(RecordedRun | null)[]> {
    if (items.length === 0) return [];
    const update = `UPDATE job_runs r
            SET status = c.status, http_status = c.http_status, error = c.error, finished_at = now(), updated_at = now(),
                lease_expires_at = NULL, next_attempt_at = c.next_attempt_at, handed_off_at = NULL,
                dead_letter_reason = c.dead_letter_reason
           FROM ${COMPLETION_INPUT}
          WHERE r.job_id = c.job_id AND r.fence_token = c.fence_token AND r.lease_token = c.lease_token AND r.status = 'RUNNING'
          RETURNING r.job_id, r.fence_token, r.lease_token::text AS lease_token, r.started_at, r.finished_at`;
    // Tried again: a run already recorded in this status under this lease was recorded by an
    // earlier try whose answer was lost (only the lease's holder writes under its token), and
    // counts as done. The snapshot does not see what done updates, so no row is counted twice. The
    // first try, the hot path, runs the plain update.
    const text = items.some((x) => x.outcome.retried === true)
      ? `WITH done AS (${update})
         SELECT * FROM done
         UNION ALL
         SELECT r.job_id, r.fence_token, r.lease_token::text, r.started_at, r.finished_at FROM ${COMPLETION_INPUT} JOIN job_runs r
             ON r.job_id = c.job_id AND r.fence_token = c.fence_token AND r.lease_token = c.lease_token
            AND r.status = c.status`
      : update;
    const { rows } = await retryOnDeadlock(() =>
      this.pool.query<{
        job_id: string;
        fence_token: number;
        lease_token: string;
        started_at: Date;
        finished_at: Date;
      }>(text, [
        items.map((x) => x.key.jobId),
        items.map((x) => x.key.fenceToken),
        items.map((x) => x.leaseToken),
        items.map((x) => x.outcome.status),
        items.map((x) => x.outcome.httpStatus),
        items.map((x) => x.outcome.error),
        items.map((x) => x.outcome.nextAttemptAt?.toISOString() ?? null),
        items.map((x) => x.outcome.deadLetterReason ?? null),
      ]),
    );
    const done = new Map(
      rows.map((r) => [
        `${r.job_id}\u0000${r.fence_token}\u0000${r.lease_token}`,
        { startedAt: r.started_at, finishedAt: r.finished_at },
      ]),
    );
    return items.map((x) => done.get(`${x.key.jobId}\u0000${x.key.fenceToken}\u0000${x.leaseToken}`) ?? null);
  }

  /** Notes that the retry message or dead letter of this run (in this status and attempt) is on Kafka. */
  async markHandedOff(key: FireKey, status: 'RETRYING' | 'DEAD_LETTERED', attempt: number): Promise<void> {
    await this.pool.query(
      `UPDATE job_runs SET handed_off_at = now(), updated_at = now()
        WHERE job_id = $1 AND fence_token = $2 AND status = $3 AND attempt = $4 AND handed_off_at IS NULL`,
      [key.jobId, key.fenceToken, status, attempt],
    );
  }

  /** Gives a lease up early (the executor is stopping), so another executor may take the run now. */
  async releaseRun(key: FireKey, leaseToken: string): Promise<void> {
    await this.pool.query(
      `UPDATE job_runs SET lease_expires_at = now(), updated_at = now()
        WHERE job_id = $1 AND fence_token = $2 AND lease_token = $3 AND status = 'RUNNING'`,
      [key.jobId, key.fenceToken, leaseToken],
    );
  }

  /**
   * Deletes up to `batchSize` finished runs created more than `retentionMs` ago, oldest first.
   * SKIP LOCKED: rows an executor is writing right now are left for the next pass, so the purge
   * never waits on (or blocks) the hot path. Returns how many rows it deleted.
   */
  async purgeFinishedRuns(retentionMs: number, batchSize: number): Promise<number> {
    const r = await this.pool.query(
      `WITH doomed AS (
         SELECT job_id, fence_token FROM job_runs
          WHERE status IN ('SUCCEEDED', 'DEAD_LETTERED', 'SKIPPED')
            AND created_at < now() - make_interval(secs => $1::double precision / 1000)
          ORDER BY created_at
          LIMIT $2
          FOR UPDATE SKIP LOCKED)
       DELETE FROM job_runs r USING doomed d WHERE r.job_id = d.job_id AND r.fence_token = d.fence_token`,
      [retentionMs, batchSize],
    );
    return r.rowCount ?? 0;
  }

  /** One run by its fire key, or null. */
  async findRun(key: FireKey): Promise<Run | null> {
    const { rows } = await this.pool.query<RunRow>(
      `SELECT ${RUN_COLUMNS} FROM job_runs WHERE job_id = $1 AND fence_token = $2`,
      [key.jobId, key.fenceToken],
    );
    return rows[0] ? runFromRow(rows[0]) : null;
  }

  /** One run with its retry hand-off state and remaining lease, or null. */
  async findRunState(key: FireKey): Promise<RunState | null> {
    const { rows } = await this.pool.query<RunStateRow>(
      `SELECT ${STATE_COLUMNS} FROM job_runs WHERE job_id = $1 AND fence_token = $2`,
      [key.jobId, key.fenceToken],
    );
    return rows[0] ? stateFromRow(rows[0]) : null;
  }

  /** Several runs with their hand-off state, keyed by `job_id\u0000fence_token`. */
  private async findRunStates(keys: readonly FireKey[]): Promise<Map<string, RunState>> {
    const { rows } = await this.pool.query<RunStateRow>(
      `SELECT ${STATE_COLUMNS} FROM job_runs
        WHERE (job_id, fence_token) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))`,
      [keys.map((k) => k.jobId), keys.map((k) => k.fenceToken)],
    );
    return new Map(rows.map((r) => [`${r.job_id}\u0000${r.fence_token}`, stateFromRow(r)]));
  }

  /** A job's runs, newest first. */
  async listRuns(jobId: string, limit: number): Promise<Run[]> {
    const { rows } = await this.pool.query<RunRow>(
      `SELECT ${RUN_COLUMNS} FROM job_runs WHERE job_id = $1 ORDER BY fence_token DESC LIMIT $2`,
      [jobId, limit],
    );
    return rows.map(runFromRow);
  }
}
