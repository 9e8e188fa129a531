/**
 * Label-wide control against real api and scheduler processes, PostgreSQL and Kafka: pause by
 * label (dry run first), resume with each choice for the missed occurrences (the ledger shows
 * PAUSED, COALESCED, CATCH_UP_LIMIT), trigger and delete by label, a pause-until that the
 * scheduler resumes by itself (also across a scheduler restart), the tenant boundary, an audit
 * row per job, and a bad selector refused naming the field — over REST (every response validated
 * against the OpenAPI document) and gRPC.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Client as Pg } from 'pg';
import { AdminTestClient, dateOf, ts, type Msg } from '../support/admin-client';
import { startApp, type AppProcess } from '../support/apps';
import { eventually, freePort, isolate, type Isolation } from '../support/env';
import { contractFetch } from '../support/openapi';

const CLI = join(
  process.env.TICKWORK_TEST_DIST ?? join(__dirname, '..', '..', 'dist'),
  'apps',
  'cli',
  'src',
  'main.js',
);
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const TOKENS = {
  a: 'tok-acme-bulk-0123456789',
  b: 'tok-globex-bulk-0123456789',
  admin: 'tok-admin-bulk-0123456789',
};
const TENANTS = JSON.stringify({
  tenants: { acme: {}, globex: {} },
  tokens: [
    { name: 'acme-user', sha256: sha(TOKENS.a), role: 'tenant', tenant: 'acme' },
    { name: 'globex-user', sha256: sha(TOKENS.b), role: 'tenant', tenant: 'globex' },
    { name: 'ops', sha256: sha(TOKENS.admin), role: 'admin' },
  ],
});

describe('bulk actions by label selector', () => {
  let iso: Isolation;
  let api: AppProcess;
  let scheduler: AppProcess | undefined;
  let db: Pg;
  let base: string;
  let http: typeof fetch;
  let grpc: AdminTestClient;
  let grpcAddress: string;

  const startScheduler = async () => {
    scheduler = startApp(
      'scheduler',
      iso.env({ TICKWORK_SHARDS: '4', TICKWORK_TICK_MS: '100' }),
      await freePort(),
    );
    await scheduler.ready();
  };

  beforeAll(async () => {
    iso = isolate('bulk');
    const grpcPort = await freePort();
    const port = await freePort();
    api = startApp(
      'api',
      iso.env({ TICKWORK_TENANTS: TENANTS, TICKWORK_GRPC_PORT: String(grpcPort), TICKWORK_SHARDS: '4' }),
      port,
    );
    await api.ready();
    base = api.url;
    http = await contractFetch(base);
    db = new Pg({ connectionString: iso.databaseUrl });
    await db.connect();
    grpcAddress = `127.0.0.1:${grpcPort}`;
    grpc = new AdminTestClient(grpcAddress, TOKENS.a);
    await startScheduler();
  }, 120_000);

  afterAll(async () => {
    grpc?.close();
    await scheduler?.stop();
    await api?.stop();
    await db?.end();
    await iso?.dispose();
  });

  const rest = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await http(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Msg };
  };
  const bulk = (token: string, body: unknown) => rest('POST', '/v1/bulk-actions', token, body);
  const create = async (
    token: string,
    jobId: string,
    labels: Record<string, string>,
    expression = '* * * * * *',
  ) => {
    const r = await rest('POST', '/v1/jobs', token, {
      job_id: jobId,
      schedule: { kind: 'cron', expression, time_zone: 'UTC' },
      target: { type: 'kafka', topic: `${iso.topicPrefix}.unused` },
      labels,
    });
    expect(r.status).toBe(201);
  };
  const status = async (jobId: string) =>
    (await db.query<{ status: string }>('SELECT status FROM jobs WHERE job_id = $1', [jobId])).rows[0]
      ?.status;
  const dbNow = async () => (await db.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now.getTime();
  const waitDbMs = async (ms: number) => {
    const from = await dbNow();
    await eventually(
      'the database clock to move on',
      async () => ((await dbNow()) >= from + ms ? true : undefined),
      ms + 10_000,
      200,
    );
  };
  const occurrences = async (jobId: string) =>
    ((await rest('GET', `/v1/jobs/${jobId}/occurrences?page_size=500`, TOKENS.a)).body
      .occurrences as Msg[]) ?? [];
  const audits = async (bulkActionId: string) =>
    (
      await db.query<{ job_id: string; action: string; outcome: string; actor: string }>(
        `SELECT job_id, action, outcome, actor FROM audit_events WHERE details->>'bulk_action_id' = $1 ORDER BY job_id`,
        [bulkActionId],
      )
    ).rows;

  const PROD = 'team=payments,env=prod';

  it('creates the jobs: three of acme in payments/prod, one in payments/dev, one of globex in payments/prod', async () => {
    await create(TOKENS.a, 'pay-skip', { team: 'payments', env: 'prod', r: 'skip' });
    await create(TOKENS.a, 'pay-once', { team: 'payments', env: 'prod', r: 'once' });
    await create(TOKENS.a, 'pay-all', { team: 'payments', env: 'prod', r: 'all' });
    await create(TOKENS.a, 'pay-dev', { team: 'payments', env: 'dev' }, '0 0 1 1 *');
    await create(TOKENS.b, 'gx-pay', { team: 'payments', env: 'prod' });
    await eventually(
      'each acme prod job to fire',
      async () => {
        const { rows } = await db.query<{ n: string }>(
          `SELECT count(DISTINCT job_id) AS n FROM fires WHERE job_id IN ('pay-skip', 'pay-once', 'pay-all')`,
        );
        return Number(rows[0]!.n) === 3 ? true : undefined;
      },
      30_000,
    );
  });

  it('refuses a bad selector, a missing one and misplaced options with 400 naming the field', async () => {
    for (const [body, field] of [
      [{ action: 'PAUSE', label_selector: 'team' }, 'label_selector'],
      [{ action: 'PAUSE' }, 'label_selector'],
      [{ action: 'PAUSE', label_selector: 'env!=prod' }, 'label_selector'],
      [{ action: 'STOP', label_selector: PROD }, 'action'],
      [{ action: 'TRIGGER', label_selector: PROD, missed: 'SKIP' }, 'missed'],
      [{ action: 'RESUME', label_selector: PROD, until: '2099-01-01T00:00:00Z' }, 'until'],
      [{ action: 'PAUSE', label_selector: PROD, until: '2001-01-01T00:00:00Z' }, 'until'],
      [{ action: 'PAUSE', label_selector: PROD, colour: 'red' }, 'colour'],
    ] as const) {
      const r = await bulk(TOKENS.a, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('INVALID_ARGUMENT');
      expect((r.body.violations as Msg[]).map((v) => v.field)).toContain(field);
    }
    expect(await status('pay-skip')).toBe('SCHEDULED');
  });

  it('counts in a dry run without changing anything', async () => {
    const r = await bulk(TOKENS.a, { action: 'PAUSE', label_selector: PROD, dry_run: true });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      dry_run: true,
      matched: 3,
      changed: 0,
      sample_job_ids: ['pay-all', 'pay-once', 'pay-skip'],
    });
    expect(await status('pay-skip')).toBe('SCHEDULED');
  });

  it('pauses by label: only the caller tenant, an audit row per job; again is unchanged', async () => {
    const r = await bulk(TOKENS.a, { action: 'PAUSE', label_selector: PROD });
    expect(r.body).toMatchObject({ action: 'PAUSE', matched: 3, changed: 3, unchanged: 0, failed: 0 });
    for (const id of ['pay-skip', 'pay-once', 'pay-all']) expect(await status(id)).toBe('PAUSED');
    expect(await status('pay-dev')).toBe('SCHEDULED');
    expect(await status('gx-pay')).toBe('SCHEDULED'); // another tenant's job, same labels: untouched
    const rows = await audits(r.body.bulk_action_id as string);
    expect(rows.map((a) => [a.job_id, a.action, a.outcome, a.actor])).toEqual([
      ['pay-all', 'PauseJob', 'OK', 'acme-user'],
      ['pay-once', 'PauseJob', 'OK', 'acme-user'],
      ['pay-skip', 'PauseJob', 'OK', 'acme-user'],
    ]);
    const again = await bulk(TOKENS.a, { action: 'PAUSE', label_selector: PROD });
    expect(again.body).toMatchObject({ matched: 3, changed: 0, unchanged: 3 });
    // A tenant may not name another tenant.
    expect(
      (await bulk(TOKENS.a, { action: 'PAUSE', label_selector: PROD, tenant_id: 'globex' })).status,
    ).toBe(403);
  });

  it('resumes with SKIP, FIRE_ONCE and FIRE_ALL (bounded): the ledger shows what happened to the missed occurrences', async () => {
    await waitDbMs(8_000); // eight per-second occurrences missed while paused
    const resumeAt = await dbNow();
    const skip = await bulk(TOKENS.a, { action: 'RESUME', label_selector: 'r=skip', missed: 'SKIP' });
    const once = await bulk(TOKENS.a, { action: 'RESUME', label_selector: 'r=once', missed: 'FIRE_ONCE' });
    const all = await bulk(TOKENS.a, {
      action: 'RESUME',
      label_selector: 'r=all',
      missed: 'FIRE_ALL',
      catch_up_limit: 2,
      catch_up_window_ms: 60_000,
    });
    for (const r of [skip, once, all])
      expect(r.body).toMatchObject({ action: 'RESUME', matched: 1, changed: 1 });
    const ledger = async (jobId: string, reason: string) =>
      eventually(
        `${jobId}'s ledger to show ${reason}`,
        async () => (await occurrences(jobId)).find((o) => o.reason === reason),
        30_000,
      );
    const paused = await ledger('pay-skip', 'PAUSED');
    expect(paused.outcome).toBe('SKIPPED');
    expect(Number(paused.occurrences)).toBeGreaterThanOrEqual(4);
    expect(Date.parse(paused.nominal_time as string)).toBeLessThan(resumeAt);

    const coalesced = await ledger('pay-once', 'COALESCED');
    expect(Number(coalesced.occurrences)).toBeGreaterThanOrEqual(4);

    const limited = await ledger('pay-all', 'CATCH_UP_LIMIT');
    expect(Number(limited.occurrences)).toBeGreaterThanOrEqual(1);
    // The two caught-up fires are missed occurrences (nominal before the resume), fired after it.
    const caughtUp = (await occurrences('pay-all')).filter(
      (o) =>
        o.outcome === 'FIRED' &&
        Date.parse(o.nominal_time as string) < resumeAt - 2_000 &&
        Date.parse(o.claimed_at as string) >= resumeAt - 1_000,
    );
    expect(caughtUp).toHaveLength(2);
    // The catch-up choice applied once: the jobs fire on time again afterwards.
    for (const id of ['pay-skip', 'pay-once', 'pay-all']) expect(await status(id)).toBe('SCHEDULED');
    const { rows } = await db.query('SELECT job_id FROM jobs WHERE resume_catch_up IS NOT NULL');
    expect(rows).toEqual([]);
  });

  it('triggers by label over gRPC (dry run first), and refuses a bad selector naming the field', async () => {
    const dry = await grpc.ok('BulkAction', {
      action: 'BULK_ACTION_KIND_TRIGGER',
      label_selector: 'team=payments,env=dev',
      dry_run: true,
    });
    expect(dry).toMatchObject({ dry_run: true, matched: 1, sample_job_ids: ['pay-dev'] });
    const r = await grpc.ok('BulkAction', {
      action: 'BULK_ACTION_KIND_TRIGGER',
      label_selector: 'team=payments,env=dev',
    });
    expect(r).toMatchObject({ action: 'BULK_ACTION_KIND_TRIGGER', matched: 1, changed: 1 });
    const { rows } = await db.query<{ trigger: string }>(
      `SELECT trigger FROM fires WHERE job_id = 'pay-dev'`,
    );
    expect(rows.map((x) => x.trigger)).toEqual(['MANUAL']);
    await eventually(
      'the manual fire to be published',
      async () => {
        const q = await db.query(`SELECT 1 FROM fires f JOIN fire_batches b ON b.batch_id = f.batch_id
            WHERE f.job_id = 'pay-dev' AND b.enqueued_at IS NOT NULL`);
        return q.rowCount === 1 ? true : undefined;
      },
      30_000,
    );
    const bad = await grpc.call('BulkAction', {
      action: 'BULK_ACTION_KIND_PAUSE',
      label_selector: 'team payments',
    });
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.codeName).toBe('INVALID_ARGUMENT');
      expect(bad.violations.map((v) => v.field)).toContain('label_selector');
    }
    const other = await grpc.call('BulkAction', {
      action: 'BULK_ACTION_KIND_PAUSE',
      label_selector: PROD,
      tenant_id: 'globex',
    });
    expect(other.ok ? 'OK' : other.codeName).toBe('PERMISSION_DENIED');
  });

  it('pauses until an instant over gRPC; the scheduler resumes the jobs by itself, across its own restart', async () => {
    await scheduler!.stop();
    scheduler = undefined;
    const until = new Date((await dbNow()) + 3_000);
    const r = await grpc.ok('BulkAction', {
      action: 'BULK_ACTION_KIND_PAUSE',
      label_selector: PROD,
      until: ts(until),
      missed: 'MISSED_OCCURRENCES_SKIP',
    });
    expect(r).toMatchObject({ matched: 3, changed: 3 });
    for (const id of ['pay-skip', 'pay-once', 'pay-all']) expect(await status(id)).toBe('PAUSED');
    const shown = await grpc.ok('GetJob', { job_id: 'pay-once' });
    expect(dateOf(shown.paused_until)?.getTime()).toBe(until.getTime());
    expect((await rest('GET', '/v1/jobs/pay-once', TOKENS.a)).body.paused_until).toBe(until.toISOString());
    await waitDbMs(4_000);
    // No scheduler was running at `until`: the one started now still resumes them.
    for (const id of ['pay-skip', 'pay-once', 'pay-all']) expect(await status(id)).toBe('PAUSED');
    await startScheduler();
    await eventually(
      'the jobs to be resumed by the scheduler',
      async () => {
        const s = await Promise.all(['pay-skip', 'pay-once', 'pay-all'].map(status));
        return s.every((x) => x === 'SCHEDULED') ? true : undefined;
      },
      30_000,
    );
    expect((await rest('GET', '/v1/jobs/pay-once', TOKENS.a)).body.paused_until).toBeUndefined();
    const rows = await audits(r.bulk_action_id as string);
    expect(rows.filter((a) => a.action === 'ResumeJob').map((a) => [a.job_id, a.outcome])).toEqual([
      ['pay-all', 'OK'],
      ['pay-once', 'OK'],
      ['pay-skip', 'OK'],
    ]);
    expect(rows.filter((a) => a.action === 'ResumeJob').every((a) => a.actor.startsWith('scheduler:'))).toBe(
      true,
    );
    // Missed while paused, and skipped by the choice the pause named.
    await eventually(
      'a PAUSED range after the pause-until',
      async () =>
        (await occurrences('pay-once')).find(
          (o) => o.reason === 'PAUSED' && Date.parse(o.nominal_time as string) >= until.getTime() - 4_000,
        ),
      30_000,
    );
  });

  it('the CLI runs a bulk action (dry run, then resume) and names a bad selector', async () => {
    const cli = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
        execFile(
          process.execPath,
          [CLI, ...args],
          {
            env: { PATH: process.env.PATH ?? '', TICKWORK_SERVER: grpcAddress, TICKWORK_TOKEN: TOKENS.admin },
            timeout: 60_000,
          },
          (err, stdout, stderr) =>
            done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });
    const dry = await cli(['bulk', 'resume', '-l', PROD, '--tenant', 'globex', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^dry run: RESUME would touch 1 job\(s\)$/m);
    const paused = await cli(['--json', 'bulk', 'pause', '-l', PROD, '--tenant', 'globex']);
    expect(JSON.parse(paused.stdout)).toMatchObject({ matched: 1, changed: 1 });
    const resumed = await cli(['bulk', 'resume', '-l', PROD, '--tenant', 'globex', '--missed', 'SKIP']);
    expect(resumed.stdout).toMatch(/^RESUME: matched 1, changed 1, unchanged 0, failed 0$/m);
    expect(await status('gx-pay')).toBe('SCHEDULED');
    const bad = await cli(['bulk', 'pause', '-l', 'team']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/label_selector: "team" must be key=value/);
  });

  it('an admin acts in a named tenant; deletes by label leave other tenants and labels alone', async () => {
    const adm = await bulk(TOKENS.admin, { action: 'PAUSE', label_selector: PROD, tenant_id: 'globex' });
    expect(adm.body).toMatchObject({ matched: 1, changed: 1 });
    expect(await status('gx-pay')).toBe('PAUSED');
    expect(await status('pay-skip')).toBe('SCHEDULED');

    const del = await bulk(TOKENS.a, { action: 'DELETE', label_selector: 'team=payments,env!=prod' });
    expect(del.body).toMatchObject({ action: 'DELETE', matched: 1, changed: 1 });
    expect((await rest('GET', '/v1/jobs/pay-dev', TOKENS.a)).status).toBe(404);
    expect(await status('pay-skip')).toBe('SCHEDULED');
    expect(await status('gx-pay')).toBe('PAUSED');
    const rows = await audits(del.body.bulk_action_id as string);
    expect(rows.map((a) => [a.job_id, a.action, a.outcome])).toEqual([['pay-dev', 'DeleteJob', 'OK']]);
  });
});
