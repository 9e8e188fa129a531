/** The run ledger: the executor's idempotency key and lease per fire (job_id, fence_token). */
import type { Pool } from 'pg';
import type { FireEvent, FireKey, Run, RunStatus } from '@tickwork/domain';
import { RUN_COLUMNS, runFromRow, type RunRow } from './rows';

export type RunStart =
  | { readonly action: 'execute'; readonly leaseToken: string; readonly takenOver: boolean }
  | { readonly action: 'skip'; readonly reason: 'ALREADY_FINAL' | 'LEASE_HELD'; readonly status: RunStatus };

export interface RunCompletion {
  readonly status: Exclude<RunStatus, 'RUNNING'>;
  readonly httpStatus: number | null;
  readonly error: string | null;
}

export class RunRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * Starts (or takes over) the run of a fire. A fire already in a final state, or running under
   * someone's live lease, is skipped; an expired lease is taken over with a new lease token.
   */
  async beginRun(fire: FireEvent, owner: string, leaseMs: number): Promise<RunStart> {
    const { rows } = await this.pool.query<{ lease_token: string; inserted: boolean }>(
      `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, attempt, status,
                             lease_owner, lease_token, lease_expires_at, started_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'RUNNING', $8, gen_random_uuid(),
               now() + make_interval(secs => $9::double precision / 1000), now())
       ON CONFLICT (job_id, fence_token) DO UPDATE
          SET lease_owner = EXCLUDED.lease_owner, lease_token = EXCLUDED.lease_token,
              lease_expires_at = EXCLUDED.lease_expires_at, status = 'RUNNING',
              attempt = GREATEST(job_runs.attempt, EXCLUDED.attempt), started_at = now(), updated_at = now()
        WHERE (job_runs.status = 'RUNNING' AND job_runs.lease_expires_at <= now())
           OR (job_runs.status = 'RETRYING' AND EXCLUDED.attempt > job_runs.attempt)
       RETURNING lease_token::text, (xmax = 0) AS inserted`,
      [fire.jobId, fire.fenceToken, fire.tenantId, fire.fireId, fire.nominalTime, fire.scheduledFor, fire.attempt, owner, leaseMs],
    );
    const row = rows[0];
    if (row) return { action: 'execute', leaseToken: row.lease_token, takenOver: !row.inserted };
    const existing = await this.findRun(fire);
    const status = existing?.status ?? 'RUNNING';
    return { action: 'skip', reason: status === 'RUNNING' || status === 'RETRYING' ? 'LEASE_HELD' : 'ALREADY_FINAL', status };
  }

  /** Extends a live lease; false when the lease was lost (taken over or finished). */
  async heartbeat(key: FireKey, leaseToken: string, leaseMs: number): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE job_runs SET lease_expires_at = now() + make_interval(secs => $4::double precision / 1000), updated_at = now()
        WHERE job_id = $1 AND fence_token = $2 AND lease_token = $3 AND status = 'RUNNING'`,
      [key.jobId, key.fenceToken, leaseToken, leaseMs],
    );
    return r.rowCount === 1;
  }

  /** Records an attempt's outcome, only if the caller still holds the lease; false when fenced out. */
  async completeRun(key: FireKey, leaseToken: string, outcome: RunCompletion): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE job_runs
          SET status = $4, http_status = $5, error = $6, finished_at = now(), updated_at = now(),
              lease_expires_at = NULL
        WHERE job_id = $1 AND fence_token = $2 AND lease_token = $3 AND status = 'RUNNING'`,
      [key.jobId, key.fenceToken, leaseToken, outcome.status, outcome.httpStatus, outcome.error],
    );
    return r.rowCount === 1;
  }

  /** One run by its fire key, or null. */
  async findRun(key: FireKey): Promise<Run | null> {
    const { rows } = await this.pool.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM job_runs WHERE job_id = $1 AND fence_token = $2`, [
      key.jobId,
      key.fenceToken,
    ]);
    return rows[0] ? runFromRow(rows[0]) : null;
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
