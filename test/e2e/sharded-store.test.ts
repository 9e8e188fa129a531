/**
 * The schedule store sharded across two PostgreSQL servers: the stack's (shards 0-1, also the
 * DATABASE_URL database) and a second one this test starts on a free port from the embedded
 * PostgreSQL binaries (shards 2-3). Real API, scheduler and executor processes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { shardOf } from '@tickwork/domain';
import { startApp, startPipeline, type AppProcess } from '../support/apps';
import { eventually, freePort, isolate, type Isolation } from '../support/env';
import { WebhookReceiver } from '../support/receiver';
import { PrivatePostgres } from '../faults/harness/private-stack';

const SHARDS = 4;
const JOBS = 24;

describe('a schedule store sharded across two PostgreSQL servers', () => {
  let second: PrivatePostgres;
  let iso: Isolation;
  let env: Record<string, string>;
  let receiver: WebhookReceiver;
  let apps: AppProcess[] = [];
  let api: AppProcess;
  let scheduler: AppProcess;
  /** Direct sessions: [the DATABASE_URL database (shards 0-1), the second server's (shards 2-3)]. */
  let dbs: Client[] = [];
  const databaseOf = (jobId: string) => (shardOf(jobId, SHARDS) < 2 ? 0 : 1);

  beforeAll(async () => {
    second = new PrivatePostgres(mkdtempSync(join(tmpdir(), 'tickwork-shard-pg-')), await freePort());
    await second.init();
    await second.start();
    iso = isolate('sharded');
    const secondUrl = second.url(`tickwork_test_${iso.id}`);
    receiver = await new WebhookReceiver().start();
    env = iso.env({
      TICKWORK_SHARDS: String(SHARDS),
      TICKWORK_STORE_SHARDS: `0-1=${iso.databaseUrl},2-3=${secondUrl}`,
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      TICKWORK_TICK_MS: '100',
      // A killed scheduler's shards are taken over once its lease runs out.
      TICKWORK_SHARD_LEASE_MS: '3000',
      TICKWORK_GRPC_PORT: String(await freePort()),
    });
    const pipeline = await startPipeline(env);
    api = pipeline.api;
    scheduler = pipeline.scheduler;
    apps = pipeline.all;
    dbs = [new Client({ connectionString: iso.databaseUrl }), new Client({ connectionString: secondUrl })];
    await Promise.all(dbs.map((d) => d.connect()));
    // The last test stops the second server under these sessions: its end is expected there.
    for (const d of dbs) d.on('error', () => undefined);
  }, 240_000);

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await Promise.all(dbs.map((d) => d.end().catch(() => undefined)));
    await receiver?.stop();
    await iso?.dispose();
    await second?.stop();
    if (second) rmSync(second.dir, { recursive: true, force: true });
  }, 60_000);

  async function createJob(jobId: string, at: Date): Promise<void> {
    const res = await fetch(`${api.url}/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        job_id: jobId,
        tenant_id: 'acme',
        schedule: { kind: 'once', at: at.toISOString() },
        target: { type: 'webhook', url: receiver.url(`/hook/${jobId}`), method: 'POST' },
      }),
    });
    expect(res.status).toBe(201);
  }

  const ids = Array.from({ length: JOBS }, (_, i) => `sharded-${String(i).padStart(2, '0')}`);

  it('stores each job in its shard database, fires each once, and records its run there', async () => {
    // Both databases get jobs (the ids are fixed, so their shards are too).
    expect(new Set(ids.map(databaseOf))).toEqual(new Set([0, 1]));
    const due = new Date(Date.now() + 3_000);
    for (const id of ids) await createJob(id, due);

    for (const [d, db] of dbs.entries()) {
      const { rows } = await db.query<{ job_id: string; shard: number }>(
        'SELECT job_id, shard FROM jobs ORDER BY job_id',
      );
      expect(rows.map((r) => r.job_id)).toEqual(ids.filter((id) => databaseOf(id) === d));
      for (const r of rows) expect(r.shard).toBe(shardOf(r.job_id, SHARDS));
    }

    await eventually('every job fired', () => (receiver.calls.length >= JOBS ? true : undefined), 60_000);
    // Every run recorded (SUCCEEDED) in its job's database, and none in the other.
    await eventually(
      'every run recorded',
      async () => {
        const counts = await Promise.all(
          dbs.map((db) =>
            db.query<{ job_id: string }>(
              `SELECT job_id FROM job_runs WHERE status = 'SUCCEEDED' ORDER BY job_id`,
            ),
          ),
        );
        return counts.reduce((n, c) => n + c.rowCount!, 0) >= JOBS ? counts : undefined;
      },
      30_000,
    ).then((counts) =>
      counts.forEach((c, d) =>
        expect(c.rows.map((r) => r.job_id)).toEqual(ids.filter((id) => databaseOf(id) === d)),
      ),
    );
    // Exactly once: a second delivery would have come by now (the runs are recorded after the call).
    const byJob = new Map<string, number>();
    for (const call of receiver.calls) byJob.set(call.path, (byJob.get(call.path) ?? 0) + 1);
    expect([...byJob].sort()).toEqual(ids.map((id) => [`/hook/${id}`, 1]));
    for (const call of receiver.calls) expect(call.at).toBeGreaterThanOrEqual(due.getTime());
  }, 120_000);

  it('lists the jobs of both databases in small pages, each once and in order, while jobs are created', async () => {
    const seen: string[] = [];
    let token = '';
    for (let page = 0; page < 100; page++) {
      const res = await fetch(
        `${api.url}/v1/jobs?page_size=5${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
      );
      expect(res.status).toBe(200);
      const body = (await res.json()) as { jobs: { job_id: string }[]; next_page_token: string };
      seen.push(...body.jobs.map((j) => j.job_id));
      // A job created between pages, ahead of the position, in either database: it may be listed, never twice.
      await createJob(`sharded-${String(page).padStart(2, '0')}-late`, new Date(Date.now() + 3_600_000));
      token = body.next_page_token;
      if (!token) break;
    }
    expect(seen).toEqual([...seen].sort());
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of ids) expect(seen).toContain(id);
  }, 60_000);

  async function rest(method: string, path: string, body?: unknown) {
    const res = await fetch(`${api.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
  }

  it('pauses by label in both databases, window after window, and counts and samples over both', async () => {
    const bulkIds = Array.from({ length: 8 }, (_, i) => `bulk-${i}`);
    expect(new Set(bulkIds.map(databaseOf))).toEqual(new Set([0, 1]));
    for (const id of bulkIds) {
      const r = await rest('POST', '/v1/jobs', {
        job_id: id,
        tenant_id: 'acme',
        schedule: { kind: 'cron', expression: '0 0 1 1 *', time_zone: 'UTC' },
        target: { type: 'webhook', url: receiver.url(`/hook/${id}`), method: 'POST' },
        labels: { group: 'bulk' },
      });
      expect(r.status).toBe(201);
    }
    const selector = { action: 'PAUSE', label_selector: 'group=bulk', tenant_id: 'acme' };
    const dry = await rest('POST', '/v1/bulk-actions', { ...selector, dry_run: true });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ dry_run: true, matched: 8, sample_job_ids: [...bulkIds].sort() });

    const run = await rest('POST', '/v1/bulk-actions', selector);
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ action: 'PAUSE', matched: 8, changed: 8, unchanged: 0, failed: 0 });
    for (const [d, db] of dbs.entries()) {
      const { rows } = await db.query<{ job_id: string; status: string }>(
        `SELECT job_id, status FROM jobs WHERE job_id LIKE 'bulk-%' ORDER BY job_id`,
      );
      expect(rows.map((r) => r.job_id)).toEqual(bulkIds.filter((id) => databaseOf(id) === d));
      expect(rows.every((r) => r.status === 'PAUSED')).toBe(true);
    }
    const again = await rest('POST', '/v1/bulk-actions', selector);
    expect(again.body).toMatchObject({ matched: 8, changed: 0, unchanged: 8 });
  }, 60_000);

  it('backfills a job of the second database there: each planned occurrence fires once', async () => {
    const jobId = ['backfill-a', 'backfill-b', 'backfill-c', 'backfill-d', 'backfill-e'].find(
      (id) => databaseOf(id) === 1,
    )!;
    expect(jobId).toBeDefined();
    const created = await rest('POST', '/v1/jobs', {
      job_id: jobId,
      tenant_id: 'acme',
      schedule: { kind: 'cron', expression: '* * * * *', time_zone: 'UTC' },
      target: { type: 'webhook', url: receiver.url(`/hook/${jobId}`), method: 'POST' },
    });
    expect(created.status).toBe(201);
    // Paused: only the backfill fires it during the test.
    expect((await rest('POST', `/v1/jobs/${jobId}/pause`)).status).toBe(200);
    const minute = 60_000;
    const to = Math.floor(Date.now() / minute) * minute;
    const window = { from: new Date(to - 4 * minute).toISOString(), to: new Date(to).toISOString() };
    const run = await rest('POST', `/v1/jobs/${jobId}/backfills`, { ...window, max_per_second: 10 });
    expect(run.status).toBe(201);
    const planned = run.body.planned as number;
    expect(planned).toBeGreaterThanOrEqual(4);
    const id = run.body.backfill_id as string;
    const done = await eventually(
      'the backfill to finish',
      async () => {
        const g = await rest('GET', `/v1/jobs/${jobId}/backfills/${id}`);
        return g.body.status === 'DONE' ? g.body : undefined;
      },
      30_000,
    );
    expect(done).toMatchObject({ fired: planned, remaining: 0 });
    // The backfill lives in the job's database only.
    const [inFirst, inSecond] = await Promise.all(
      dbs.map((db) => db.query('SELECT 1 FROM backfills WHERE job_id = $1', [jobId])),
    );
    expect([inFirst!.rowCount, inSecond!.rowCount]).toEqual([0, 1]);
    await eventually(
      'every backfilled occurrence delivered',
      () => (receiver.calls.filter((c) => c.path === `/hook/${jobId}`).length >= planned ? true : undefined),
      30_000,
    );
    // Once each: no more calls than occurrences.
    expect(receiver.calls.filter((c) => c.path === `/hook/${jobId}`)).toHaveLength(planned);
  }, 90_000);

  it("shows the cluster over both databases and one job's lateness from its own; refuses a merged lateness", async () => {
    const cluster = await rest('GET', '/v1/cluster');
    expect(cluster.status).toBe(200);
    const shards = cluster.body.shards as { shard: number; owner: string | null }[];
    // Each shard's lease read from its own database: the one scheduler holds all four.
    expect(shards.map((x) => x.shard)).toEqual([0, 1, 2, 3]);
    expect(shards.every((x) => x.owner !== null)).toBe(true);

    const jobId = ids.find((id) => databaseOf(id) === 1)!;
    const one = await rest('GET', `/v1/lateness?job_id=${jobId}`);
    expect(one.status).toBe(200);
    expect((one.body.counts as { fired: number }).fired).toBe(1);

    // Percentiles sampled per database cannot be merged exactly: refused, never answered from one.
    const merged = await rest('GET', '/v1/lateness?tenant_id=acme');
    expect(merged.status).toBeGreaterThanOrEqual(400);
    expect(merged.status).toBeLessThan(500);
    expect(JSON.stringify(merged.body)).toMatch(/TICKWORK_STORE_SHARDS|sharded/);
  });

  it('writes a business calendar to every database (their claims read it) and routes the jobs naming it', async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${api.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const created = await post('/v1/calendars', {
      name: 'shut',
      tenant_id: 'acme',
      closed_dates: ['2031-01-01'],
    });
    expect(created.status).toBe(201);
    for (const db of dbs) {
      const { rows } = await db.query<{ version: number }>(
        `SELECT version::int AS version FROM business_calendars WHERE tenant_id = 'acme' AND name = 'shut'`,
      );
      expect(rows).toEqual([{ version: 1 }]);
    }
    // One job per database names it: each is planned through its own database's copy.
    const jobIds = ['cal-a', 'cal-b', 'cal-c', 'cal-d', 'cal-e', 'cal-f'];
    expect(new Set(jobIds.map(databaseOf))).toEqual(new Set([0, 1]));
    for (const id of jobIds) {
      const res = await post('/v1/jobs', {
        job_id: id,
        tenant_id: 'acme',
        schedule: { kind: 'interval', every_ms: 3_600_000 },
        target: { type: 'webhook', url: receiver.url(`/cal/${id}`), method: 'POST' },
        policies: { calendars: ['shut'] },
      });
      expect(res.status).toBe(201);
    }
    // Deleting must count the users in every database at once: refused for now.
    const deleted = await fetch(`${api.url}/v1/calendars/shut?tenant_id=acme`, { method: 'DELETE' });
    expect(deleted.status).toBeGreaterThanOrEqual(400);
    expect(deleted.status).toBeLessThan(500);
  }, 60_000);

  it('refuses to start an app whose shard map disagrees with the recorded one, naming the variable', async () => {
    const other = startApp(
      'api',
      {
        ...env,
        TICKWORK_STORE_SHARDS: `0-2=${iso.databaseUrl},3=${second.url(`tickwork_test_${iso.id}`)}`,
        TICKWORK_GRPC_PORT: '0',
      },
      await freePort(),
    );
    apps.push(other);
    const code = await new Promise<number | null>((resolve) => other.child.once('exit', resolve));
    expect(code).not.toBe(0);
    expect(other.tail(80)).toContain('TICKWORK_STORE_SHARDS');
    expect(other.tail(80)).toMatch(/shard 2 is in .*:\d+\/tickwork_test_.*, configured 127\.0\.0\.1:5432/);
  }, 60_000);
  it('kill -9 of a scheduler: the other takes its shards in both databases, no occurrence lost or fired twice', async () => {
    const heir = startApp('scheduler', env, await freePort());
    apps.push(heir);
    await heir.ready(60_000);
    const anchor = new Date(Math.ceil((Date.now() + 2_000) / 1000) * 1000);
    const ticking = ids.slice(0, 12).map((id) => `${id}-tick`);
    expect(new Set(ticking.map(databaseOf))).toEqual(new Set([0, 1]));
    for (const id of ticking) {
      const res = await fetch(`${api.url}/v1/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          job_id: id,
          tenant_id: 'acme',
          schedule: { kind: 'interval', every_ms: 1_000, anchor: anchor.toISOString() },
          target: { type: 'webhook', url: receiver.url(`/tick/${id}`), method: 'POST' },
          // Every occurrence missed while no one owned a shard is caught up, so "no gaps" is checkable.
          policies: { misfire: 'FIRE_ALL' },
        }),
      });
      expect(res.status).toBe(201);
    }
    const ticks = () => receiver.calls.filter((c) => c.path.startsWith('/tick/'));
    await eventually(
      'every job to fire',
      () => (ticks().length >= 2 * ticking.length ? true : undefined),
      30_000,
    );
    await scheduler.kill();
    const killedAt = Date.now();
    // The heir holds all four shards (two per database) and fires on past the takeover.
    await eventually(
      'three periods fired after the takeover',
      () => {
        const after = ticks().filter(
          (c) => Date.parse(String(c.headers['tickwork-scheduled-for'])) > killedAt + 12_000,
        );
        return after.length >= 3 * ticking.length ? true : undefined;
      },
      60_000,
    );
    for (const id of ticking) {
      const nominals = ticks()
        .filter((c) => c.headers['tickwork-job-id'] === id)
        .map((c) => Date.parse(String(c.headers['tickwork-scheduled-for'])))
        .sort((a, b) => a - b);
      expect(new Set(nominals).size).toBe(nominals.length);
      nominals.forEach((n, k) => expect(n).toBe(anchor.getTime() + k * 1_000));
    }
    // The takeover happened in each database: its shards' leases are the heir's now.
    for (const db of dbs) {
      const { rows } = await db.query<{ owner: string }>('SELECT DISTINCT owner FROM shard_leases');
      expect(rows).toEqual([{ owner: `scheduler-${heir.port}` }]);
    }
  }, 180_000);

  it("the second database down: the first one's jobs fire on, the second's fire again once it is back", async () => {
    // The interval jobs of the test before (every second, FIRE_ALL), held by the heir.
    const ticking = ids.slice(0, 12).map((id) => `${id}-tick`);
    const inFirst = ticking.filter((id) => databaseOf(id) === 0);
    const inSecond = ticking.filter((id) => databaseOf(id) === 1);
    const deliveredAfter = (jobs: readonly string[], after: number) =>
      receiver.calls.filter(
        (c) =>
          jobs.includes(String(c.headers['tickwork-job-id'])) &&
          Date.parse(String(c.headers['tickwork-scheduled-for'])) > after,
      ).length;
    await second.stopImmediate();
    const downAt = Date.now();
    try {
      // Five periods of every job of the first database, from two seconds into the outage, within
      // 15 s: its shards' leases and runs live in the database that still answers.
      await eventually(
        "the first database's jobs to fire on",
        () => (deliveredAfter(inFirst, downAt + 2_000) >= 5 * inFirst.length ? true : undefined),
        15_000,
      );
    } finally {
      await second.start();
    }
    const upAt = Date.now();
    await eventually(
      "the second database's jobs to fire again",
      () => (deliveredAfter(inSecond, upAt) >= 2 * inSecond.length ? true : undefined),
      90_000,
    );
  }, 180_000);
});
