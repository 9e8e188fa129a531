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
  }, 240_000);

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await Promise.all(dbs.map((d) => d.end()));
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

  it('a feature not routed across databases is refused, not answered from one database', async () => {
    const res = await fetch(`${api.url}/v1/bulk-actions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'PAUSE', label_selector: 'env=prod', dry_run: true }),
    });
    const body = await res.text();
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(body).toMatch(/TICKWORK_STORE_SHARDS|sharded/);
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
});
