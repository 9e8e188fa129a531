/**
 * Backfill against real api and scheduler processes, PostgreSQL and Kafka: a job whose
 * occurrences were skipped (paused and resumed under misfire SKIP: MISFIRE_SKIP) or never fired
 * (before the job existed; ledger records of every other skip reason written into the ledger as a
 * claim would) — the dry run lists exactly those, the backfill fires each once with trigger
 * BACKFILL and its nominal time, published to Kafka, no faster than max_per_second; a second
 * backfill of the window fires nothing; cancel stops it; the tenant's fire-rate cap holds; another
 * tenant sees nothing; bad input is refused naming the field — over REST (every response checked
 * against the OpenAPI document), gRPC and the CLI.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
// eslint-disable-next-line no-restricted-imports -- the test plays an outside producer, not Tickwork code
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
// eslint-disable-next-line no-restricted-imports -- the test plays an outside producer, not Tickwork code
import { Kafka, logLevel } from 'kafkajs';
import { randomUUID } from 'node:crypto';
import { Client as Pg } from 'pg';
import { AdminTestClient, type Msg } from '../support/admin-client';
import { startApp, type AppProcess } from '../support/apps';
import { eventually, freePort, isolate, STACK, type Isolation } from '../support/env';
import { TopicTap } from '../support/kafka';
import { contractFetch } from '../support/openapi';

const CLI = join(
  process.env.TICKWORK_TEST_DIST ?? join(__dirname, '..', '..', 'dist'),
  'apps',
  'cli',
  'src',
  'main.js',
);
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const TOKENS = { a: 'tok-acme-backfill-0123456789', b: 'tok-globex-backfill-0123456789' };
const TENANTS = JSON.stringify({
  tenants: { acme: {}, globex: { max_jobs: 100, max_fires_per_second: 2 } },
  tokens: [
    { name: 'acme-user', sha256: sha(TOKENS.a), role: 'tenant', tenant: 'acme' },
    { name: 'globex-user', sha256: sha(TOKENS.b), role: 'tenant', tenant: 'globex' },
  ],
});
const SECOND = 1_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('backfill', () => {
  let env: Isolation;
  let api: AppProcess;
  let scheduler: AppProcess;
  let db: Pg;
  let base: string;
  let http: typeof fetch;
  let grpc: AdminTestClient;
  let grpcAddress: string;

  beforeAll(async () => {
    env = isolate('backfill');
    const grpcPort = await freePort();
    api = startApp(
      'api',
      env.env({ TICKWORK_TENANTS: TENANTS, TICKWORK_GRPC_PORT: String(grpcPort), TICKWORK_SHARDS: '4' }),
      await freePort(),
    );
    await api.ready();
    base = api.url;
    http = await contractFetch(base);
    db = new Pg({ connectionString: env.databaseUrl });
    await db.connect();
    grpcAddress = `127.0.0.1:${grpcPort}`;
    grpc = new AdminTestClient(grpcAddress, TOKENS.a);
    scheduler = startApp(
      'scheduler',
      env.env({ TICKWORK_TENANTS: TENANTS, TICKWORK_SHARDS: '4', TICKWORK_TICK_MS: '100' }),
      await freePort(),
    );
    await scheduler.ready();
  }, 120_000);

  afterAll(async () => {
    grpc?.close();
    await scheduler?.stop();
    await api?.stop();
    await db?.end();
    await env?.dispose();
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
  const createJob = async (token: string, jobId: string, policies: Msg = {}) => {
    const r = await rest('POST', '/v1/jobs', token, {
      job_id: jobId,
      schedule: { kind: 'cron', expression: '* * * * * *', time_zone: 'UTC' },
      target: { type: 'kafka', topic: `${env.topicPrefix}.unused` },
      policies,
    });
    expect(r.status).toBe(201);
    return new Date(r.body.created_at as string).getTime();
  };
  const dbNow = async () => (await db.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now.getTime();
  const waitDbUntil = async (ms: number) =>
    eventually(
      'the database clock to reach the instant',
      async () => ((await dbNow()) >= ms ? true : undefined),
      30_000,
      100,
    );
  const scheduledFires = async (jobId: string) =>
    (
      await db.query<{ nominal_time: Date }>(
        `SELECT nominal_time FROM fires WHERE job_id = $1 AND trigger = 'SCHEDULE' ORDER BY nominal_time`,
        [jobId],
      )
    ).rows.map((r) => r.nominal_time.getTime());
  const backfillFires = async (jobId: string) =>
    (
      await db.query<{ nominal_time: Date; claimed_at: Date; enqueued_at: Date | null; fence_token: string }>(
        `SELECT f.nominal_time, f.claimed_at, b.enqueued_at, f.fence_token FROM fires f JOIN fire_batches b USING (batch_id)
          WHERE f.job_id = $1 AND f.trigger = 'BACKFILL' ORDER BY f.nominal_time`,
        [jobId],
      )
    ).rows;
  const seedSkip = (jobId: string, tenant: string, reason: string, at: number) =>
    db.query(
      `INSERT INTO occurrence_skips (job_id, tenant_id, reason, first_nominal, last_nominal, occurrences) VALUES ($1, $2, $3, $4, $4, 1)`,
      [jobId, tenant, reason, new Date(at)],
    );
  const audits = async (action: string, jobId: string) =>
    Number(
      (
        await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM audit_events WHERE action = $1 AND job_id = $2 AND outcome = 'OK'`,
          [action, jobId],
        )
      ).rows[0]!.n,
    );

  it('REST: the dry run lists exactly the occurrences that did not run; the backfill fires each once, paced, with trigger BACKFILL; again fires nothing', async () => {
    const job = 'bf-rest';
    const created = await createJob(TOKENS.a, job, { misfire: 'SKIP' });
    const c = Math.floor(created / SECOND) * SECOND;
    // The ledger records of every skip reason but MISFIRE_SKIP (which this job gets for real
    // below), on occurrences before the job existed; c − 10 s … c − 8 s have no record at all.
    const seeded: Record<number, string> = {
      [c - 7 * SECOND]: 'PAUSED',
      [c - 6 * SECOND]: 'COALESCED',
      [c - 5 * SECOND]: 'OVERLAP',
      [c - 4 * SECOND]: 'CATCH_UP_LIMIT',
      [c - 3 * SECOND]: 'OUTSIDE_CATCH_UP_WINDOW',
    };
    for (const [at, reason] of Object.entries(seeded)) await seedSkip(job, 'acme', reason, Number(at));
    await seedSkip(job, 'acme', 'INVALID_DEFINITION: a cron the claim could not plan', c - 2 * SECOND);
    await eventually('three scheduled fires', async () =>
      (await scheduledFires(job)).length >= 3 ? true : undefined,
    );
    expect((await rest('POST', `/v1/jobs/${job}/pause`, TOKENS.a)).status).toBe(200);
    await waitDbUntil((await dbNow()) + 3 * SECOND);
    expect((await rest('POST', `/v1/jobs/${job}/resume`, TOKENS.a)).status).toBe(200);
    // The resume's claim records the occurrences missed while paused as MISFIRE_SKIP.
    const skipRows = await eventually('the missed occurrences in the ledger', async () => {
      const { rows } = await db.query<{ first_nominal: Date; last_nominal: Date }>(
        `SELECT first_nominal, last_nominal FROM occurrence_skips WHERE job_id = $1 AND reason = 'MISFIRE_SKIP'`,
        [job],
      );
      return rows.length > 0 ? rows : undefined;
    });
    const fired = await scheduledFires(job);
    await eventually('a fire after the resume', async () =>
      (await scheduledFires(job)).length > fired.length ? true : undefined,
    );
    // Paused again: nothing fires during the backfills.
    expect((await rest('POST', `/v1/jobs/${job}/pause`, TOKENS.a)).status).toBe(200);
    const from = c - 10 * SECOND;
    const to = Math.floor((await dbNow()) / SECOND) * SECOND;
    const ran = new Set(await scheduledFires(job));
    const isMisfireSkip = (t: number) =>
      skipRows.some((r) => r.first_nominal.getTime() <= t && t <= r.last_nominal.getTime());
    const expected: [string, string][] = [];
    for (let t = from; t < to; t += SECOND) {
      if (ran.has(t) || t === c - 2 * SECOND) continue;
      expected.push([iso(t), seeded[t] ?? (isMisfireSkip(t) ? 'MISFIRE_SKIP' : 'NEVER_FIRED')]);
    }
    expect(expected.some(([, r]) => r === 'MISFIRE_SKIP')).toBe(true);

    const dry = await rest('POST', `/v1/jobs/${job}/backfills`, TOKENS.a, {
      from: iso(from),
      to: iso(to),
      dry_run: true,
      max_per_second: 5,
    });
    expect(dry.status).toBe(200);
    expect((dry.body.occurrences as Msg[]).map((o) => [o.nominal_time, o.reason])).toEqual(expected);
    expect(dry.body).toMatchObject({
      dry_run: true,
      planned: expected.length,
      already_ran: [...ran].filter((t) => t >= from && t < to).length,
      excluded: { INVALID_DEFINITION: 1 },
    });
    // Nothing written, nothing audited.
    expect((await db.query(`SELECT 1 FROM backfills WHERE job_id = $1`, [job])).rowCount).toBe(0);
    expect(await audits('CreateBackfill', job)).toBe(0);

    const run = await rest('POST', `/v1/jobs/${job}/backfills`, TOKENS.a, {
      from: iso(from),
      to: iso(to),
      max_per_second: 5,
    });
    expect(run.status).toBe(201);
    expect(run.body).toMatchObject({
      status: 'PENDING',
      planned: expected.length,
      fired: 0,
      created_by: 'acme-user',
    });
    const id = run.body.backfill_id as string;
    const done = await eventually(
      'the backfill to finish',
      async () => {
        const g = await rest('GET', `/v1/jobs/${job}/backfills/${id}`, TOKENS.a);
        return g.body.status === 'DONE' ? g.body : undefined;
      },
      30_000,
      200,
    );
    expect(done).toMatchObject({ fired: expected.length, found_ran: 0, remaining: 0 });
    expect((done.occurrences as Msg[]).every((o) => o.state === 'FIRED' && o.fence_token !== null)).toBe(
      true,
    );
    const fires = await backfillFires(job);
    // Each planned occurrence once, with its nominal time.
    expect(fires.map((f) => iso(f.nominal_time.getTime()))).toEqual(expected.map(([t]) => t));
    expect(new Set(fires.map((f) => f.fence_token)).size).toBe(fires.length);
    // On Kafka: the relay published every batch.
    await eventually('the backfill fires on Kafka', async () =>
      (await backfillFires(job)).every((f) => f.enqueued_at !== null) ? true : undefined,
    );
    // The pace: the k-th fire no sooner than k/5 s after the request.
    const createdAt = new Date(run.body.created_at as string).getTime();
    const sorted = fires.map((f) => f.claimed_at.getTime()).sort((x, y) => x - y);
    sorted.forEach((t, k) => expect(t).toBeGreaterThanOrEqual(createdAt + k * 200 - 5));
    expect(sorted[sorted.length - 1]! - createdAt).toBeLessThan((expected.length - 1) * 200 + 10_000);
    expect(await audits('CreateBackfill', job)).toBe(1);
    // The scheduler's metrics count them, by tenant; the active gauge is exported.
    const metrics = await (await fetch(`${scheduler.url}/metrics`)).text();
    const counted = /^tickwork_backfill_fires_total\{[^}]*tenant="acme"[^}]*\} (\d+)/m.exec(metrics);
    expect(Number(counted?.[1])).toBe(expected.length);
    expect(metrics).toMatch(/^tickwork_backfills_active(\{[^}]*\})? \d+/m);
    // The occurrence ledger shows them with trigger BACKFILL.
    const occ = await rest('GET', `/v1/jobs/${job}/occurrences?page_size=200`, TOKENS.a);
    const backfilled = (occ.body.occurrences as Msg[]).filter((o) => o.trigger === 'BACKFILL');
    expect(backfilled.map((o) => o.nominal_time).sort()).toEqual(expected.map(([t]) => t).sort());

    // A second backfill of the same window fires nothing.
    const again = await rest('POST', `/v1/jobs/${job}/backfills`, TOKENS.a, { from: iso(from), to: iso(to) });
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ status: 'DONE', planned: 0, fired: 0 });
    expect(await backfillFires(job)).toHaveLength(fires.length);
    const list = await rest('GET', `/v1/jobs/${job}/backfills`, TOKENS.a);
    expect((list.body.backfills as Msg[]).map((b) => b.backfill_id)).toEqual([again.body.backfill_id, id]);

    // INVALID_DEFINITION only when asked: exactly that one.
    const invalid = await rest('POST', `/v1/jobs/${job}/backfills`, TOKENS.a, {
      from: iso(from),
      to: iso(to),
      dry_run: true,
      skip_reasons: ['INVALID_DEFINITION'],
    });
    expect((invalid.body.occurrences as Msg[]).map((o) => [o.nominal_time, o.reason])).toEqual([
      [iso(c - 2 * SECOND), 'INVALID_DEFINITION'],
    ]);

    // Another tenant sees none of it.
    expect((await rest('GET', `/v1/jobs/${job}/backfills/${id}`, TOKENS.b)).status).toBe(404);
    expect((await rest('GET', `/v1/jobs/${job}/backfills`, TOKENS.b)).status).toBe(404);
    expect(
      (await rest('POST', `/v1/jobs/${job}/backfills`, TOKENS.b, { from: iso(from), to: iso(to) })).status,
    ).toBe(404);
    expect((await rest('POST', `/v1/jobs/${job}/backfills/${id}/cancel`, TOKENS.b)).status).toBe(404);
  }, 120_000);

  it('REST: cancel stops a backfill; bad input is refused naming the field and changes nothing', async () => {
    const job = 'bf-cancel';
    await createJob(TOKENS.a, job);
    expect((await rest('POST', `/v1/jobs/${job}/pause`, TOKENS.a)).status).toBe(200);
    const now = Math.floor((await dbNow()) / SECOND) * SECOND;
    // 60 occurrences before the job existed, at 2 a second: about 30 s if left alone.
    const run = await rest('POST', `/v1/jobs/${job}/backfills`, TOKENS.a, {
      from: iso(now - 120 * SECOND),
      to: iso(now - 60 * SECOND),
      max_per_second: 2,
    });
    expect(run.status).toBe(201);
    const id = run.body.backfill_id as string;
    await eventually('a first backfill fire', async () =>
      (await backfillFires(job)).length >= 2 ? true : undefined,
    );
    const cancelled = await rest('POST', `/v1/jobs/${job}/backfills/${id}/cancel`, TOKENS.a);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'CANCELLED', cancelled_by: 'acme-user' });
    const firedAtCancel = cancelled.body.fired as number;
    expect(firedAtCancel).toBeGreaterThanOrEqual(2);
    expect(firedAtCancel).toBeLessThan(60);
    expect(await backfillFires(job)).toHaveLength(firedAtCancel);
    // Two more slots' worth later, still no further fire.
    await waitDbUntil((await dbNow()) + 1_500);
    expect(await backfillFires(job)).toHaveLength(firedAtCancel);
    expect((await rest('GET', `/v1/jobs/${job}/backfills/${id}`, TOKENS.a)).body).toMatchObject({
      status: 'CANCELLED',
      fired: firedAtCancel,
      remaining: 60 - firedAtCancel,
    });
    // Cancelling again answers the same backfill.
    expect((await rest('POST', `/v1/jobs/${job}/backfills/${id}/cancel`, TOKENS.a)).body).toMatchObject({
      status: 'CANCELLED',
    });
    expect(await audits('CancelBackfill', job)).toBe(2);

    const bad = async (body: unknown, field: string) => {
      const r = await rest('POST', `/v1/jobs/${job}/backfills`, TOKENS.a, body);
      expect(r.status).toBe(400);
      expect((r.body.violations as Msg[]).map((v) => v.field)).toContain(field);
    };
    const before = (await db.query(`SELECT 1 FROM backfills`)).rowCount;
    await bad({ to: iso(now - SECOND) }, 'from');
    await bad({ from: iso(now - SECOND), to: iso(now - 2 * SECOND) }, 'to');
    await bad({ from: iso(now - SECOND), to: iso(now + 3_600_000) }, 'to');
    // More than 10,000 occurrences (every second for 3 hours).
    await bad({ from: iso(now - 3 * 3_600_000), to: iso(now - SECOND) }, 'to');
    await bad({ from: iso(now - 60 * SECOND), to: iso(now - SECOND), max_per_second: 0 }, 'max_per_second');
    await bad(
      { from: iso(now - 60 * SECOND), to: iso(now - SECOND), skip_reasons: ['LATE'] },
      'skip_reasons[0]',
    );
    expect((await db.query(`SELECT 1 FROM backfills`)).rowCount).toBe(before);
    expect((await rest('GET', `/v1/jobs/${job}/backfills/abc`, TOKENS.a)).status).toBe(400);
    expect((await rest('GET', `/v1/jobs/${job}/backfills/999999`, TOKENS.a)).status).toBe(404);
    expect(
      (
        await rest('POST', `/v1/jobs/nope/backfills`, TOKENS.a, {
          from: iso(now - 60 * SECOND),
          to: iso(now - SECOND),
        })
      ).status,
    ).toBe(404);
  }, 120_000);

  it('REST: a job with business calendars is backfilled where its calendars put each occurrence (moved: at the moved instant, skipped: left out), once', async () => {
    // A window of 10 s on one UTC day, which the calendar closes.
    let from = Math.floor((await dbNow()) / SECOND) * SECOND - 20 * SECOND;
    if (new Date(from).getUTCDate() !== new Date(from + 10 * SECOND).getUTCDate()) from -= 30 * SECOND;
    const to = from + 10 * SECOND;
    const day = iso(from).slice(0, 10);
    expect(
      (
        await rest('POST', '/v1/calendars', TOKENS.a, {
          name: 'bf-closed',
          closed_weekdays: [],
          closed_dates: [day],
        })
      ).status,
    ).toBe(201);
    await createJob(TOKENS.a, 'bf-cal-prev', {
      calendars: ['bf-closed'],
      calendar_rule: 'PREVIOUS_BUSINESS_DAY',
    });
    await createJob(TOKENS.a, 'bf-cal-skip', { calendars: ['bf-closed'], calendar_rule: 'SKIP' });
    await createJob(TOKENS.a, 'bf-cal-next', {
      calendars: ['bf-closed'],
      calendar_rule: 'NEXT_BUSINESS_DAY',
    });
    const window = { from: iso(from), to: iso(to), max_per_second: 50 };
    const DAY = 86_400_000;
    const moved: [string, string][] = [];
    for (let t = from; t < to; t += SECOND) moved.push([iso(t - DAY), 'NEVER_FIRED']);

    // PREVIOUS_BUSINESS_DAY: each occurrence fires a day earlier, at the same wall time.
    const dry = await rest('POST', '/v1/jobs/bf-cal-prev/backfills', TOKENS.a, { ...window, dry_run: true });
    expect(dry.status).toBe(200);
    expect((dry.body.occurrences as Msg[]).map((o) => [o.nominal_time, o.reason])).toEqual(moved);
    const run = await rest('POST', '/v1/jobs/bf-cal-prev/backfills', TOKENS.a, window);
    expect(run.status).toBe(201);
    const made = await eventually('the moved occurrences fired', async () => {
      const { rows } = await db.query<{ nominal_time: Date; calendar_shift_ms: string; calendar: string }>(
        `SELECT nominal_time, calendar_shift_ms, calendar FROM fires WHERE job_id = 'bf-cal-prev' AND trigger = 'BACKFILL' ORDER BY nominal_time`,
      );
      return rows.length >= moved.length ? rows : undefined;
    });
    expect(made.map((r) => [iso(r.nominal_time.getTime()), Number(r.calendar_shift_ms), r.calendar])).toEqual(
      moved.map(([at]) => [at, -DAY, 'bf-closed@1']),
    );
    // Again: every occurrence is found fired where the calendar put it.
    const again = await rest('POST', '/v1/jobs/bf-cal-prev/backfills', TOKENS.a, {
      ...window,
      dry_run: true,
    });
    expect(again.body).toMatchObject({ planned: 0, already_ran: moved.length });

    // SKIP: the calendar skips them all, so nothing is planned; NEXT_BUSINESS_DAY: they are the
    // schedule's to fire tomorrow, not the backfill's.
    const skip = await rest('POST', '/v1/jobs/bf-cal-skip/backfills', TOKENS.a, { ...window, dry_run: true });
    expect(skip.body).toMatchObject({ planned: 0, excluded: { CALENDAR_SKIP: moved.length } });
    const next = await rest('POST', '/v1/jobs/bf-cal-next/backfills', TOKENS.a, { ...window, dry_run: true });
    expect(next.body).toMatchObject({ planned: 0, excluded: { NOT_YET_DUE: moved.length } });
  }, 120_000);

  it("gRPC: dry run, backfill within the tenant's fire-rate cap (2/s), get, list, cancel of a finished one; bad input INVALID_ARGUMENT", async () => {
    const job = 'bf-grpc';
    const globex = grpc.as(TOKENS.b);
    const r = await rest('POST', '/v1/jobs', TOKENS.b, {
      job_id: job,
      schedule: { kind: 'cron', expression: '0 0 * * *', time_zone: 'UTC' },
      target: { type: 'kafka', topic: `${env.topicPrefix}.unused` },
    });
    expect(r.status).toBe(201);
    const now = Math.floor((await dbNow()) / SECOND) * SECOND;
    // Daily at midnight: the last 6 midnights before today's, all before the job existed.
    const today = Math.floor(now / 86_400_000) * 86_400_000;
    const ts = (daysBack: number) => ({ seconds: (today - daysBack * 86_400_000) / 1000, nanos: 0 });
    const window = { from: ts(6), to: ts(0) };
    const dry = await globex.ok('CreateBackfill', {
      job_id: job,
      ...window,
      dry_run: true,
      max_per_second: 100,
    });
    const plan = dry.plan as Msg;
    expect(dry.backfill).toBeUndefined();
    expect((plan.occurrences as Msg[]).map((o) => o.reason)).toEqual(Array(6).fill('NEVER_FIRED'));
    expect(Number(plan.planned)).toBe(6);

    const created = (await globex.ok('CreateBackfill', { job_id: job, ...window, max_per_second: 100 }))
      .backfill as Msg;
    expect(created.status).toBe('BACKFILL_STATUS_PENDING');
    const id = created.backfill_id as string;
    const done = await eventually(
      'the backfill to finish',
      async () => {
        const g = await globex.ok('GetBackfill', { job_id: job, backfill_id: id });
        return g.status === 'BACKFILL_STATUS_DONE' ? g : undefined;
      },
      30_000,
      200,
    );
    expect(Number(done.fired)).toBe(6);
    expect((done.occurrences as Msg[]).map((o) => o.state)).toEqual(Array(6).fill('FIRED'));
    // The tenant's cap (2/s, burst 2) and not max_per_second (100/s) paced it: 6 fires take ≥ 2 s.
    const fires = await backfillFires(job);
    expect(fires).toHaveLength(6);
    const ordered = fires.map((f) => f.claimed_at.getTime()).sort((x, y) => x - y);
    expect(ordered[5]! - ordered[0]!).toBeGreaterThanOrEqual(1_900);
    // The occurrence ledger over gRPC.
    const occ = await globex.ok('ListOccurrences', { job_id: job, page_size: 50 });
    expect((occ.occurrences as Msg[]).filter((o) => o.trigger === 'FIRE_TRIGGER_BACKFILL')).toHaveLength(6);

    const list = await globex.ok('ListBackfills', { job_id: job });
    expect((list.backfills as Msg[]).map((b) => b.backfill_id)).toEqual([id]);
    // Cancelling a finished backfill changes nothing.
    expect((await globex.ok('CancelBackfill', { job_id: job, backfill_id: id })).status).toBe(
      'BACKFILL_STATUS_DONE',
    );
    // Another tenant: NOT_FOUND.
    const other = await grpc.call('GetBackfill', { job_id: job, backfill_id: id });
    expect(!other.ok && other.codeName).toBe('NOT_FOUND');

    const bad = async (req: Msg, field: string) => {
      const b = await globex.call('CreateBackfill', { job_id: job, ...req });
      expect(!b.ok && b.codeName).toBe('INVALID_ARGUMENT');
      expect(!b.ok && b.violations.map((v) => v.field)).toContain(field);
    };
    await bad({ to: ts(0) }, 'from');
    await bad({ from: ts(0), to: ts(6) }, 'to');
    await bad({ ...window, max_per_second: 5000 }, 'max_per_second');
    await bad({ ...window, skip_reasons: ['PAUSED'], only_never_fired: true }, 'skip_reasons');
    const badId = await globex.call('GetBackfill', { job_id: job, backfill_id: 'x' });
    expect(!badId.ok && badId.violations.map((v) => v.field)).toEqual(['backfill_id']);
    expect(
      Number(
        (await db.query<{ n: string }>(`SELECT count(*) AS n FROM backfills WHERE job_id = $1`, [job]))
          .rows[0]!.n,
      ),
    ).toBe(1);
  }, 120_000);

  it('CLI: backfill --dry-run, backfill, list, get, cancel', async () => {
    const job = 'bf-cli';
    await createJob(TOKENS.a, job);
    expect((await rest('POST', `/v1/jobs/${job}/pause`, TOKENS.a)).status).toBe(200);
    const now = Math.floor((await dbNow()) / SECOND) * SECOND;
    const from = iso(now - 300 * SECOND);
    const to = iso(now - 297 * SECOND);
    const cli = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(
          process.execPath,
          [CLI, '--server', grpcAddress, '--token', TOKENS.a, ...args],
          (err, stdout, stderr) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    const dry = await cli('backfill', job, '--from', from, '--to', to, '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('dry run: would fire 3 occurrence(s)');
    expect(dry.stdout).toContain(`${from}  NEVER_FIRED`);
    const made = await cli('--json', 'backfill', job, '--from', from, '--to', to, '--max-per-second', '20');
    expect(made.code).toBe(0);
    const b = JSON.parse(made.stdout) as Msg;
    expect(b).toMatchObject({ job_id: job, planned: 3, status: 'BACKFILL_STATUS_PENDING' });
    await eventually('the backfill to finish', async () => {
      const g = await cli('--json', 'backfill', 'get', job, String(b.backfill_id));
      return (JSON.parse(g.stdout) as Msg).status === 'BACKFILL_STATUS_DONE' ? true : undefined;
    });
    const got = await cli('backfill', 'get', job, String(b.backfill_id));
    expect(got.stdout).toContain('DONE');
    expect(got.stdout).toContain('planned 3, fired 3');
    expect((await cli('backfill', 'list', job)).stdout).toContain(String(b.backfill_id));
    expect((await cli('backfill', 'cancel', job, String(b.backfill_id))).stdout).toContain(': DONE');
    const refused = await cli('backfill', job, '--from', to, '--to', from);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('to: must be after from');
    expect(await backfillFires(job)).toHaveLength(3);

    // Their runs (an executor takes the fires) show the trigger on REST, gRPC and the CLI.
    const executor = startApp(
      'executor',
      env.env({ TICKWORK_TENANTS: TENANTS, TICKWORK_SHARDS: '4' }),
      await freePort(),
    );
    try {
      await executor.ready();
      const runs = await eventually(
        'the runs of the backfill fires',
        async () => {
          const r = await rest('GET', `/v1/jobs/${job}/runs`, TOKENS.a);
          const list = r.body.runs as Msg[];
          return list.length === 3 ? list : undefined;
        },
        60_000,
        250,
      );
      expect(runs.map((r) => [r.nominal_time, r.trigger]).sort()).toEqual(
        [0, 1, 2].map((k) => [iso(now - (300 - k) * SECOND), 'BACKFILL']),
      );
      const grpcRuns = (await grpc.ok('ListRuns', { job_id: job })).runs as Msg[];
      expect(grpcRuns.map((r) => r.trigger)).toEqual(Array(3).fill('FIRE_TRIGGER_BACKFILL'));
      const cliRuns = await cli('--json', 'runs', job);
      expect((JSON.parse(cliRuns.stdout) as { runs: Msg[] }).runs.map((r) => r.trigger)).toEqual(
        Array(3).fill('FIRE_TRIGGER_BACKFILL'),
      );
    } finally {
      await executor.stop();
    }
  }, 120_000);

  it('Kafka: a BACKFILL command creates the backfill once (a copy is a duplicate); a bad one is rejected naming the field', async () => {
    const job = 'bf-kafka';
    await createJob(TOKENS.a, job);
    expect((await rest('POST', `/v1/jobs/${job}/pause`, TOKENS.a)).status).toBe(200);
    const topic = `${env.topicPrefix}.commands`;
    const registry = new SchemaRegistry({ host: STACK.registryUrl });
    const schemaId = await registry.getLatestSchemaId(`${topic}-value`);
    const kafka = new Kafka({
      clientId: 'outside-producer',
      brokers: STACK.kafkaBrokers.split(','),
      logLevel: logLevel.NOTHING,
    });
    const producer = kafka.producer();
    await producer.connect();
    const rejected = await TopicTap.open(`${topic}.rejected`);
    try {
      const now = Math.floor((await dbNow()) / SECOND) * SECOND;
      const command = (backfill: Msg) => ({
        command_id: randomUUID(),
        type: 'BACKFILL',
        tenant_id: 'acme',
        job_id: job,
        job: null,
        issued_at: Date.now(),
        expected_version: null,
        backfill: { max_per_second: null, skip_reasons: null, ...backfill },
      });
      const good = command({ from: now - 500 * SECOND, to: now - 496 * SECOND, max_per_second: 50 });
      const value = await registry.encode(schemaId, good);
      // The same command twice: applied once.
      await producer.send({
        topic,
        messages: [
          { key: job, value },
          { key: job, value },
        ],
      });
      const done = await eventually(
        'the backfill of the command to finish',
        async () => {
          const l = await rest('GET', `/v1/jobs/${job}/backfills`, TOKENS.a);
          const b = (l.body.backfills as Msg[])[0];
          return b?.status === 'DONE' ? l.body.backfills : undefined;
        },
        60_000,
        200,
      );
      expect(done).toHaveLength(1);
      expect((done as Msg[])[0]).toMatchObject({
        planned: 4,
        fired: 4,
        created_by: 'kafka',
        max_per_second: 50,
      });
      expect((await backfillFires(job)).map((f) => iso(f.nominal_time.getTime()))).toEqual(
        [500, 499, 498, 497].map((s) => iso(now - s * SECOND)),
      );
      const bad = await registry.encode(
        schemaId,
        command({ from: now - 10 * SECOND, to: now - 20 * SECOND }),
      );
      await producer.send({ topic, messages: [{ key: job, value: bad }] });
      const m = await eventually(
        'the bad command on the rejected topic',
        () => rejected.messages.find((r) => r.value?.equals(bad)),
        60_000,
      );
      expect(m.headers['tickwork-reject-code']).toBe('INVALID_COMMAND');
      expect(m.headers['tickwork-reject-reason']).toContain('backfill.to: must be after from');
      expect((await rest('GET', `/v1/jobs/${job}/backfills`, TOKENS.a)).body.backfills).toHaveLength(1);
    } finally {
      await rejected.close();
      await producer.disconnect();
    }
  }, 120_000);

  it('a scheduler killed mid-backfill: the next owner goes on from where it stopped; every occurrence fires once', async () => {
    const job = 'bf-crash';
    await createJob(TOKENS.a, job);
    expect((await rest('POST', `/v1/jobs/${job}/pause`, TOKENS.a)).status).toBe(200);
    const now = Math.floor((await dbNow()) / SECOND) * SECOND;
    const from = now - 1_000 * SECOND;
    // 30 occurrences at 4 a second: about 7 s left alone.
    const run = await rest('POST', `/v1/jobs/${job}/backfills`, TOKENS.a, {
      from: iso(from),
      to: iso(from + 30 * SECOND),
      max_per_second: 4,
    });
    expect(run.status).toBe(201);
    const id = run.body.backfill_id as string;
    await eventually('a few backfill fires', async () =>
      (await backfillFires(job)).length >= 4 ? true : undefined,
    );
    await scheduler.kill();
    const atKill = (await backfillFires(job)).length;
    expect(atKill).toBeLessThan(30);
    scheduler = startApp(
      'scheduler',
      env.env({ TICKWORK_TENANTS: TENANTS, TICKWORK_SHARDS: '4', TICKWORK_TICK_MS: '100' }),
      await freePort(),
    );
    await scheduler.ready();
    const done = await eventually(
      'the backfill to finish under the new scheduler',
      async () => {
        const g = await rest('GET', `/v1/jobs/${job}/backfills/${id}`, TOKENS.a);
        return g.body.status === 'DONE' ? g.body : undefined;
      },
      90_000,
      250,
    );
    expect(done).toMatchObject({ planned: 30, fired: 30, found_ran: 0, remaining: 0 });
    const fires = await backfillFires(job);
    expect(fires.map((f) => f.nominal_time.getTime())).toEqual(
      Array.from({ length: 30 }, (_, k) => from + k * SECOND),
    );
    expect(new Set(fires.map((f) => f.fence_token)).size).toBe(30);
    const owners = await db.query<{ claimed_by: string }>(
      `SELECT DISTINCT b.claimed_by FROM fires f JOIN fire_batches b USING (batch_id) WHERE f.job_id = $1 AND f.trigger = 'BACKFILL'`,
      [job],
    );
    // Fires claimed as backfill:<id> (batches carry the backfill, not the instance); on Kafka, all.
    expect(owners.rows.map((r) => r.claimed_by)).toEqual([`backfill:${id}`]);
    await eventually('every backfill fire on Kafka', async () =>
      (await backfillFires(job)).every((f) => f.enqueued_at !== null) ? true : undefined,
    );
  }, 150_000);
});
