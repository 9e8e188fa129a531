/**
 * Dead letters page newest first by (updated_at, job_id, fence_token), for one tenant or all
 * (HistoryRepository.listDeadLetters against real PostgreSQL): following each page's last cursor
 * visits every dead letter once, in order, also among rows updated in the same microsecond.
 */
import type { DeadLetterEntry } from '@tickwork/domain';
import { HistoryRepository } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';

describe('dead-letter pages', () => {
  let db: TestDatabase;
  let history: HistoryRepository;

  beforeAll(async () => {
    db = await testDatabase('dlpages');
    history = new HistoryRepository(db.pool);
    // 9 dead letters over 2 tenants; three share one updated_at (to the microsecond); one
    // succeeded run is not a dead letter.
    const rows: [string, number, string, string][] = [
      ['a-1', 1, 'acme', '2026-12-03T09:00:00.000001Z'],
      ['a-1', 2, 'acme', '2026-12-03T09:00:05.000000Z'],
      ['a-2', 1, 'acme', '2026-12-03T09:00:05.000000Z'],
      ['g-1', 1, 'globex', '2026-12-03T09:00:05.000000Z'],
      ['g-1', 2, 'globex', '2026-12-03T09:00:06.123456Z'],
      ['a-3', 7, 'acme', '2026-12-03T08:59:59.999999Z'],
      ['g-2', 3, 'globex', '2026-12-03T09:01:00.000000Z'],
      ['a-2', 2, 'acme', '2026-12-03T09:02:00.000000Z'],
      ['g-2', 4, 'globex', '2026-12-03T09:00:00.000002Z'],
    ];
    for (const [job, fence, tenant, at] of rows)
      await db.pool.query(
        `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, status, error, finished_at, updated_at)
         VALUES ($1::text, $2::bigint, $3::text, $1::text || ':' || $2::bigint, $4, $4, 'DEAD_LETTERED', 'HTTP 500', $4, $4)`,
        [job, fence, tenant, at],
      );
    await db.pool.query(
      `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, status, updated_at)
       VALUES ('a-9', 1, 'acme', 'a-9:1', now(), now(), 'SUCCEEDED', now())`,
    );
  });
  afterAll(async () => db.close());

  async function everyPage(q: { tenantId?: string }, limit: number): Promise<string[]> {
    const seen: string[] = [];
    let before: DeadLetterEntry['cursor'] | undefined;
    for (let pages = 0; pages < 20; pages++) {
      const page = await history.listDeadLetters({ ...q, limit, before });
      seen.push(...page.map((d) => d.run.fireId));
      if (page.length < limit) return seen;
      before = page[page.length - 1]!.cursor;
    }
    throw new Error('more pages than dead letters');
  }

  it('visits all tenants’ dead letters once each, newest first, ties by job and fence descending', async () => {
    const expected = ['a-2:2', 'g-2:3', 'g-1:2', 'g-1:1', 'a-2:1', 'a-1:2', 'g-2:4', 'a-1:1', 'a-3:7'];
    expect(await everyPage({}, 9)).toEqual(expected);
    for (const limit of [1, 2, 4]) expect(await everyPage({}, limit)).toEqual(expected);
  });

  it('pages one tenant the same way', async () => {
    expect(await everyPage({ tenantId: 'acme' }, 2)).toEqual(['a-2:2', 'a-2:1', 'a-1:2', 'a-1:1', 'a-3:7']);
    expect(await everyPage({ tenantId: 'globex' }, 1)).toEqual(['g-2:3', 'g-1:2', 'g-1:1', 'g-2:4']);
  });

  it('a run the ledger has no fire for has no trace id', async () => {
    const [first] = await history.listDeadLetters({ limit: 1 });
    expect(first!.run.traceId).toBeNull();
  });
});
