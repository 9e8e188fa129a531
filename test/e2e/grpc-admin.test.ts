/**
 * The gRPC admin API against the real API process, PostgreSQL and registry: every RPC's happy
 * path, each error code, a tenant never seeing or touching another tenant's job (per RPC), quotas,
 * size limits, deadlines, audit events, the health service, and grpcurl-style server reflection.
 */
import { createHash } from 'node:crypto';
import { connect as http2Connect } from 'node:http2';
import { resolve } from 'node:path';
import { credentials, loadPackageDefinition, Metadata, status, type Client } from '@grpc/grpc-js';
import { loadFileDescriptorSetFromBuffer, loadSync } from '@grpc/proto-loader';
import { Client as Pg } from 'pg';
import { Root } from 'protobufjs';
import { AdminTestClient, dateOf, LOADER, ts, type Msg } from '../support/admin-client';
import { startApp, type AppProcess } from '../support/apps';
import { eventually, freePort, isolate, type Isolation } from '../support/env';

const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const TOKENS = {
  a: 'tok-acme-0123456789abcdef',
  b: 'tok-globex-0123456789abcdef',
  admin: 'tok-admin-0123456789abcdef',
  q: 'tok-quota-0123456789abcdef',
};
const TENANTS = JSON.stringify({
  tenants: { acme: { max_jobs: 100 }, globex: {}, quota: { max_jobs: 1, max_fires_per_second: 5 } },
  tokens: [
    { name: 'acme-user', sha256: sha(TOKENS.a), role: 'tenant', tenant: 'acme' },
    { name: 'globex-user', sha256: sha(TOKENS.b), role: 'tenant', tenant: 'globex' },
    { name: 'ops', sha256: sha(TOKENS.admin), role: 'admin' },
    { name: 'quota-user', sha256: sha(TOKENS.q), role: 'tenant', tenant: 'quota' },
  ],
});

const inAnHour = () => new Date(Date.now() + 3_600_000);
const webhook = { webhook: { url: 'https://example.com/hook', method: 'HTTP_METHOD_POST' } };
const onceJob = (jobId: string, extra: Msg = {}): Msg => ({
  job_id: jobId,
  schedule: { once: { at: ts(inAnHour()) } },
  target: webhook,
  ...extra,
});

describe('gRPC admin API', () => {
  let iso: Isolation;
  let api: AppProcess;
  let db: Pg;
  let grpcAddress: string;
  let a: AdminTestClient;
  let b: AdminTestClient;
  let admin: AdminTestClient;

  beforeAll(async () => {
    iso = isolate('grpcadmin');
    const grpcPort = await freePort();
    grpcAddress = `127.0.0.1:${grpcPort}`;
    api = startApp(
      'api',
      iso.env({
        TICKWORK_TENANTS: TENANTS,
        TICKWORK_GRPC_PORT: String(grpcPort),
        TICKWORK_MAX_PAYLOAD_BYTES: '4096',
        TICKWORK_GRPC_MAX_MESSAGE_BYTES: '32768',
      }),
      await freePort(),
    );
    await api.ready();
    db = new Pg({ connectionString: iso.databaseUrl });
    await db.connect();
    a = new AdminTestClient(grpcAddress, TOKENS.a);
    b = a.as(TOKENS.b);
    admin = a.as(TOKENS.admin);
  }, 120_000);

  afterAll(async () => {
    for (const c of [a, b, admin]) c?.close();
    await api?.stop();
    await db?.end();
    await iso?.dispose();
  });

  const jobRow = async (jobId: string) =>
    (
      await db.query<{
        status: string;
        version: string;
        fence_token: string;
        tenant_id: string;
        labels: Record<string, string>;
      }>('SELECT * FROM jobs WHERE job_id = $1', [jobId])
    ).rows[0];

  it('reports health without auth, and refuses calls without a valid bearer token', async () => {
    const health = await a.check('');
    expect(health).toMatchObject({ ok: true, res: { status: 'SERVING' } });
    expect(await a.check('tickwork.admin.v1.SchedulerAdmin')).toMatchObject({
      ok: true,
      res: { status: 'SERVING' },
    });
    expect(await a.check('no.such.Service')).toMatchObject({ ok: false, code: status.NOT_FOUND });

    const anonymous = a.as(undefined);
    for (const authorization of [undefined, 'Bearer not-a-known-token', `Basic ${TOKENS.a}`]) {
      const r = await anonymous.call(
        'GetJob',
        { job_id: 'x' },
        authorization === undefined ? {} : { authorization },
      );
      expect(r).toMatchObject({ ok: false, code: status.UNAUTHENTICATED });
    }
    anonymous.close();
  });

  it('CreateJob: creates in the caller tenant; INVALID_ARGUMENT with field violations; ALREADY_EXISTS; PERMISSION_DENIED for another tenant', async () => {
    const created = await a.ok('CreateJob', {
      job: onceJob('acme-1', {
        labels: { team: 'data' },
        payload: { structValue: { fields: { n: { numberValue: 1 } } } },
      }),
    });
    expect(created).toMatchObject({
      job_id: 'acme-1',
      tenant_id: 'acme',
      status: 'JOB_STATUS_SCHEDULED',
      etag: 'v1',
      version: 1,
      labels: { team: 'data' },
    });
    expect((await jobRow('acme-1'))?.tenant_id).toBe('acme');

    const bad = await a.call('CreateJob', {
      job: {
        job_id: 'acme-bad',
        schedule: { cron: { expression: '0 9 * *', time_zone: 'Mars/Olympus' } },
        target: { webhook: { url: 'ftp://nope' } },
      },
    });
    expect(bad).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    const fields = bad.ok ? [] : bad.violations.map((v) => v.field);
    expect(fields).toEqual(
      expect.arrayContaining([
        'job.schedule.cron.expression',
        'job.schedule.cron.time_zone',
        'job.target.webhook.url',
      ]),
    );
    expect(await jobRow('acme-bad')).toBeUndefined();

    expect(await a.call('CreateJob', { job: onceJob('acme-1') })).toMatchObject({
      ok: false,
      code: status.ALREADY_EXISTS,
    });
    expect(await a.call('CreateJob', { job: onceJob('acme-2', { tenant_id: 'globex' }) })).toMatchObject({
      ok: false,
      code: status.PERMISSION_DENIED,
    });
    expect(await jobRow('acme-2')).toBeUndefined();

    const forGlobex = await admin.ok('CreateJob', {
      job: onceJob('globex-1', { tenant_id: 'globex', labels: { team: 'ops' } }),
    });
    expect(forGlobex.tenant_id).toBe('globex');
  });

  it('CreateJob: enforces the tenant max_jobs quota with RESOURCE_EXHAUSTED, and payload and message size limits', async () => {
    const q = a.as(TOKENS.q);
    await q.ok('CreateJob', { job: onceJob('quota-1') });
    const over = await q.call('CreateJob', { job: onceJob('quota-2') });
    expect(over).toMatchObject({ ok: false, code: status.RESOURCE_EXHAUSTED });
    expect(await jobRow('quota-2')).toBeUndefined();
    q.close();

    const bigPayload = { stringValue: 'x'.repeat(5_000) };
    const tooBig = await a.call('CreateJob', { job: onceJob('acme-big', { payload: bigPayload }) });
    expect(tooBig).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    expect(tooBig.ok ? [] : tooBig.violations.map((v) => v.field)).toContain('job.payload');

    const hugeMessage = await a.call('CreateJob', {
      job: onceJob('acme-huge', { payload: { stringValue: 'x'.repeat(40_000) } }),
    });
    expect(hugeMessage).toMatchObject({ ok: false, code: status.RESOURCE_EXHAUSTED });
    expect(await jobRow('acme-huge')).toBeUndefined();
  });

  it('GetJob and ListJobs: a tenant sees only its own jobs; admins see all; filters and pages', async () => {
    expect(await a.ok('GetJob', { job_id: 'acme-1' })).toMatchObject({ job_id: 'acme-1', tenant_id: 'acme' });
    expect(await b.call('GetJob', { job_id: 'acme-1' })).toMatchObject({ ok: false, code: status.NOT_FOUND });
    expect(await admin.ok('GetJob', { job_id: 'acme-1' })).toMatchObject({ tenant_id: 'acme' });
    expect(await a.call('GetJob', { job_id: 'no-such-job' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });
    expect(await a.call('GetJob', { job_id: '' })).toMatchObject({
      ok: false,
      code: status.INVALID_ARGUMENT,
    });

    await a.ok('CreateJob', { job: onceJob('acme-3', { labels: { team: 'web' } }) });
    const mine = (await a.ok('ListJobs', {})).jobs as Msg[];
    expect(mine.map((j) => j.job_id).sort()).toEqual(['acme-1', 'acme-3']);
    const theirs = (await b.ok('ListJobs', {})).jobs as Msg[];
    expect(theirs.map((j) => j.job_id)).toEqual(['globex-1']);
    expect(await a.call('ListJobs', { tenant_id: 'globex' })).toMatchObject({
      ok: false,
      code: status.PERMISSION_DENIED,
    });

    const labelled = (await a.ok('ListJobs', { labels: { team: 'data' } })).jobs as Msg[];
    expect(labelled.map((j) => j.job_id)).toEqual(['acme-1']);
    const everyone = (await admin.ok('ListJobs', {})).jobs as Msg[];
    expect(everyone.map((j) => j.job_id)).toEqual(
      expect.arrayContaining(['acme-1', 'acme-3', 'globex-1', 'quota-1']),
    );
    const onlyGlobex = (await admin.ok('ListJobs', { tenant_id: 'globex' })).jobs as Msg[];
    expect(onlyGlobex.map((j) => j.tenant_id)).toEqual(['globex']);

    const first = await a.ok('ListJobs', { page_size: 1 });
    expect((first.jobs as Msg[]).map((j) => j.job_id)).toEqual(['acme-1']);
    expect(first.next_page_token).toBeTruthy();
    const second = await a.ok('ListJobs', { page_size: 1, page_token: first.next_page_token });
    expect((second.jobs as Msg[]).map((j) => j.job_id)).toEqual(['acme-3']);
    expect(second.next_page_token ?? '').toBe('');
    expect(await a.call('ListJobs', { page_token: 'garbage' })).toMatchObject({
      ok: false,
      code: status.INVALID_ARGUMENT,
    });
    // A token is bound to its listing's filters: asked with other labels or status, it is refused.
    for (const other of [{ labels: { team: 'other' } }, { status: 'JOB_STATUS_PAUSED' }]) {
      const refused = await a.call('ListJobs', { page_size: 1, page_token: first.next_page_token, ...other });
      expect(refused).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
      expect(refused.ok ? [] : refused.violations.map((v) => v.field)).toEqual(['page_token']);
    }
    expect(await a.call('ListJobs', { status: 'JOB_STATUS_PAUSED' })).toMatchObject({
      ok: true,
      res: { jobs: [] },
    });
  });

  it('UpdateJob: replaces masked fields under an etag; FAILED_PRECONDITION on a stale one; INVALID_ARGUMENT on a bad mask; NOT_FOUND across tenants', async () => {
    const updated = await a.ok('UpdateJob', {
      job: { job_id: 'acme-3', labels: { team: 'platform' } },
      update_mask: { paths: ['labels'] },
      etag: 'v1',
    });
    expect(updated).toMatchObject({ labels: { team: 'platform' }, version: 2, etag: 'v2' });

    const stale = await a.call('UpdateJob', {
      job: { job_id: 'acme-3', labels: { team: 'x' } },
      update_mask: { paths: ['labels'] },
      etag: 'v1',
    });
    expect(stale).toMatchObject({ ok: false, code: status.FAILED_PRECONDITION });
    expect((await jobRow('acme-3'))?.labels).toEqual({ team: 'platform' });

    const badMask = await a.call('UpdateJob', {
      job: { job_id: 'acme-3' },
      update_mask: { paths: ['tenant_id'] },
    });
    expect(badMask).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    expect(badMask.ok ? [] : badMask.violations.map((v) => v.field)).toEqual(['update_mask.paths[0]']);

    const at = new Date(Date.now() + 7_200_000);
    const moved = await a.ok('UpdateJob', {
      job: { job_id: 'acme-3', schedule: { once: { at: ts(at) } } },
      update_mask: { paths: ['schedule'] },
    });
    expect(dateOf(moved.next_run_at)?.toISOString()).toBe(at.toISOString());

    const across = await b.call('UpdateJob', {
      job: { job_id: 'acme-3', labels: { owned: 'by-globex' } },
      update_mask: { paths: ['labels'] },
    });
    expect(across).toMatchObject({ ok: false, code: status.NOT_FOUND });
    expect((await jobRow('acme-3'))?.labels).toEqual({ team: 'platform' });
  });

  it('PauseJob and ResumeJob: act on the store at once, idempotently; NOT_FOUND across tenants; FAILED_PRECONDITION for a completed job', async () => {
    const before = await a.ok('GetJob', { job_id: 'acme-1' });
    expect(await b.call('PauseJob', { job_id: 'acme-1' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });
    expect((await jobRow('acme-1'))?.status).toBe('SCHEDULED');

    expect(await a.ok('PauseJob', { job_id: 'acme-1' })).toMatchObject({ status: 'JOB_STATUS_PAUSED' });
    expect((await jobRow('acme-1'))?.status).toBe('PAUSED');
    expect(await a.ok('PauseJob', { job_id: 'acme-1' })).toMatchObject({ status: 'JOB_STATUS_PAUSED' });

    expect(await b.call('ResumeJob', { job_id: 'acme-1' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });
    expect((await jobRow('acme-1'))?.status).toBe('PAUSED');
    const resumed = await a.ok('ResumeJob', { job_id: 'acme-1' });
    expect(resumed).toMatchObject({ status: 'JOB_STATUS_SCHEDULED' });
    expect(resumed.next_run_at).toEqual(before.next_run_at);

    await admin.ok('CreateJob', { job: onceJob('acme-done', { tenant_id: 'acme' }) });
    await db.query(
      `UPDATE jobs SET status = 'COMPLETED', next_run_at = NULL, next_nominal_at = NULL WHERE job_id = 'acme-done'`,
    );
    expect(await a.call('ResumeJob', { job_id: 'acme-done' })).toMatchObject({
      ok: false,
      code: status.FAILED_PRECONDITION,
    });
    expect(await a.call('PauseJob', { job_id: 'acme-done' })).toMatchObject({
      ok: false,
      code: status.FAILED_PRECONDITION,
    });
  });

  it('TriggerJob: puts a MANUAL fire with a new fence token in the outbox; NOT_FOUND across tenants', async () => {
    expect(await b.call('TriggerJob', { job_id: 'acme-1' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });
    expect((await db.query(`SELECT 1 FROM fires WHERE job_id = 'acme-1'`)).rowCount).toBe(0);

    const fire = await a.ok('TriggerJob', { job_id: 'acme-1' });
    expect(fire).toMatchObject({ fire_id: 'acme-1:1', fence_token: 1 });
    const rows = await db.query<{
      trigger: string;
      enqueued_at: Date | null;
      event: { fence_token: number; attempt: number; payload: unknown };
    }>(`SELECT trigger, enqueued_at, event FROM fire_log WHERE job_id = 'acme-1'`);
    expect(rows.rows).toEqual([
      {
        trigger: 'MANUAL',
        enqueued_at: null,
        event: expect.objectContaining({ fence_token: 1, attempt: 1, payload: { n: 1 } }),
      },
    ]);
    expect((await jobRow('acme-1'))?.fence_token).toBe('1');
    const again = await a.ok('TriggerJob', { job_id: 'acme-1' });
    expect(again.fence_token).toBe(2);
  });

  it('ListRuns, GetRun, ListOccurrences: newest first, paged; NOT_FOUND across tenants', async () => {
    // The executor's ledger rows for the two manual fires, as it writes them.
    await db.query(
      `INSERT INTO job_runs (job_id, fence_token, tenant_id, fire_id, nominal_time, scheduled_for, attempt, status, started_at, finished_at, http_status)
       SELECT 'acme-1', f.fence_token, 'acme', 'acme-1:' || f.fence_token, f.nominal_time, f.scheduled_for, 1, 'SUCCEEDED', now(), now(), 200
         FROM fires f WHERE f.job_id = 'acme-1'`,
    );
    await db.query(
      `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences)
       VALUES ('acme-1', 'acme', 'MISFIRE_SKIP', '2020-01-01T00:00:00Z', '2020-01-01T00:05:00Z', 6)`,
    );

    // A run shows its fire's trace id (the fire log's trace_context), and none for an untraced fire.
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    await db.query(
      `UPDATE fires SET trace_context = CASE fence_token WHEN 2 THEN $1::jsonb END WHERE job_id = 'acme-1'`,
      [JSON.stringify({ traceparent: `00-${traceId}-b7ad6b7169203331-01` })],
    );
    const page1 = await a.ok('ListRuns', { job_id: 'acme-1', page_size: 1 });
    expect((page1.runs as Msg[]).map((r) => [r.fence_token, r.trace_id])).toEqual([[2, traceId]]);
    const page2 = await a.ok('ListRuns', {
      job_id: 'acme-1',
      page_size: 1,
      page_token: page1.next_page_token,
    });
    // (proto3: the empty trace_id is not on the wire; this client leaves defaults out.)
    expect(
      (page2.runs as Msg[]).map((r) => [r.fence_token, r.status, r.http_status, r.trace_id ?? '']),
    ).toEqual([[1, 'RUN_STATUS_SUCCEEDED', 200, '']]);
    expect(await b.call('ListRuns', { job_id: 'acme-1' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });

    expect(await a.ok('GetRun', { job_id: 'acme-1', fence_token: 1 })).toMatchObject({
      fire_id: 'acme-1:1',
      status: 'RUN_STATUS_SUCCEEDED',
    });
    expect(await a.call('GetRun', { job_id: 'acme-1', fence_token: 99 })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });
    expect(await b.call('GetRun', { job_id: 'acme-1', fence_token: 1 })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });

    const occ = (await a.ok('ListOccurrences', { job_id: 'acme-1' })).occurrences as Msg[];
    expect(occ.map((o) => [o.outcome, o.fence_token ?? null, o.reason ?? null, o.occurrences])).toEqual([
      ['OCCURRENCE_OUTCOME_FIRED', 2, null, 1],
      ['OCCURRENCE_OUTCOME_FIRED', 1, null, 1],
      ['OCCURRENCE_OUTCOME_SKIPPED', null, 'MISFIRE_SKIP', 6],
    ]);
    expect(occ[0]).toMatchObject({ trigger: 'FIRE_TRIGGER_MANUAL', run_status: 'RUN_STATUS_SUCCEEDED' });
    const paged = await a.ok('ListOccurrences', { job_id: 'acme-1', page_size: 2 });
    const rest = await a.ok('ListOccurrences', {
      job_id: 'acme-1',
      page_size: 2,
      page_token: paged.next_page_token,
    });
    expect((rest.occurrences as Msg[]).map((o) => o.reason)).toEqual(['MISFIRE_SKIP']);
    expect(await b.call('ListOccurrences', { job_id: 'acme-1' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });
  });

  it('ListDeadLetters and ReplayDeadLetter: tenant-scoped; a replay is a new REPLAY fire at attempt 1, once', async () => {
    await db.query(
      `UPDATE job_runs SET status = 'DEAD_LETTERED', attempt = 5, http_status = 500, error = 'HTTP 500' WHERE job_id = 'acme-1' AND fence_token = 1`,
    );

    const mine = (await a.ok('ListDeadLetters', {})).dead_letters as Msg[];
    expect(mine.map((d) => [d.fire_id, d.attempt, d.http_status])).toEqual([['acme-1:1', 5, 500]]);
    expect((await b.ok('ListDeadLetters', {})).dead_letters).toEqual([]);
    expect(await b.call('ListDeadLetters', { tenant_id: 'acme' })).toMatchObject({
      ok: false,
      code: status.PERMISSION_DENIED,
    });
    expect(((await admin.ok('ListDeadLetters', { tenant_id: 'acme' })).dead_letters as Msg[]).length).toBe(1);

    expect(await b.call('ReplayDeadLetter', { fire_id: 'acme-1:1' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });
    expect(await a.call('ReplayDeadLetter', { fire_id: 'not-a-fire-id' })).toMatchObject({
      ok: false,
      code: status.INVALID_ARGUMENT,
    });
    expect(await a.call('ReplayDeadLetter', { fire_id: 'acme-1:2' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });

    const replay = await a.ok('ReplayDeadLetter', { fire_id: 'acme-1:1' });
    expect(replay).toMatchObject({ fire_id: 'acme-1:3', fence_token: 3 });
    const row = await db.query<{
      trigger: string;
      nominal_time: Date;
      event: { attempt: number; fence_token: number };
    }>(`SELECT trigger, nominal_time, event FROM fires WHERE job_id = 'acme-1' AND fence_token = 3`);
    const original = await db.query<{ nominal_time: Date }>(
      `SELECT nominal_time FROM fires WHERE job_id = 'acme-1' AND fence_token = 1`,
    );
    expect(row.rows[0]).toMatchObject({
      trigger: 'REPLAY',
      event: expect.objectContaining({ attempt: 1, fence_token: 3 }),
    });
    expect(row.rows[0]!.nominal_time.toISOString()).toBe(original.rows[0]!.nominal_time.toISOString());

    expect(await a.call('ReplayDeadLetter', { fire_id: 'acme-1:1' })).toMatchObject({
      ok: false,
      code: status.FAILED_PRECONDITION,
    });
    expect(((await a.ok('ListDeadLetters', {})).dead_letters as Msg[])[0]).toMatchObject({
      replay_fire_id: 'acme-1:3',
    });
  });

  it('DeleteJob: guarded by etag, NOT_FOUND across tenants; a re-created id continues the fence tokens', async () => {
    expect(await b.call('DeleteJob', { job_id: 'acme-1' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });
    expect(await a.call('DeleteJob', { job_id: 'acme-1', etag: 'v1' })).toMatchObject({
      ok: false,
      code: status.FAILED_PRECONDITION,
    });
    expect(await jobRow('acme-1')).toBeDefined();

    const current = await a.ok('GetJob', { job_id: 'acme-1' });
    expect(await a.call('DeleteJob', { job_id: 'acme-1', etag: current.etag })).toMatchObject({ ok: true });
    expect(await a.call('GetJob', { job_id: 'acme-1' })).toMatchObject({ ok: false, code: status.NOT_FOUND });
    expect(await a.call('DeleteJob', { job_id: 'acme-1' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });

    await a.ok('CreateJob', { job: onceJob('acme-1') });
    expect(await a.ok('TriggerJob', { job_id: 'acme-1' })).toMatchObject({ fence_token: 4 });
  });

  it('PreviewSchedule: the next fire times with their local time across a DST change; INVALID_ARGUMENT names the field', async () => {
    const res = await a.ok('PreviewSchedule', {
      schedule: { cron: { expression: '30 1 * * *', time_zone: 'Europe/London' } },
      count: 3,
      from: ts(new Date('2026-03-28T00:00:00Z')),
    });
    const fires = res.fires as Msg[];
    expect(fires.map((f) => [dateOf(f.at)?.toISOString(), f.local_time])).toEqual([
      ['2026-03-28T01:30:00.000Z', '2026-03-28T01:30:00+00:00'],
      ['2026-03-29T01:30:00.000Z', '2026-03-29T02:30:00+01:00'],
      ['2026-03-30T00:30:00.000Z', '2026-03-30T01:30:00+01:00'],
    ]);
    expect(
      ((await a.ok('PreviewSchedule', { schedule: { interval: { every_ms: 60_000 } } })).fires as Msg[])
        .length,
    ).toBe(10);
    const bad = await a.call('PreviewSchedule', {
      schedule: { cron: { expression: '0 9 * * *', time_zone: 'Nowhere/Land' } },
      count: 5000,
    });
    expect(bad).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    expect(bad.ok ? [] : bad.violations.map((v) => v.field).sort()).toEqual([
      'count',
      'schedule.cron.time_zone',
    ]);
    expect(await a.call('PreviewSchedule', {})).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
  });

  it('refuses an instant outside 1970..9999 (the year-0 poison of issue 24) on create, update and preview, naming the field', async () => {
    const year0 = { seconds: -62167219200, nanos: 0 };
    const created = await a.call('CreateJob', {
      job: { ...onceJob('acme-year0'), schedule: { once: { at: year0 } } },
    });
    expect(created).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    expect(created.ok ? [] : created.violations).toEqual([
      {
        field: 'job.schedule.once.at',
        message: expect.stringMatching(
          /within 1970-01-01T00:00:00Z to 9999-12-31T23:59:59\.999Z; got 0000-01-01/,
        ),
      },
    ]);
    expect(await jobRow('acme-year0')).toBeUndefined();
    // Beyond what a JavaScript date holds, and past 9999 by an interval's end.
    const huge = await a.call('CreateJob', {
      job: { ...onceJob('acme-huge'), schedule: { once: { at: { seconds: 1e15, nanos: 0 } } } },
    });
    expect(huge.ok ? [] : huge.violations.map((v) => v.field)).toEqual(['job.schedule.once.at']);
    const late = await a.call('CreateJob', {
      job: {
        ...onceJob('acme-late'),
        schedule: { interval: { every_ms: 60_000, end_at: { seconds: 253402300800, nanos: 0 } } },
      },
    });
    expect(late.ok ? [] : late.violations.map((v) => v.field)).toEqual(['job.schedule.interval.end_at']);

    await a.ok('CreateJob', { job: onceJob('acme-moved') });
    const moved = await a.call('UpdateJob', {
      job: { job_id: 'acme-moved', schedule: { once: { at: year0 } } },
      update_mask: { paths: ['schedule'] },
    });
    expect(moved.ok ? [] : moved.violations.map((v) => v.field)).toEqual(['job.schedule.once.at']);

    const preview = await a.call('PreviewSchedule', {
      schedule: { interval: { every_ms: 60_000 } },
      from: year0,
    });
    expect(preview.ok ? [] : preview.violations.map((v) => v.field)).toEqual(['from']);
  });

  it('honours deadlines: a CreateJob that arrives after its deadline is refused and stores nothing', async () => {
    const proto = new Root();
    proto.resolvePath = (_o, t) => resolve(__dirname, '..', '..', 'schemas', 'proto', t);
    proto.loadSync('tickwork/admin/v1/admin.proto', { keepCase: true });
    const Req = proto.lookupType('tickwork.admin.v1.CreateJobRequest');
    const body = Buffer.from(
      Req.encode(
        Req.fromObject({
          job: {
            job_id: 'acme-late',
            schedule: { once: { at: ts(inAnHour()) } },
            target: { webhook: { url: 'https://example.com/x' } },
          },
        }),
      ).finish(),
    );
    const frame = Buffer.concat([Buffer.from([0]), Buffer.from(new Uint32Array([0]).buffer), body]);
    frame.writeUInt32BE(body.length, 1);
    const session = http2Connect(`http://${grpcAddress}`);
    const grpcStatus = await new Promise<string | undefined>((done, fail) => {
      const req = session.request({
        ':method': 'POST',
        ':path': '/tickwork.admin.v1.SchedulerAdmin/CreateJob',
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': '1n',
        authorization: `Bearer ${TOKENS.a}`,
      });
      let seen: string | undefined;
      req.on('response', (h) => (seen = (h['grpc-status'] as string | undefined) ?? seen));
      req.on('trailers', (h) => (seen = (h['grpc-status'] as string | undefined) ?? seen));
      req.on('error', fail);
      req.on('close', () => done(seen));
      req.on('data', () => undefined);
      req.end(frame);
    });
    session.close();
    expect(Number(grpcStatus)).toBe(status.DEADLINE_EXCEEDED);
    expect(await jobRow('acme-late')).toBeUndefined();
    // An ordinary call with a generous deadline still works.
    expect(await a.call('GetJob', { job_id: 'acme-3' }, { deadlineMs: 5_000 })).toMatchObject({ ok: true });
  });

  it('records an audit event for every mutating call: who, what, when, how it ended', async () => {
    const events = await db.query<{
      actor: string;
      role: string;
      via: string;
      action: string;
      tenant_id: string | null;
      job_id: string;
      outcome: string;
      at: Date;
    }>(
      `SELECT actor, role, via, action, tenant_id, job_id, outcome, at FROM audit_events WHERE job_id IN ('acme-1', 'acme-3') ORDER BY id`,
    );
    const summary = events.rows.map((e) => `${e.actor} ${e.action} ${e.job_id} ${e.outcome}`);
    expect(summary).toEqual(
      expect.arrayContaining([
        'acme-user CreateJob acme-1 OK',
        'acme-user CreateJob acme-1 ALREADY_EXISTS',
        'acme-user UpdateJob acme-3 OK',
        'acme-user UpdateJob acme-3 FAILED_PRECONDITION',
        'globex-user UpdateJob acme-3 NOT_FOUND',
        'globex-user PauseJob acme-1 NOT_FOUND',
        'acme-user PauseJob acme-1 OK',
        'acme-user ResumeJob acme-1 OK',
        'acme-user TriggerJob acme-1 OK',
        'acme-user ReplayDeadLetter acme-1 OK',
        'acme-user DeleteJob acme-1 OK',
      ]),
    );
    expect(events.rows.every((e) => e.via === 'grpc' && e.at instanceof Date)).toBe(true);
    const quota = await db.query(
      `SELECT 1 FROM audit_events WHERE actor = 'quota-user' AND action = 'CreateJob' AND outcome = 'RESOURCE_EXHAUSTED'`,
    );
    expect(quota.rowCount).toBe(1);
  });

  it('serves reflection: a client with no .proto files lists the services and calls the API from reflected descriptors', async () => {
    const reflectionDef = loadSync('grpc/reflection/v1alpha/reflection.proto', {
      ...LOADER,
      includeDirs: [resolve(__dirname, '..', '..', 'schemas', 'proto')],
    });
    const reflectionPkg = loadPackageDefinition(reflectionDef) as unknown as {
      grpc: {
        reflection: {
          v1alpha: {
            ServerReflection: new (
              a: string,
              c: unknown,
            ) => Client & { ServerReflectionInfo(): NodeJS.ReadWriteStream };
          };
        };
      };
    };
    const reflection = new reflectionPkg.grpc.reflection.v1alpha.ServerReflection(
      grpcAddress,
      credentials.createInsecure(),
    );
    const ask = (request: Msg) =>
      new Promise<Msg>((done, fail) => {
        const stream = reflection.ServerReflectionInfo() as unknown as {
          on(e: string, f: (x: unknown) => void): void;
          write(m: Msg): void;
          end(): void;
        };
        stream.on('data', (m) => done(m as Msg));
        stream.on('error', (e) => fail(e as Error));
        stream.write(request);
        stream.end();
      });

    const listed = await ask({ list_services: '' });
    const names = ((listed.list_services_response as Msg).service as Msg[]).map((s) => s.name);
    expect(names).toEqual(
      expect.arrayContaining(['tickwork.admin.v1.SchedulerAdmin', 'grpc.health.v1.Health']),
    );

    const files = await ask({ file_containing_symbol: 'tickwork.admin.v1.SchedulerAdmin' });
    const protos = ((files.file_descriptor_response as Msg).file_descriptor_proto as Buffer[]).map((b) =>
      Buffer.from(b),
    );
    // A FileDescriptorSet is `repeated FileDescriptorProto file = 1`: concatenate the entries.
    const set = Buffer.concat(protos.flatMap((p) => [Buffer.from([0x0a]), varint(p.length), p]));
    const reflected = loadPackageDefinition(loadFileDescriptorSetFromBuffer(set, LOADER)) as unknown as {
      tickwork: {
        admin: {
          v1: {
            SchedulerAdmin: new (
              a: string,
              c: unknown,
            ) => Client &
              Record<string, (r: Msg, m: Metadata, cb: (e: Error | null, r: Msg) => void) => void>;
          };
        };
      };
    };
    const dynamic = new reflected.tickwork.admin.v1.SchedulerAdmin(grpcAddress, credentials.createInsecure());
    const md = new Metadata();
    md.set('authorization', `Bearer ${TOKENS.a}`);
    const got = await new Promise<Msg>((done, fail) =>
      dynamic.GetJob!({ job_id: 'acme-3' }, md, (e, r) => (e ? fail(e) : done(r))),
    );
    expect(got).toMatchObject({ job_id: 'acme-3', tenant_id: 'acme' });
    // protobufjs, building types from a descriptor set, gives map fields as their repeated entries.
    expect(got.labels).toEqual([{ key: 'team', value: 'platform' }]);
    dynamic.close();
    reflection.close();
  });

  it('streams health over Watch: SERVING, NOT_SERVING while PostgreSQL refuses it, SERVING again', async () => {
    const watch = a.watch('');
    const url = new URL(iso.databaseUrl);
    const database = url.pathname.slice(1);
    url.pathname = '/postgres';
    const server = new Pg({ connectionString: url.toString() });
    await server.connect();
    const mine = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    try {
      await eventually(
        'the first status',
        async () => (watch.statuses[0] === 'SERVING' ? true : undefined),
        10_000,
      );
      // The API's connections are cut and new ones refused; the test's own connection stays.
      await server.query(`ALTER DATABASE "${database}" WITH ALLOW_CONNECTIONS false`);
      await server.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> $2',
        [database, mine],
      );
      await eventually(
        'NOT_SERVING streamed',
        async () => (watch.statuses.includes('NOT_SERVING') ? true : undefined),
        20_000,
      );
      await server.query(`ALTER DATABASE "${database}" WITH ALLOW_CONNECTIONS true`);
      await eventually(
        'SERVING streamed again',
        async () => (watch.statuses.length >= 3 && watch.statuses.at(-1) === 'SERVING' ? true : undefined),
        20_000,
      );
      // Only changes are streamed: no status twice in a row.
      expect(watch.statuses.filter((s, i) => i > 0 && s === watch.statuses[i - 1])).toEqual([]);
      expect(watch.errors).toEqual([]);
    } finally {
      await server.query(`ALTER DATABASE "${database}" WITH ALLOW_CONNECTIONS true`);
      await server.end();
      watch.stop();
    }
  });

  it('WhoAmI names the caller; GetCluster is for admins; GetLateness is tenant-scoped', async () => {
    expect(await a.ok('WhoAmI', {})).toMatchObject({
      actor: 'acme-user',
      role: 'tenant',
      tenant_id: 'acme',
      auth: 'required',
    });
    const me = await admin.ok('WhoAmI', {});
    expect(me).toMatchObject({ role: 'admin', auth: 'required' });
    expect(me.known_tenants).toEqual(expect.arrayContaining(['acme', 'globex']));

    expect(await a.call('GetCluster', {})).toMatchObject({ ok: false, code: status.PERMISSION_DENIED });
    const cluster = await admin.ok('GetCluster', {});
    expect((cluster.shards as Msg[]).map((s) => s.shard ?? 0)).toEqual([0, 1, 2, 3]);
    expect((cluster.consumer_lag as Msg[]).map((l) => l.group)).toHaveLength(2);

    const late = await a.ok('GetLateness', { window: 'day' });
    expect(late.window).toBe('day');
    expect(late.buckets as Msg[]).toHaveLength(24);
    expect(await a.call('GetLateness', { window: 'week' })).toMatchObject({
      ok: false,
      code: status.INVALID_ARGUMENT,
    });
    expect(await a.call('GetLateness', { tenant_id: 'globex' })).toMatchObject({
      ok: false,
      code: status.PERMISSION_DENIED,
    });
    expect(await b.call('GetLateness', { job_id: 'acme-1' })).toMatchObject({
      ok: false,
      code: status.NOT_FOUND,
    });
  });

  it('keeps working after all of the above (no leaked state in the server)', async () => {
    await eventually('a healthy server', async () => ((await a.check('')).ok ? true : undefined), 5_000);
  });
});

function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n > 0x7f) {
    bytes.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  bytes.push(n);
  return Buffer.from(bytes);
}
