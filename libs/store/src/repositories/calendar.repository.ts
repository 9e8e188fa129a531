/**
 * Business calendars of tenants (and shared ones, tenant_id NULL): named, versioned, every version's
 * definition kept. Jobs refer to calendars by name; a tenant's own calendar of a name comes before a
 * shared one. After a write, the jobs that use the calendar are re-planned in bounded batches.
 */
import type { Pool, PoolClient } from 'pg';
import {
  calendarDefinitionToStore,
  type AuditEntry,
  type BusinessCalendar,
  type CalendarWrite,
  type PlannedOccurrence,
  type ReplanJob,
  type StoredCalendar,
} from '@tickwork/domain';
import { inTransaction } from '../database';
import { insertAudit } from './job.repository';
import { calendarFromRow, JOB_CALENDARS_SQL, storedCalendarFromRow, type CalendarRow } from './calendar-rows';
import { claimableJobFromRow } from './rows';

const COLUMNS = 'tenant_id, name, version, definition, created_at, updated_at';

/** Business calendars in PostgreSQL: implements libs/jobs' CalendarStore port. */
export class CalendarRepository {
  constructor(private readonly pool: Pool) {}

  /** The calendar `name` of `tenantId` (null: the shared one), or null. */
  async find(tenantId: string | null, name: string): Promise<StoredCalendar | null> {
    const { rows } = await this.pool.query<CalendarRow>(
      `SELECT ${COLUMNS} FROM business_calendars WHERE coalesce(tenant_id, '') = coalesce($1, '') AND name = $2`,
      [tenantId, name],
    );
    return rows[0] ? storedCalendarFromRow(rows[0]) : null;
  }

  /**
   * Calendars, by name: a tenant's own and the shared ones (`tenantId` set), or every tenant's (admin,
   * `tenantId` undefined); `shared` null-tenant rows only when true.
   */
  async list(q: { tenantId?: string; afterName?: string; limit: number }): Promise<StoredCalendar[]> {
    const { rows } = await this.pool.query<CalendarRow>(
      `SELECT ${COLUMNS} FROM business_calendars
        WHERE ($1::text IS NULL OR tenant_id = $1 OR tenant_id IS NULL)
          AND ($2::text IS NULL OR (name, coalesce(tenant_id, '')) > ($2, ''))
        ORDER BY name, coalesce(tenant_id, '') LIMIT $3`,
      [q.tenantId ?? null, q.afterName ?? null, q.limit],
    );
    return rows.map(storedCalendarFromRow);
  }

  /** The calendars `names` resolve to for `tenantId` (own before shared), by name; missing ones absent. */
  async resolve(tenantId: string, names: readonly string[]): Promise<Map<string, BusinessCalendar>> {
    if (names.length === 0) return new Map();
    const { rows } = await this.pool.query<CalendarRow>(
      `SELECT DISTINCT ON (name) ${COLUMNS} FROM business_calendars
        WHERE name = ANY($2::text[]) AND (tenant_id = $1 OR tenant_id IS NULL)
        ORDER BY name, tenant_id NULLS LAST`,
      [tenantId, names],
    );
    return new Map(rows.map((r) => [r.name, calendarFromRow(r)]));
  }

  /**
   * Creates or updates a calendar in one transaction with its version row and audit event: `work`
   * gets the current calendar (null: none) and returns the new state, or throws to refuse.
   */
  async write(
    audit: AuditEntry,
    tenantId: string | null,
    name: string,
    work: (current: StoredCalendar | null) => Promise<CalendarWrite> | CalendarWrite,
  ): Promise<StoredCalendar> {
    return inTransaction(this.pool, async (client) => {
      const current = await lockedCalendar(client, tenantId, name);
      const next = await work(current);
      const definition = JSON.stringify(calendarDefinitionToStore(next.definition, next.generated));
      const { rows } = current
        ? await client.query<CalendarRow>(
            `UPDATE business_calendars SET definition = $3, version = version + 1, updated_at = now()
              WHERE coalesce(tenant_id, '') = coalesce($1, '') AND name = $2 RETURNING ${COLUMNS}`,
            [tenantId, name, definition],
          )
        : await client.query<CalendarRow>(
            `INSERT INTO business_calendars (tenant_id, name, definition) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`,
            [tenantId, name, definition],
          );
      const written = storedCalendarFromRow(rows[0]!);
      await client.query(
        `INSERT INTO business_calendar_versions (tenant_id, name, version, definition) VALUES ($1, $2, $3, $4)`,
        [tenantId, name, written.version, definition],
      );
      await insertAudit(client, audit, {
        tenantId,
        jobId: null,
        outcome: 'OK',
        details: { calendar: name, version: written.version, shared: tenantId === null },
      });
      return written;
    });
  }

  /**
   * Deletes a calendar no job refers to (`check` gets the count and a few of the jobs that still do,
   * and throws to refuse), with its audit event. False when there was none.
   */
  async delete(
    audit: AuditEntry,
    tenantId: string | null,
    name: string,
    check: (current: StoredCalendar, users: { count: number; sample: string[] }) => void,
  ): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      const current = await lockedCalendar(client, tenantId, name);
      if (!current) return false;
      const { rows } = await client.query<{ n: number; sample: string[] }>(
        `SELECT count(*)::int AS n, (array_agg(job_id ORDER BY job_id))[1:3] AS sample FROM jobs j
          WHERE ${USERS_SQL}`,
        [tenantId, name],
      );
      check(current, { count: rows[0]?.n ?? 0, sample: rows[0]?.sample ?? [] });
      await client.query(
        `DELETE FROM business_calendars WHERE coalesce(tenant_id, '') = coalesce($1, '') AND name = $2`,
        [tenantId, name],
      );
      await client.query(
        `INSERT INTO business_calendar_versions (tenant_id, name, version, definition) VALUES ($1, $2, $3, NULL)`,
        [tenantId, name, current.version + 1],
      );
      await insertAudit(client, audit, {
        tenantId,
        jobId: null,
        outcome: 'OK',
        details: { calendar: name, version: current.version, deleted: true, shared: tenantId === null },
      });
      return true;
    });
  }

  /**
   * A batch of the live jobs that use calendar `name` of `tenantId` (null: the shared one, for the
   * tenants without their own of that name), after job id `after`, with their calendars resolved.
   */
  async jobsUsing(tenantId: string | null, name: string, after: string, limit: number): Promise<ReplanJob[]> {
    const { rows } = await this.pool.query<Record<string, unknown>>(
      `SELECT j.job_id, j.tenant_id, j.shard, j.schedule, j.status, j.next_run_at, j.next_nominal_at, j.next_dst_shift_ms,
              j.next_calendar_shift_ms, j.fence_token, j.fires_count, j.target, j.payload, j.policies, j.resume_catch_up,
              ${JOB_CALENDARS_SQL} AS calendars
         FROM jobs j
        WHERE ${USERS_SQL} AND j.job_id > $3
        ORDER BY j.job_id LIMIT $4`,
      [tenantId, name, after, limit],
    );
    return rows.map((r) => claimableJobFromRow(r as never));
  }

  /**
   * Sets a job's next occurrence after a calendar change, unless a claim advanced it meanwhile (its
   * fence token moved): that claim planned with the calendars as they were then, and the next one
   * plans with the new. True when written.
   */
  async replan(job: ReplanJob, next: PlannedOccurrence | null): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE jobs SET next_run_at = $3, next_nominal_at = $4, next_dst_shift_ms = $5, next_calendar_shift_ms = $6,
              status = CASE WHEN $3::timestamptz IS NULL AND status = 'SCHEDULED' THEN 'COMPLETED' ELSE status END,
              updated_at = now()
        WHERE job_id = $1 AND fence_token = $2 AND status <> 'COMPLETED'`,
      [
        job.jobId,
        job.fenceToken,
        next?.scheduledFor ?? null,
        next?.nominalTime ?? null,
        next?.dstShiftMs ?? 0,
        next?.calendarShiftMs ?? 0,
      ],
    );
    return r.rowCount === 1;
  }
}

/** The jobs (alias j) that use calendar $2 of tenant $1 (null: shared, where the tenant has no own of that name). */
const USERS_SQL = `j.status <> 'COMPLETED' AND j.policies ? 'calendars' AND j.policies -> 'calendars' ? $2
          AND (CASE WHEN $1::text IS NULL
                    THEN NOT EXISTS (SELECT 1 FROM business_calendars o WHERE o.tenant_id = j.tenant_id AND o.name = $2)
                    ELSE j.tenant_id = $1 END)`;

async function lockedCalendar(
  client: PoolClient,
  tenantId: string | null,
  name: string,
): Promise<StoredCalendar | null> {
  // One writer of a name at a time, whether it exists yet or not.
  await client.query(
    `SELECT pg_advisory_xact_lock(hashtext('tickwork.calendar'), hashtext(coalesce($1, '') || '/' || $2))`,
    [tenantId, name],
  );
  const { rows } = await client.query<CalendarRow>(
    `SELECT ${COLUMNS} FROM business_calendars WHERE coalesce(tenant_id, '') = coalesce($1, '') AND name = $2 FOR UPDATE`,
    [tenantId, name],
  );
  return rows[0] ? storedCalendarFromRow(rows[0]) : null;
}
