/**
 * job_runs.dead_letter_reason against real PostgreSQL: the ledger records a dead letter's reason
 * in its own column (the error keeps "REASON: detail" for the runs' views) and hands it back to a
 * re-delivery; migration 0029 backfills it from the error's leading code for older rows.
 */
import { listMigrations, migrate, RunRepository } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';
import { fireOf, insertJob, webhook } from '../e2e/executor-harness';

const target = webhook('https://example.com/hook');

describe('dead_letter_reason', () => {
  let db: TestDatabase;
  afterEach(async () => db?.close());

  it('is recorded with a dead letter and read back by a re-delivery; other outcomes leave it null', async () => {
    db = await testDatabase('dlreason');
    const runs = new RunRepository(db.pool);
    await insertJob(db.pool, 'dl-1', target);
    await insertJob(db.pool, 'ok-1', target);
    const fire = fireOf('dl-1', target);
    const a = await runs.beginRun(fire, 'exec-a', 30_000);
    if (a.action !== 'execute') throw new Error('expected execute');
    expect(
      await runs.completeRun(fire, a.leaseToken, {
        status: 'DEAD_LETTERED',
        httpStatus: 404,
        error: 'NON_RETRYABLE: HTTP 404: not here',
        deadLetterReason: 'NON_RETRYABLE',
      }),
    ).not.toBeNull();
    const again = await runs.beginRun(fire, 'exec-b', 30_000);
    expect(again).toMatchObject({
      action: 'skip',
      reason: 'ALREADY_FINAL',
      run: {
        deadLetterReason: 'NON_RETRYABLE',
        error: 'NON_RETRYABLE: HTTP 404: not here',
        handedOffAt: null,
      },
    });

    const ok = fireOf('ok-1', target);
    const b = await runs.beginRun(ok, 'exec-a', 30_000);
    if (b.action !== 'execute') throw new Error('expected execute');
    await runs.completeRun(ok, b.leaseToken, { status: 'SUCCEEDED', httpStatus: 200, error: null });
    expect((await runs.findRunState(ok))!.deadLetterReason).toBeNull();
  });

  it('migration 0029 backfills the reason of dead-lettered runs from their error', async () => {
    const before = listMigrations().filter((m) => m.version < 29);
    db = await testDatabase('dlbackfill', { migrations: before });
    await insertJob(db.pool, 'old-1', target);
    await insertJob(db.pool, 'old-2', target);
    await insertJob(db.pool, 'old-3', target);
    const runs = new RunRepository(db.pool);
    const rows: [string, string, string | null][] = [
      ['old-1', 'DEAD_LETTERED', 'RETRIES_EXHAUSTED: gave up after 3 attempts; last error: HTTP 503'],
      ['old-2', 'DEAD_LETTERED', 'free text without a code'],
      ['old-3', 'RETRYING', 'HTTP_503: looks like a code but is not a dead letter'],
    ];
    for (const [jobId, status, error] of rows) {
      const fire = fireOf(jobId, target);
      await db.pool.query(
        `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, attempt, status, error, started_at, finished_at)
         VALUES ($1, $2, $3, $4, $5, $5, 1, $6, $7, now(), now())`,
        [jobId, fire.fenceToken, fire.tenantId, fire.fireId, fire.scheduledFor, status, error],
      );
    }
    expect(await migrate(db.pool)).toContain(29);
    const reasons = await Promise.all(
      rows.map(async ([jobId]) => (await runs.findRunState(fireOf(jobId, target)))!.deadLetterReason),
    );
    expect(reasons).toEqual(['RETRIES_EXHAUSTED', null, null]);
  });
});
