/**
 * Label-wide control in the store: the jobs matching a label selector, counted, and changed one
 * bounded window at a time. Each window is one short transaction over at most `scan` jobs in key
 * order (tenant, job_id): its matching rows are locked in job_id order (so two bulk actions
 * cannot deadlock, and a scheduler claim, which skips locked rows, never waits long), changed,
 * and audited one row per job, all or nothing. No statement holds locks on more than one window.
 */
import type { Pool, PoolClient } from 'pg';
import {
  storableText,
  type AuditEntry,
  type BulkCandidate,
  type BulkScope,
  type BulkWindowChange,
  type BulkJobOutcome,
  type JsonValue,
  type ResumedPause,
} from '@tickwork/domain';
import { inTransaction } from '../database';
import { resumeCatchUpToRow } from './rows';

/**
 * The SQL condition of a selector on table alias `j` with its two jsonb parameters. A selector names
 * at least one label, so no unlabelled job matches: saying so lets the planner use the labels
 * index, which holds only labelled jobs.
 */
function selectorSql(eq: string, neq: string): string {
  return `j.labels <> '{}'::jsonb AND j.labels @> ${eq}::jsonb AND NOT EXISTS (SELECT 1 FROM jsonb_each_text(${neq}::jsonb) n WHERE j.labels->>n.key = n.value)`;
}

/** Bulk actions' windows in PostgreSQL: implements libs/jobs' BulkStore port (and the pause sweep). */
export class BulkRepository {
  constructor(private readonly pool: Pool) {}

  /** How many jobs match, and the first `sample` of their ids (by job id). One read, no locks. */
  async count(scope: BulkScope, sample: number): Promise<{ matched: number; sample: string[] }> {
    const params = [
      scope.tenantId,
      JSON.stringify(scope.selector.equal),
      JSON.stringify(scope.selector.notEqual),
    ];
    const where = `($1::text IS NULL OR j.tenant_id = $1) AND ${selectorSql('$2', '$3')}`;
    const [n, ids] = await Promise.all([
      this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM jobs j WHERE ${where}`, params),
      this.pool.query<{ job_id: string }>(
        `SELECT j.job_id FROM jobs j WHERE ${where} ORDER BY j.job_id LIMIT $4`,
        [...params, sample],
      ),
    ]);
    return { matched: Number(n.rows[0]?.n ?? 0), sample: ids.rows.map((r) => r.job_id) };
  }

  /**
   * Processes the window of at most `scan` jobs (in key order) after `after`: locks its matching
   * jobs, lets `decide` choose the change, applies it and writes one audit row per matched job, in
   * one transaction. Returns the last job id of the window (null when it reached the end) and
   * what `decide` returned.
   */
  async window<T extends BulkWindowChange>(
    scope: BulkScope,
    after: string | null,
    scan: number,
    audit: AuditEntry,
    auditDetails: Record<string, JsonValue>,
    decide: (candidates: readonly BulkCandidate[]) => T,
  ): Promise<{ end: string | null; change: T }> {
    // The window's end, read without locks: the jobs between `after` and it are this window.
    const { rows: ends } = await this.pool.query<{ job_id: string }>(
      `SELECT j.job_id FROM jobs j
        WHERE ($1::text IS NULL OR j.tenant_id = $1) AND ($2::text IS NULL OR j.job_id > $2)
        ORDER BY ${scope.tenantId === null ? 'j.job_id' : 'j.tenant_id, j.job_id'} OFFSET $3 LIMIT 1`,
      [scope.tenantId, after, scan - 1],
    );
    const end = ends[0]?.job_id ?? null;
    const change = await inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<{
        job_id: string;
        tenant_id: string;
        status: BulkCandidate['status'];
        has_next: boolean;
        paused_until: Date | null;
      }>(
        `SELECT j.job_id, j.tenant_id, j.status, (j.next_run_at IS NOT NULL AND j.next_nominal_at IS NOT NULL) AS has_next,
                j.paused_until
           FROM jobs j
          WHERE ($1::text IS NULL OR j.tenant_id = $1) AND ($2::text IS NULL OR j.job_id > $2)
            AND ($3::text IS NULL OR j.job_id <= $3) AND ${selectorSql('$4', '$5')}
          ORDER BY j.job_id
          FOR UPDATE OF j`,
        [
          scope.tenantId,
          after,
          end,
          JSON.stringify(scope.selector.equal),
          JSON.stringify(scope.selector.notEqual),
        ],
      );
      const decided = decide(
        rows.map((r) => ({
          jobId: r.job_id,
          tenantId: r.tenant_id,
          status: r.status,
          hasNext: r.has_next,
          pausedUntil: r.paused_until,
        })),
      );
      await applyChange(client, decided);
      await insertAudits(client, audit, auditDetails, decided.outcomes);
      return decided;
    });
    return { end, change };
  }

  /**
   * The sweep: resumes up to `limit` jobs of `shards` whose pause-until has come, each with the
   * catch-up choice its pause named, and audits each (actor `scheduler:<instance>`, on behalf of
   * the pausing caller). Locked rows are skipped (another sweep or a change has them: next time).
   */
  async resumeExpiredPauses(
    shards: readonly number[],
    limit: number,
    instance: string,
  ): Promise<ResumedPause[]> {
    if (shards.length === 0) return [];
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<{
        job_id: string;
        tenant_id: string;
        status: string;
        resumed: boolean;
        paused_until: Date;
        pause_resume: Record<string, JsonValue> | null;
      }>(
        `WITH due AS (
           SELECT j.job_id, j.paused_until, j.pause_resume,
                  (j.next_run_at IS NOT NULL AND j.next_nominal_at IS NOT NULL) AS resumable
             FROM jobs j
            WHERE j.shard = ANY($1::int[]) AND j.paused_until IS NOT NULL AND j.paused_until <= now()
              AND j.status = 'PAUSED'
            ORDER BY j.paused_until
            LIMIT $2
            FOR UPDATE OF j SKIP LOCKED
         )
         UPDATE jobs j
            SET status = CASE WHEN due.resumable THEN 'SCHEDULED' ELSE j.status END,
                resume_catch_up = CASE WHEN due.resumable THEN due.pause_resume->'catch_up' ELSE NULL END,
                paused_until = NULL, pause_resume = NULL,
                version = j.version + 1, updated_at = now()
           FROM due
          WHERE j.job_id = due.job_id
         RETURNING j.job_id, j.tenant_id, j.status, due.resumable AS resumed, due.paused_until, due.pause_resume`,
        [shards, limit],
      );
      if (rows.length === 0) return [];
      const by = (r: (typeof rows)[number], k: string): string | null => {
        const v = r.pause_resume?.[k];
        return typeof v === 'string' ? v : null;
      };
      await client.query(
        `INSERT INTO audit_events (actor, role, via, action, tenant_id, job_id, outcome, details)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::jsonb[])`,
        [
          rows.map(() => `scheduler:${instance}`),
          rows.map((r) => (by(r, 'role') === 'tenant' ? 'tenant' : 'admin')),
          rows.map((r) => (['grpc', 'rest', 'kafka'].includes(by(r, 'via') ?? '') ? by(r, 'via') : 'rest')),
          rows.map(() => 'ResumeJob'),
          rows.map((r) => r.tenant_id),
          rows.map((r) => r.job_id),
          rows.map((r) => (r.resumed ? 'OK' : 'FAILED_PRECONDITION')),
          rows.map((r) =>
            JSON.stringify({
              paused_until: r.paused_until.toISOString(),
              paused_by: by(r, 'actor'),
              ...(r.pause_resume?.bulk_action_id ? { bulk_action_id: r.pause_resume.bulk_action_id } : {}),
              ...(r.pause_resume?.catch_up ? { catch_up: r.pause_resume.catch_up } : {}),
              ...(r.resumed ? {} : { message: 'the job has no stored next occurrence: resume it by hand' }),
            }),
          ),
        ],
      );
      return rows.map((r) => ({ jobId: r.job_id, tenantId: r.tenant_id, resumed: r.resumed }));
    });
  }
}

async function applyChange(client: PoolClient, c: BulkWindowChange): Promise<void> {
  if (c.pause && c.pause.jobIds.length > 0)
    await client.query(
      `UPDATE jobs SET status = 'PAUSED', paused_until = $2, pause_resume = $3::jsonb, resume_catch_up = NULL,
              version = version + 1, updated_at = now()
        WHERE job_id = ANY($1::text[])`,
      [c.pause.jobIds, c.pause.until, c.pause.resume === null ? null : JSON.stringify(c.pause.resume)],
    );
  if (c.resume && c.resume.jobIds.length > 0)
    await client.query(
      `UPDATE jobs SET status = 'SCHEDULED', paused_until = NULL, pause_resume = NULL, resume_catch_up = $2::jsonb,
              version = version + 1, updated_at = now()
        WHERE job_id = ANY($1::text[])`,
      [c.resume.jobIds, c.resume.catchUp ? JSON.stringify(resumeCatchUpToRow(c.resume.catchUp)) : null],
    );
  if (c.trigger && c.trigger.jobIds.length > 0)
    // As TriggerJob, for many jobs in one statement: a new fence token each, one MANUAL outbox
    // batch per shard (the relay publishes those at once), the event built by the server in the
    // stored snapshot format (see fire-snapshot.ts).
    await client.query(
      `WITH u AS (
         UPDATE jobs j SET fence_token = j.fence_token + 1, last_fired_at = now(), updated_at = now()
          WHERE j.job_id = ANY($1::text[])
         RETURNING j.job_id, j.tenant_id, j.shard, j.fence_token, j.target, j.payload
       ), b AS (
         INSERT INTO fire_batches (shard, trigger, claimed_by, fires)
         SELECT u.shard, 'MANUAL', $2, count(*) FROM u GROUP BY u.shard
         RETURNING batch_id, shard
       )
       INSERT INTO fires (job_id, fence_token, tenant_id, shard, nominal_time, scheduled_for, trigger, claimed_by, event, batch_id)
       SELECT u.job_id, u.fence_token, u.tenant_id, u.shard, now(), now(), 'MANUAL', $2,
              jsonb_build_object(
                'job_id', u.job_id, 'tenant_id', u.tenant_id, 'fence_token', u.fence_token,
                'fire_id', u.job_id || ':' || u.fence_token,
                'scheduled_for', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'nominal_time', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'attempt', 1, 'target', u.target, 'payload', u.payload),
              b.batch_id
         FROM u JOIN b ON b.shard = u.shard`,
      [c.trigger.jobIds, c.trigger.claimedBy],
    );
  if (c.delete && c.delete.jobIds.length > 0) {
    // As DeleteJob: the last fence token kept in a tombstone; fires already on Kafka and the
    // skipped-occurrence ledger dropped; fires still in the outbox stay (they were claimed).
    await client.query(
      `WITH gone AS (DELETE FROM jobs WHERE job_id = ANY($1::text[]) RETURNING job_id, tenant_id, fence_token)
       INSERT INTO job_tombstones (job_id, tenant_id, fence_token) SELECT job_id, tenant_id, fence_token FROM gone
       ON CONFLICT (job_id) DO UPDATE SET tenant_id = EXCLUDED.tenant_id, fence_token = EXCLUDED.fence_token, deleted_at = now()`,
      [c.delete.jobIds],
    );
    await client.query(
      `DELETE FROM fires f USING fire_batches b
        WHERE f.job_id = ANY($1::text[]) AND b.batch_id = f.batch_id AND b.enqueued_at IS NOT NULL`,
      [c.delete.jobIds],
    );
    await client.query('DELETE FROM occurrence_skips WHERE job_id = ANY($1::text[])', [c.delete.jobIds]);
  }
}

async function insertAudits(
  client: PoolClient,
  a: AuditEntry,
  details: Record<string, JsonValue>,
  outcomes: readonly BulkJobOutcome[],
): Promise<void> {
  if (outcomes.length === 0) return;
  const text = (s: string) => storableText(s);
  await client.query(
    `INSERT INTO audit_events (actor, role, via, action, tenant_id, job_id, outcome, details)
     SELECT $1, $2, $3, $4, t, j, o, d FROM unnest($5::text[], $6::text[], $7::text[], $8::jsonb[]) AS x(t, j, o, d)`,
    [
      text(a.actor),
      a.role,
      a.via,
      a.action,
      outcomes.map((o) => o.tenantId),
      outcomes.map((o) => o.jobId),
      outcomes.map((o) => o.outcome),
      outcomes.map((o) =>
        JSON.stringify({ ...details, ...o.details }, (_k, v: unknown) =>
          typeof v === 'string' ? storableText(v) : v,
        ),
      ),
    ],
  );
}
