/**
 * What happened to jobs, read for the admin API: runs (the executor's ledger), the occurrence
 * ledger (fires merged with skipped and coalesced occurrences) and dead letters. Keyset-paged,
 * newest first.
 */
import type { Pool } from 'pg';
import type {
  ClaimedAheadFire,
  DeadLetterEntry,
  FireTrigger,
  LedgerRun,
  OccurrenceLedgerCursor,
  OccurrenceEntry,
  RunStatus,
} from '@tickwork/domain';
import { LEDGER_RUN_COLUMNS, LEDGER_RUN_FROM, ledgerRunFromRow, type RunRow } from './rows';

type LedgerRunRow = RunRow & { traceparent: string | null };

interface OccurrenceRow {
  kind: 'FIRE' | 'SKIP';
  at: Date;
  seq: number;
  first_nominal: Date;
  occurrences: number;
  reason: string | null;
  trigger: FireTrigger | null;
  scheduled_for: Date | null;
  spread_offset_ms: string | null;
  claimed_at: Date | null;
  enqueued_at: Date | null;
  run_status: RunStatus | null;
  recorded_at: Date;
  job_version: number | null;
  lateness_ms: string | null;
  calendar: string | null;
  calendar_shift_ms: string | null;
}

/** How many of a job's newest fires listClaimedAhead looks at. */
const CLAIMED_AHEAD_SCAN = 1_000;

/** Runs, occurrences and dead letters in PostgreSQL: implements libs/jobs' HistoryStore port. */
export class HistoryRepository {
  constructor(private readonly pool: Pool) {}

  /** A job's runs, newest (highest fence token) first, below `beforeFenceToken` when given; with their trace ids. */
  async listRuns(jobId: string, limit: number, beforeFenceToken?: number): Promise<LedgerRun[]> {
    const { rows } = await this.pool.query<LedgerRunRow>(
      `SELECT ${LEDGER_RUN_COLUMNS} FROM ${LEDGER_RUN_FROM}
        WHERE r.job_id = $1 AND ($2::bigint IS NULL OR r.fence_token < $2)
        ORDER BY r.fence_token DESC LIMIT $3`,
      [jobId, beforeFenceToken ?? null, limit],
    );
    return rows.map(ledgerRunFromRow);
  }

  /** The most recent run of each of these jobs (by fence token; one index probe per job). */
  async lastRuns(jobIds: readonly string[]): Promise<Map<string, LedgerRun>> {
    if (jobIds.length === 0) return new Map();
    const { rows } = await this.pool.query<LedgerRunRow>(
      `SELECT x.* FROM unnest($1::text[]) AS j(id)
         CROSS JOIN LATERAL (SELECT ${LEDGER_RUN_COLUMNS} FROM ${LEDGER_RUN_FROM}
                              WHERE r.job_id = j.id ORDER BY r.fence_token DESC LIMIT 1) x`,
      [[...jobIds]],
    );
    return new Map(rows.map((r) => [r.job_id, ledgerRunFromRow(r)]));
  }

  /** One run, or null. */
  async findRun(jobId: string, fenceToken: number): Promise<LedgerRun | null> {
    const { rows } = await this.pool.query<LedgerRunRow>(
      `SELECT ${LEDGER_RUN_COLUMNS} FROM ${LEDGER_RUN_FROM} WHERE r.job_id = $1 AND r.fence_token = $2`,
      [jobId, fenceToken],
    );
    return rows[0] ? ledgerRunFromRow(rows[0]) : null;
  }

  /**
   * A job's scheduled fires claimed but not yet due or not yet on Kafka (lookahead, outbox) and not
   * started: each goes out with the definition it was claimed under. Oldest first, at most `limit`.
   */
  async listClaimedAhead(jobId: string, limit: number): Promise<ClaimedAheadFire[]> {
    const { rows } = await this.pool.query<{
      fence_token: number;
      nominal_time: Date;
      scheduled_for: Date;
      dst_shift_ms: number;
      job_version: number | null;
      enqueued: boolean;
    }>(
      `SELECT f.fence_token, f.nominal_time, f.scheduled_for, f.dst_shift_ms, f.job_version,
              b.enqueued_at IS NOT NULL AS enqueued
         -- Only the job's newest scheduled fires are looked at (the occurrence index, newest first):
         -- what is claimed ahead or still in the outbox is among them, and a job with a long fire
         -- log is not read whole.
         FROM (SELECT * FROM fires WHERE job_id = $1 AND trigger = 'SCHEDULE'
                ORDER BY nominal_time DESC LIMIT ${CLAIMED_AHEAD_SCAN}) f
         JOIN fire_batches b ON b.batch_id = f.batch_id
        WHERE (b.enqueued_at IS NULL OR f.scheduled_for > now())
          AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = f.job_id AND r.fence_token = f.fence_token)
        ORDER BY f.nominal_time, f.fence_token
        LIMIT $2`,
      [jobId, limit],
    );
    return rows.map((r) => ({
      fenceToken: r.fence_token,
      nominalTime: r.nominal_time,
      scheduledFor: r.scheduled_for,
      dstShiftMs: r.dst_shift_ms,
      jobVersion: r.job_version,
      enqueued: r.enqueued,
    }));
  }

  /** Fires and skipped ranges of a job, newest first, after `cursor` when given. */
  async listOccurrences(
    jobId: string,
    limit: number,
    cursor?: OccurrenceLedgerCursor,
  ): Promise<OccurrenceEntry[]> {
    const { rows } = await this.pool.query<OccurrenceRow>(
      `SELECT * FROM (
         SELECT 'FIRE'::text AS kind, f.nominal_time AS at, f.fence_token AS seq, f.nominal_time AS first_nominal, 1::bigint AS occurrences,
                v.reason, f.trigger, f.scheduled_for, f.spread_offset_ms, f.claimed_at, b.enqueued_at, r.status AS run_status, f.claimed_at AS recorded_at,
                f.job_version, v.lateness_ms, f.calendar, f.calendar_shift_ms
           FROM fires f
           JOIN fire_batches b ON b.batch_id = f.batch_id
           LEFT JOIN job_runs r ON r.job_id = f.job_id AND r.fence_token = f.fence_token
           LEFT JOIN occurrence_slo v ON v.job_id = f.job_id AND v.fence_token = f.fence_token
          WHERE f.job_id = $1
         UNION ALL
         SELECT 'SKIP', s.last_nominal, s.id, s.first_nominal, s.occurrences,
                s.reason, NULL, NULL, NULL, NULL, NULL, NULL, s.recorded_at, s.job_version, NULL, s.calendar, NULL
           FROM occurrence_skips s
          WHERE s.job_id = $1
       ) o
       WHERE $2::timestamptz IS NULL OR (o.at, o.kind, o.seq) < ($2::timestamptz, $3::text, $4::bigint)
       ORDER BY o.at DESC, o.kind DESC, o.seq DESC
       LIMIT $5`,
      [jobId, cursor?.at ?? null, cursor?.kind ?? null, cursor?.seq ?? null, limit],
    );
    return rows.map((r): OccurrenceEntry => {
      const c: OccurrenceLedgerCursor = { at: r.at.toISOString(), kind: r.kind, seq: Number(r.seq) };
      if (r.kind === 'FIRE') {
        return {
          kind: 'FIRE',
          nominalTime: r.at,
          fenceToken: Number(r.seq),
          trigger: r.trigger ?? 'SCHEDULE',
          scheduledFor: r.scheduled_for!,
          spreadOffsetMs: Number(r.spread_offset_ms ?? 0),
          claimedAt: r.claimed_at!,
          enqueuedAt: r.enqueued_at,
          runStatus: r.run_status,
          jobVersion: r.job_version,
          slo:
            r.reason === 'LATE' || r.reason === 'MISSED'
              ? { reason: r.reason, latenessMs: r.lateness_ms === null ? null : Number(r.lateness_ms) }
              : null,
          calendarShift: r.calendar
            ? { calendar: r.calendar, shiftMs: Number(r.calendar_shift_ms ?? 0) }
            : null,
          cursor: c,
        };
      }
      return {
        kind: 'SKIP',
        reason: r.reason ?? '',
        firstNominal: r.first_nominal,
        lastNominal: r.at,
        occurrences: Number(r.occurrences),
        recordedAt: r.recorded_at,
        jobVersion: r.job_version,
        calendar: r.calendar,
        cursor: c,
      };
    });
  }

  /**
   * Dead-lettered runs, newest first, optionally of one tenant and one job. Read from the run
   * ledger (status DEAD_LETTERED); the page continues below `before` (a previous entry's cursor).
   * The cursor compares the row itself (timestamptz keeps microseconds, the cursor's unit), so an
   * all-tenant page is a range of job_runs_dead_lettered_recent_idx (migration 0024).
   */
  async listDeadLetters(q: {
    tenantId?: string;
    jobId?: string;
    limit: number;
    before?: DeadLetterEntry['cursor'];
  }): Promise<DeadLetterEntry[]> {
    const { rows } = await this.pool.query<
      LedgerRunRow & {
        updated_at: Date;
        at_micros: string;
        replay_fence_token: number | null;
        replayed_at: Date | null;
      }
    >(
      `SELECT ${LEDGER_RUN_COLUMNS}, r.updated_at, floor(extract(epoch FROM r.updated_at) * 1000000)::bigint::text AS at_micros, d.replay_fence_token, d.replayed_at
         FROM ${LEDGER_RUN_FROM}
         LEFT JOIN dead_letter_replays d ON d.job_id = r.job_id AND d.fence_token = r.fence_token
        WHERE r.status = 'DEAD_LETTERED'
          AND ($1::text IS NULL OR r.tenant_id = $1)
          AND ($2::text IS NULL OR r.job_id = $2)
          AND ($3::bigint IS NULL OR (r.updated_at, r.job_id, r.fence_token) < (timestamptz 'epoch' + $3::bigint * interval '1 microsecond', $4::text, $5::bigint))
        ORDER BY r.updated_at DESC, r.job_id DESC, r.fence_token DESC
        LIMIT $6`,
      [
        q.tenantId ?? null,
        q.jobId ?? null,
        q.before?.atMicros ?? null,
        q.before?.jobId ?? null,
        q.before?.fenceToken ?? null,
        q.limit,
      ],
    );
    return rows.map((r) => ({
      run: ledgerRunFromRow(r),
      deadLetteredAt: r.finished_at ?? r.updated_at,
      replayFenceToken: r.replay_fence_token,
      replayedAt: r.replayed_at,
      cursor: { atMicros: r.at_micros, jobId: r.job_id, fenceToken: r.fence_token },
    }));
  }
}
