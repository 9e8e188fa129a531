import type { Pool } from 'pg';

/**
 * Executor liveness beats (migration 0026). A run leased by a process that stopped beating is
 * taken over by `RunRepository.beginRuns` once the process has been silent for the dead-holder
 * limit while another process beat without a break (the witness): the database was reachable, so
 * the silence is the process's own. After a database outage every process's run of beats starts
 * again, so no one's silence during the outage counts against it.
 */
export class ExecutorLivenessRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * Records a beat of `issuer` (an executor process) by the database clock. Its run of beats goes
   * on when the previous beat is at most `continuityMs` old, and starts again otherwise.
   */
  async beat(issuer: string, instanceId: string, continuityMs: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO executor_liveness AS l (issuer, instance_id, live_since, beat_at)
       VALUES ($1, $2, now(), now())
       ON CONFLICT (issuer) DO UPDATE
          SET beat_at = now(),
              live_since = CASE WHEN l.beat_at >= now() - make_interval(secs => $3::double precision / 1000)
                                THEN l.live_since ELSE now() END`,
      [issuer, instanceId, continuityMs],
    );
  }

  /** Removes the beats of a process that stopped on purpose (its leases are finished or released). */
  async retire(issuer: string): Promise<void> {
    await this.pool.query('DELETE FROM executor_liveness WHERE issuer = $1', [issuer]);
  }

  /** Removes the rows of processes silent for longer than `olderThanMs` (long dead); how many. */
  async forgetSilent(olderThanMs: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM executor_liveness WHERE beat_at < now() - make_interval(secs => $1::double precision / 1000)`,
      [olderThanMs],
    );
    return rowCount ?? 0;
  }
}
