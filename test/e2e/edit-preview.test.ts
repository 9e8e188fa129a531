/**
 * Edit impact preview, against real api, scheduler (with a lookahead) and executor processes: a dry-run
 * update (REST PATCH ?dry_run=true, gRPC UpdateJob dry_run) changes nothing, lists the occurrences that
 * appear and disappear, reports catch-up and coalescing as the scheduler's planner decides them, and the
 * fires already claimed ahead; after a real edit those still go out under the old definition, and every
 * run and ledger entry records the job version it ran under. Every REST response is checked against the
 * served OpenAPI document.
 */
import { status } from '@grpc/grpc-js';
import { Client } from 'pg';
import { AdminTestClient, type Msg } from '../support/admin-client';
import { type AppProcess, startPipeline } from '../support/apps';
import { eventually, freePort, isolate, type Isolation } from '../support/env';
import { contractFetch } from '../support/openapi';
import { WebhookReceiver } from '../support/receiver';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const LOOKAHEAD_MS = 10_000;

describe('edit impact preview', () => {
  let iso: Isolation;
  let receiver: WebhookReceiver;
  let apps: AppProcess[] = [];
  let api: AppProcess;
  let db: Client;
  let grpc: AdminTestClient;
  let apiFetch: typeof fetch;

  const http = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await apiFetch(`${api.url}${path}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as Json };
  };
  /** What a dry run must leave alone: the job row and the audit log. */
  const footprint = async (jobId: string) => {
    const job = await db.query(
      'SELECT version, updated_at, schedule, policies, payload FROM jobs WHERE job_id = $1',
      [jobId],
    );
    const audit = await db.query<{ n: string }>('SELECT count(*) AS n FROM audit_events');
    return { job: job.rows[0], audit: Number(audit.rows[0]!.n) };
  };
  const yearly = (expression: string, jobId: string) => ({
    job_id: jobId,
    schedule: { kind: 'cron', expression, time_zone: 'UTC' },
    target: { type: 'webhook', url: 'https://example.com/hook' },
  });
  const times = (list: Json[]) => list.map((o) => o.nominal_time as string);

  beforeAll(async () => {
    iso = isolate('editpreview');
    receiver = await new WebhookReceiver().start();
    const grpcPort = await freePort();
    const env = iso.env({
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      TICKWORK_TICK_MS: '100',
      TICKWORK_LOOKAHEAD_MS: String(LOOKAHEAD_MS),
      TICKWORK_GRPC_PORT: String(grpcPort),
    });
    const pipeline = await startPipeline(env);
    api = pipeline.api;
    apps = pipeline.all;
    apiFetch = await contractFetch(api.url);
    db = new Client({ connectionString: iso.databaseUrl });
    await db.connect();
    grpc = new AdminTestClient(`127.0.0.1:${grpcPort}`);
  }, 180_000);

  afterAll(async () => {
    grpc?.close();
    await Promise.all(apps.map((a) => a.stop()));
    await db?.end();
    await receiver?.stop();
    await iso?.dispose();
  });

  it('REST: a dry run changes nothing and lists the occurrences that appear and disappear', async () => {
    // Yearly schedules: nothing is due or claimed ahead while the test runs.
    expect((await http('POST', '/v1/jobs', yearly('0 0 1 1 *', 'ep-rest'))).status).toBe(201);
    const before = await footprint('ep-rest');

    const add = await http('PATCH', '/v1/jobs/ep-rest?dry_run=true&dry_run_count=3', {
      schedule: { kind: 'cron', expression: '0 0 1 1,7 *', time_zone: 'UTC' },
    });
    expect(add.status).toBe(200);
    // No job etag: nothing was stored (express may add a weak etag of the body).
    expect(add.headers.get('etag') ?? '').not.toMatch(/^"v\d+"$/);
    // The job as the edit would leave it, at the version it would get.
    expect(add.body).toMatchObject({
      job_id: 'ep-rest',
      version: 2,
      schedule: { expression: '0 0 1 1,7 *' },
    });
    const p = add.body.edit_preview as Json;
    expect(p).toMatchObject({ current_version: 1, count: 3, replanned: true, claimed_ahead: [] });
    expect(p.before.occurrences).toHaveLength(3);
    expect(p.after.occurrences).toHaveLength(3);
    expect(times(p.before.occurrences).every((t) => /-01-01T00:00:00\.000Z$/.test(t))).toBe(true);
    expect(p.appearing.length).toBeGreaterThanOrEqual(1);
    expect(times(p.appearing).every((t) => /-07-01T00:00:00\.000Z$/.test(t))).toBe(true);
    expect(p.disappearing).toEqual([]);
    expect(p.before.due).toEqual({
      due: false,
      on_resume: false,
      catch_up_fires: 0,
      coalesced: 0,
      skipped: [],
    });

    const swap = await http('PATCH', '/v1/jobs/ep-rest?dry_run=true', {
      schedule: { kind: 'cron', expression: '0 0 1 7 *', time_zone: 'UTC' },
    });
    expect(swap.status).toBe(200);
    const q = swap.body.edit_preview as Json;
    expect(q.count).toBe(10);
    expect(q.before.occurrences).toHaveLength(10);
    expect(q.disappearing.length).toBeGreaterThanOrEqual(9);
    expect(times(q.disappearing).every((t) => /-01-01T/.test(t))).toBe(true);
    expect(times(q.appearing).every((t) => /-07-01T/.test(t))).toBe(true);
    expect(q.appearing.length).toBeGreaterThanOrEqual(9);

    // A label-only edit: the same occurrences, the cursor kept.
    const labels = await http('PATCH', '/v1/jobs/ep-rest?dry_run=true', { labels: { team: 'x' } });
    expect(labels.body.edit_preview).toMatchObject({
      replanned: false,
      appearing: [],
      disappearing: [],
      moved: [],
    });
    expect(labels.body.labels).toEqual({ team: 'x' });

    // Nothing was written: not the job, not an audit row.
    expect(await footprint('ep-rest')).toEqual(before);
    const stored = await http('GET', '/v1/jobs/ep-rest');
    expect(stored.body).toMatchObject({ version: 1, labels: {}, schedule: { expression: '0 0 1 1 *' } });
  });

  it('REST: a bad dry run is 400 naming the field, and is not audited', async () => {
    expect((await http('POST', '/v1/jobs', yearly('0 0 1 1 *', 'ep-bad'))).status).toBe(201);
    const before = await footprint('ep-bad');
    const field = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const r = await http('PATCH', path, body, headers);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('INVALID_ARGUMENT');
      return (r.body.violations as Json[]).map((v) => v.field);
    };
    const schedule = { schedule: { kind: 'cron', expression: '0 0 1 1 *', time_zone: 'UTC' } };
    expect(await field('/v1/jobs/ep-bad?dry_run=true&dry_run_count=0', schedule)).toEqual(['dry_run_count']);
    expect(await field('/v1/jobs/ep-bad?dry_run=true&dry_run_count=101', schedule)).toEqual([
      'dry_run_count',
    ]);
    expect(await field('/v1/jobs/ep-bad?dry_run=yes', schedule)).toEqual(['dry_run']);
    expect(
      await field('/v1/jobs/ep-bad?dry_run=true', {
        schedule: { kind: 'cron', expression: '0 0 32 1 *', time_zone: 'UTC' },
      }),
    ).toEqual(['schedule.expression']);
    expect(await field('/v1/jobs/ep-bad?dry_run=true', { job_id: 'other' })).toEqual(['job_id']);
    expect(await field('/v1/jobs/ep-bad?dry_run=true', schedule, { 'if-match': 'nonsense' })).toEqual([
      'etag',
    ]);
    // dry_run_count without dry_run is refused too (it would silently do a real update).
    expect(await field('/v1/jobs/ep-bad?dry_run_count=5', schedule)).toEqual(['dry_run_count']);
    expect(
      (await http('PATCH', '/v1/jobs/ep-bad?dry_run=true', schedule, { 'if-match': '"v7"' })).status,
    ).toBe(412);
    expect((await http('PATCH', '/v1/jobs/ep-missing?dry_run=true', schedule)).status).toBe(404);
    const after = await footprint('ep-bad');
    expect(after.job).toEqual(before.job);
    // Only the refused real update (dry_run_count without dry_run) left an audit row.
    expect(after.audit).toBe(before.audit + 1);
  });

  it('REST: reports the catch-up and coalescing the scheduler would do, and none once the schedule changes', async () => {
    expect(
      (
        await http('POST', '/v1/jobs', {
          job_id: 'ep-due',
          schedule: { kind: 'cron', expression: '0 * * * *', time_zone: 'UTC' },
          target: { type: 'webhook', url: 'https://example.com/hook' },
          policies: { misfire: 'FIRE_ONCE' },
        })
      ).status,
    ).toBe(201);
    expect((await http('POST', '/v1/jobs/ep-due/pause')).status).toBe(200);
    // As if it had been paused for three hours: its next occurrence is long due.
    await db.query(
      `UPDATE jobs SET next_nominal_at = date_trunc('hour', now()) - interval '3 hours',
                       next_run_at = date_trunc('hour', now()) - interval '3 hours' WHERE job_id = 'ep-due'`,
    );
    const skip = await http('PATCH', '/v1/jobs/ep-due?dry_run=true', { policies: { misfire: 'SKIP' } });
    expect(skip.status).toBe(200);
    const p = skip.body.edit_preview as Json;
    expect(p.replanned).toBe(false);
    expect(p.before.status).toBe('PAUSED');
    // FIRE_ONCE: one late fire stands for the missed ones (at least 3 of them, hourly for 3 hours).
    expect(p.before.due).toMatchObject({ due: true, on_resume: true, catch_up_fires: 1 });
    expect(p.before.due.coalesced).toBeGreaterThanOrEqual(2);
    expect(p.before.due.skipped.map((s: Json) => s.reason)).toEqual(['COALESCED']);
    expect(p.before.occurrences[0]).toMatchObject({ catch_up: true });
    // SKIP: none of them fires.
    expect(p.after.due).toMatchObject({ due: true, catch_up_fires: 0, coalesced: 0 });
    expect(p.after.due.skipped.map((s: Json) => s.reason)).toEqual(['MISFIRE_SKIP']);
    expect(p.after.due.skipped[0].occurrences).toBeGreaterThanOrEqual(3);
    expect(p.disappearing.some((o: Json) => o.catch_up)).toBe(true);

    const moved = await http('PATCH', '/v1/jobs/ep-due?dry_run=true', {
      schedule: { kind: 'cron', expression: '30 * * * *', time_zone: 'UTC' },
    });
    expect(moved.body.edit_preview).toMatchObject({
      replanned: true,
      after: { status: 'PAUSED', due: { due: false } },
    });
    expect(moved.body.edit_preview.after.occurrences.some((o: Json) => o.catch_up)).toBe(false);
  });

  it('gRPC: UpdateJob dry_run answers with the edit_preview and stores nothing; a bad one names the field', async () => {
    await grpc.ok('CreateJob', {
      job: {
        job_id: 'ep-grpc',
        schedule: { cron: { expression: '0 0 1 1 *', time_zone: 'UTC' } },
        target: { webhook: { url: 'https://example.com/hook' } },
      },
    });
    const before = await footprint('ep-grpc');
    const res = await grpc.ok('UpdateJob', {
      job: { job_id: 'ep-grpc', schedule: { cron: { expression: '0 0 1 7 *', time_zone: 'UTC' } } },
      update_mask: { paths: ['schedule'] },
      dry_run: true,
      dry_run_count: 2,
    });
    const p = res.edit_preview as Msg & Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(res).toMatchObject({ job_id: 'ep-grpc', version: 2 });
    expect(p).toMatchObject({ current_version: 1, count: 2, replanned: true });
    expect(p.before.occurrences).toHaveLength(2);
    expect(p.appearing.length).toBeGreaterThanOrEqual(1);
    expect(p.disappearing.length).toBeGreaterThanOrEqual(1);
    expect(await footprint('ep-grpc')).toEqual(before);

    const bad = await grpc.call('UpdateJob', {
      job: { job_id: 'ep-grpc', schedule: { cron: { expression: '0 0 1 1 *', time_zone: 'UTC' } } },
      update_mask: { paths: ['schedule'] },
      dry_run: true,
      dry_run_count: 101,
    });
    expect(bad).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    expect(bad.ok ? [] : bad.violations.map((v) => v.field)).toEqual(['dry_run_count']);
    const badSchedule = await grpc.call('UpdateJob', {
      job: { job_id: 'ep-grpc', schedule: { cron: { expression: 'nope', time_zone: 'UTC' } } },
      update_mask: { paths: ['schedule'] },
      dry_run: true,
    });
    expect(badSchedule.ok ? [] : badSchedule.violations.map((v) => v.field)).toEqual([
      'job.schedule.cron.expression',
    ]);
    expect(await footprint('ep-grpc')).toEqual(before);
  });

  it('claimed-ahead fires are reported, still go out under the old definition, and every run records its version', async () => {
    const created = await http('POST', '/v1/jobs', {
      job_id: 'ep-ahead',
      schedule: { kind: 'interval', every_ms: 3_000 },
      target: { type: 'webhook', url: receiver.url('/ahead') },
      payload: { v: 1 },
    });
    expect(created.status).toBe(201);
    // The scheduler claims the occurrences due within its lookahead at once.
    const dry = await eventually(
      'fires claimed ahead',
      async () => {
        const r = await http('PATCH', '/v1/jobs/ep-ahead?dry_run=true', { payload: { v: 2 } });
        return (r.body.edit_preview?.claimed_ahead?.length ?? 0) >= 2 ? r.body : undefined;
      },
      30_000,
      250,
    );
    const ahead = dry.edit_preview.claimed_ahead as Json[];
    for (const c of ahead) expect(c).toMatchObject({ job_version: 1, in_new_schedule: true });
    expect(dry.edit_preview).toMatchObject({ replanned: false, appearing: [], disappearing: [] });
    expect(dry.edit_preview.after.occurrences.filter((o: Json) => o.claimed).length).toBeGreaterThanOrEqual(
      1,
    );

    // The same over gRPC, and a schedule change the claimed fires are not part of.
    const g = await grpc.ok('UpdateJob', {
      job: { job_id: 'ep-ahead', schedule: { interval: { every_ms: 3_600_000 } } },
      update_mask: { paths: ['schedule'] },
      dry_run: true,
    });
    const gAhead = (g.edit_preview as Json).claimed_ahead as Json[];
    expect(gAhead.length).toBeGreaterThanOrEqual(1);
    for (const c of gAhead) expect(c.job_version).toBe(1);

    // The real edit. What was claimed before it goes out with payload v1, recorded as version 1.
    const edited = await http('PATCH', '/v1/jobs/ep-ahead', { payload: { v: 2 } }, { 'if-match': '"v1"' });
    expect(edited.status).toBe(200);
    expect(edited.body.version).toBe(2);
    const claimedTokens = new Set<number>(ahead.map((c) => c.fence_token as number));
    const lastClaimed = Math.max(...claimedTokens);
    const runs = await eventually(
      'a run under version 2 after the claimed-ahead ones',
      async () => {
        const r = await http('GET', '/v1/jobs/ep-ahead/runs?page_size=100');
        const list = (r.body.runs ?? []) as Json[];
        const done = list.filter((x) => x.status === 'SUCCEEDED');
        return [...claimedTokens].every((t) => done.some((x) => x.fence_token === t)) &&
          done.some((x) => x.fence_token > lastClaimed && x.job_version === 2)
          ? list
          : undefined;
      },
      45_000,
      250,
    );
    await http('POST', '/v1/jobs/ep-ahead/pause');
    const bodyOf = new Map(
      receiver.calls
        .filter((c) => c.path === '/ahead')
        .map((c) => [Number(c.headers['tickwork-fence-token']), JSON.parse(c.body) as Json]),
    );
    for (const t of claimedTokens) expect(bodyOf.get(t)).toEqual({ v: 1 });
    // Every run's recorded version is the one whose payload it delivered.
    for (const r of runs.filter((x) => x.status === 'SUCCEEDED'))
      expect(r.job_version).toBe(bodyOf.get(r.fence_token as number)?.v);
    expect(runs.some((r) => r.job_version === 1)).toBe(true);
    expect(runs.some((r) => r.job_version === 2)).toBe(true);

    // The occurrence ledger and one run show it too, and so does gRPC.
    const occ = await http('GET', '/v1/jobs/ep-ahead/occurrences?page_size=100');
    const fired = (occ.body.occurrences as Json[]).filter((o) => o.outcome === 'FIRED');
    for (const o of fired) if (claimedTokens.has(o.fence_token)) expect(o.job_version).toBe(1);
    expect(fired.some((o) => o.job_version === 2)).toBe(true);
    const one = await http('GET', `/v1/jobs/ep-ahead/runs/${lastClaimed}`);
    expect(one.body.job_version).toBe(1);
    const gRuns = await grpc.ok('ListRuns', { job_id: 'ep-ahead', page_size: 100 });
    const gByToken = new Map(
      ((gRuns.runs ?? []) as Json[]).map((r) => [r.fence_token as number, r.job_version]),
    );
    expect(gByToken.get(lastClaimed)).toBe(1);
    const gOcc = await grpc.ok('ListOccurrences', { job_id: 'ep-ahead', page_size: 100 });
    expect(((gOcc.occurrences ?? []) as Json[]).some((o) => o.job_version === 2)).toBe(true);

    // A manual trigger runs under the job's version now (3 after the pause).
    const trig = await http('POST', '/v1/jobs/ep-ahead/trigger');
    expect(trig.status).toBe(202);
    const manual = await eventually(
      'the manual run',
      async () => {
        const r = await http('GET', `/v1/jobs/ep-ahead/runs/${trig.body.fence_token}`);
        return r.status === 200 ? r.body : undefined;
      },
      30_000,
      250,
    );
    expect(manual.job_version).toBe(3);
  }, 150_000);
});
