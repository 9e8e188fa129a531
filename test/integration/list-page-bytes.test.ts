/**
 * A ListJobs page is bounded by bytes as well as by count: a page of a thousand 256 KiB payloads
 * would be parsed and written again on the API's event loop for seconds.
 */
import { DEFAULT_POLICIES } from '@tickwork/domain';
import { JobRepository } from '@tickwork/store';
import { testDatabase, type TestDatabase } from '../support/db';

describe('ListJobs pages bounded by bytes', () => {
  let db: TestDatabase;
  let jobs: JobRepository;

  beforeAll(async () => {
    db = await testDatabase('pagebytes');
    jobs = new JobRepository(db.pool);
    for (let i = 0; i < 5; i++) {
      const at = new Date(Date.now() + 3_600_000);
      await jobs.insertJob({
        definition: {
          jobId: `big-${i}`,
          tenantId: 'acme',
          schedule: { kind: 'once', at },
          target: { type: 'kafka', topic: 't', key: null, headers: {} },
          payload: { blob: 'x'.repeat(100_000) },
          policies: DEFAULT_POLICIES,
          labels: {},
        },
        shard: 0,
        next: { nominalTime: at, scheduledFor: at },
      });
    }
  });

  afterAll(async () => {
    await db.close();
  });

  it('stops a page once its payloads pass the byte bound, and says it was cut', async () => {
    const page = await jobs.listJobs({ tenantId: 'acme', limit: 10, maxBytes: 250_000 });
    expect(page.jobs.map((j) => j.jobId)).toEqual(['big-0', 'big-1', 'big-2']);
    expect(page.cut).toBe(true);
    const rest = await jobs.listJobs({ tenantId: 'acme', limit: 10, maxBytes: 250_000, afterJobId: 'big-2' });
    expect(rest).toMatchObject({ cut: false });
    expect(rest.jobs.map((j) => j.jobId)).toEqual(['big-3', 'big-4']);
  });

  it('always returns at least one job, and is not cut by count alone', async () => {
    expect((await jobs.listJobs({ tenantId: 'acme', limit: 10, maxBytes: 10 })).jobs).toHaveLength(1);
    const byCount = await jobs.listJobs({ tenantId: 'acme', limit: 2 });
    expect(byCount).toMatchObject({ cut: false });
    expect(byCount.jobs).toHaveLength(2);
  });
});
