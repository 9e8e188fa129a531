/**
 * Business calendars end to end against real api, scheduler and executor processes: calendars over
 * REST (create with holidays generated from date-holidays, get, list, update with If-Match and the
 * re-plan of the jobs using it, delete refused while in use), tenancy (shared calendars written by
 * admins only and read by every tenant; a tenant never sees or names another's), the preview through
 * a calendar, and the scheduler recording CALENDAR_SHIFT (a fire of its own on another occurrence's
 * instant) and CALENDAR_SKIP in the occurrence ledger with the calendar's name and version. Every
 * response is checked against the OpenAPI document.
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { status } from '@grpc/grpc-js';
// eslint-disable-next-line no-restricted-imports -- the test plays an outside producer, not Tickwork code
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
// eslint-disable-next-line no-restricted-imports -- the test plays an outside producer, not Tickwork code
import { Kafka, logLevel } from 'kafkajs';
import { Client as Pg } from 'pg';
import { AdminTestClient } from '../support/admin-client';
import { type AppProcess, startPipeline } from '../support/apps';
import { eventually, freePort, isolate, STACK, type Isolation } from '../support/env';
import { contractFetch } from '../support/openapi';
import { WebhookReceiver } from '../support/receiver';

const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const ADMIN = 'tok-cal-admin-0123456789abcdef';
const ACME = 'tok-cal-acme-0123456789abcdef';
const GLOBEX = 'tok-cal-globex-0123456789abcdef';
const TENANTS = JSON.stringify({
  tokens: [
    { name: 'root', sha256: sha(ADMIN), role: 'admin' },
    { name: 'acme-user', sha256: sha(ACME), role: 'tenant', tenant: 'acme' },
    { name: 'globex-user', sha256: sha(GLOBEX), role: 'tenant', tenant: 'globex' },
  ],
});
const DAY = 86_400_000;
const dateOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

type Json = Record<string, unknown>;

describe('business calendars (e2e)', () => {
  let iso: Isolation;
  let receiver: WebhookReceiver;
  let apps: AppProcess[] = [];
  let api: AppProcess;
  let apiFetch: typeof fetch;
  let grpc: AdminTestClient;
  let grpcAddress: string;

  beforeAll(async () => {
    iso = isolate('calendars');
    receiver = await new WebhookReceiver().start();
    const grpcPort = await freePort();
    const env = iso.env({
      TICKWORK_GRPC_PORT: String(grpcPort),
      TICKWORK_TENANTS: TENANTS,
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      TICKWORK_TICK_MS: '100',
    });
    const pipeline = await startPipeline(env);
    api = pipeline.api;
    apps = pipeline.all;
    apiFetch = await contractFetch(api.url);
    grpcAddress = `127.0.0.1:${grpcPort}`;
    grpc = new AdminTestClient(grpcAddress, ACME);
  }, 120_000);

  afterAll(async () => {
    grpc?.close();
    await Promise.all(apps.map((a) => a.stop()));
    await receiver?.stop();
    await iso?.dispose();
  });

  const http = async (
    method: string,
    path: string,
    token: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; headers: Headers; body: Json }> => {
    const res = await apiFetch(`${api.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as Json };
  };
  const webhookJob = (id: string, anchor: number, policies: Json) => ({
    job_id: id,
    schedule: { kind: 'interval', every_ms: DAY, anchor: new Date(anchor).toISOString() },
    target: { type: 'webhook', url: receiver.url(`/${id}`) },
    policies: { misfire: 'FIRE_ALL', ...policies },
  });
  const ledger = async (jobId: string) =>
    (await http('GET', `/v1/jobs/${jobId}/occurrences`, ACME)).body.occurrences as Json[];

  it('calendars over REST: holidays from date-holidays, ETags, tenancy, shared ones for admins', async () => {
    const created = await http('POST', '/v1/calendars', ACME, {
      name: 'de-be',
      description: 'Berlin workdays',
      holiday_source: { country: 'DE', region: 'BE', years: [2026] },
      closed_dates: ['2026-12-24'],
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('etag')).toBe('"v1"');
    expect(created.body).toMatchObject({
      name: 'de-be',
      tenant_id: 'acme',
      shared: false,
      version: 1,
      closed_weekdays: ['SUNDAY', 'SATURDAY'],
      holiday_source: {
        country: 'DE',
        region: 'BE',
        years: [2026],
        library: 'date-holidays',
        library_version: '3.37.0',
      },
    });
    const generated = created.body.generated_holidays as { date: string; name: string }[];
    expect(generated).toContainEqual({ date: '2026-12-25', name: 'Christmas Day' });
    // Berlin's own: International Women's Day.
    expect(generated.map((h) => h.date)).toContain('2026-03-08');

    // Tenancy: globex does not see acme's calendar; only an admin writes a shared one.
    expect((await http('GET', '/v1/calendars/de-be', GLOBEX)).status).toBe(404);
    const refused = await http('POST', '/v1/calendars?shared=true', GLOBEX, { name: 'us' });
    expect(refused.status).toBe(403);
    const shared = await http('POST', '/v1/calendars?shared=true', ADMIN, {
      name: 'us',
      holiday_source: { country: 'US', years: [2026, 2027] },
    });
    expect(shared.status).toBe(201);
    expect(shared.body).toMatchObject({ tenant_id: null, shared: true });
    expect((await http('GET', '/v1/calendars/us', GLOBEX)).body).toMatchObject({ name: 'us', shared: true });
    const listed = await http('GET', '/v1/calendars', GLOBEX);
    expect((listed.body.calendars as Json[]).map((c) => c.name)).toEqual(['us']);
    const acmeList = await http('GET', '/v1/calendars', ACME);
    expect((acmeList.body.calendars as Json[]).map((c) => c.name)).toEqual(['de-be', 'us']);

    // A stale etag is refused; the right one bumps the version.
    const stale = await http(
      'PUT',
      '/v1/calendars/de-be',
      ACME,
      { closed_weekdays: ['SUNDAY'] },
      { 'if-match': '"v7"' },
    );
    expect(stale.status).toBe(412);
    const updated = await http(
      'PUT',
      '/v1/calendars/de-be',
      ACME,
      { closed_weekdays: ['SUNDAY'] },
      { 'if-match': '"v1"' },
    );
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      version: 2,
      closed_weekdays: ['SUNDAY'],
      holiday_source: null,
      replanned_jobs: 0,
    });
    expect(updated.headers.get('etag')).toBe('"v2"');

    // A job of globex cannot name acme's calendar.
    const nosy = await http(
      'POST',
      '/v1/jobs',
      GLOBEX,
      webhookJob('nosy', Date.now() + DAY, { calendars: ['de-be'] }),
    );
    expect(nosy.status).toBe(400);
    expect(nosy.body.violations).toEqual([
      { field: 'policies.calendars[0]', message: 'names no calendar of tenant globex nor a shared one' },
    ]);
  });

  it('the preview shows moved and skipped occurrences with the calendar and why', async () => {
    await http('POST', '/v1/calendars', ACME, {
      name: 'xmas',
      closed_weekdays: ['SATURDAY', 'SUNDAY'],
      holidays: [{ date: '2026-12-25', name: 'Christmas Day' }],
    });
    const preview = await http('POST', '/v1/schedules/preview', ACME, {
      schedule: { kind: 'cron', expression: '0 9 * * *', time_zone: 'Europe/Berlin' },
      from: '2026-12-24T00:00:00Z',
      count: 4,
      calendars: ['xmas'],
      calendar_rule: 'NEXT_BUSINESS_DAY',
    });
    expect(preview.status).toBe(200);
    const fires = preview.body.fires as Json[];
    expect(fires.map((f) => [f.at, (f.calendar as Json | undefined)?.why ?? null])).toEqual([
      ['2026-12-24T08:00:00.000Z', null],
      // Friday (Christmas), Saturday and Sunday all move to Monday 09:00 Berlin.
      ['2026-12-28T08:00:00.000Z', 'Christmas Day'],
      ['2026-12-28T08:00:00.000Z', 'Saturday'],
      ['2026-12-28T08:00:00.000Z', 'Sunday'],
    ]);
    expect(fires[1]!.calendar).toEqual({
      reason: 'CALENDAR_SHIFT',
      name: 'xmas',
      version: 1,
      why: 'Christmas Day',
      shift_ms: 3 * DAY,
    });
    const skipping = await http('POST', '/v1/schedules/preview', ACME, {
      schedule: { kind: 'cron', expression: '0 9 * * *', time_zone: 'Europe/Berlin' },
      from: '2026-12-25T00:00:00Z',
      count: 1,
      calendars: ['xmas'],
    });
    expect((skipping.body.fires as Json[])[0]!.calendar).toMatchObject({
      reason: 'CALENDAR_SKIP',
      why: 'Christmas Day',
    });
    const unknown = await http('POST', '/v1/schedules/preview', GLOBEX, {
      schedule: { kind: 'cron', expression: '0 9 * * *' },
      calendars: ['xmas'],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.violations).toEqual([
      { field: 'calendars[0]', message: 'names no calendar of tenant globex nor a shared one' },
    ]);
  });

  it('the scheduler records CALENDAR_SHIFT and CALENDAR_SKIP with the calendar version; a change re-plans', async () => {
    const anchor = Date.now() + 4_000;
    // "tomorrow-off" closes the day after the anchor's: that occurrence moves back onto the anchor's instant.
    await http('POST', '/v1/calendars', ACME, {
      name: 'tomorrow-off',
      closed_weekdays: [],
      closed_dates: [dateOf(anchor + DAY)],
    });
    await http('POST', '/v1/calendars', ACME, {
      name: 'today-off',
      closed_weekdays: [],
      closed_dates: [dateOf(anchor)],
    });
    const shifted = await http(
      'POST',
      '/v1/jobs',
      ACME,
      webhookJob('cal-shifted', anchor, {
        calendars: ['tomorrow-off'],
        calendar_rule: 'PREVIOUS_BUSINESS_DAY',
      }),
    );
    expect(shifted.status).toBe(201);
    expect(shifted.body.policies).toMatchObject({
      calendars: ['tomorrow-off'],
      calendar_rule: 'PREVIOUS_BUSINESS_DAY',
    });
    const skipped = await http(
      'POST',
      '/v1/jobs',
      ACME,
      webhookJob('cal-skipped', anchor, { calendars: ['today-off'] }),
    );
    expect(skipped.status).toBe(201);

    // Two fires at the anchor's instant: the job's own occurrence and tomorrow's, moved back a day.
    const fired = await eventually(
      'two fires of cal-shifted',
      async () => {
        const entries = (await ledger('cal-shifted')).filter((o) => o.outcome === 'FIRED');
        return entries.length >= 2 ? entries : undefined;
      },
      30_000,
    );
    expect(fired.map((o) => [o.nominal_time, o.calendar])).toEqual([
      [
        new Date(anchor).toISOString(),
        { reason: 'CALENDAR_SHIFT', name: 'tomorrow-off', version: 1, shift_ms: -DAY },
      ],
      [new Date(anchor).toISOString(), null],
    ]);
    await eventually(
      'two deliveries of cal-shifted',
      async () => (receiver.calls.filter((c) => c.path === '/cal-shifted').length >= 2 ? true : undefined),
      30_000,
    );

    const skip = await eventually(
      'the CALENDAR_SKIP of cal-skipped',
      async () => (await ledger('cal-skipped')).find((o) => o.reason === 'CALENDAR_SKIP'),
      30_000,
    );
    expect(skip).toMatchObject({
      outcome: 'SKIPPED',
      nominal_time: new Date(anchor).toISOString(),
      occurrences: 1,
      calendar: { reason: 'CALENDAR_SKIP', name: 'today-off', version: 1 },
    });
    expect(receiver.calls.filter((c) => c.path === '/cal-skipped')).toEqual([]);

    // Closing the day after tomorrow re-plans cal-skipped's next occurrence (SKIP: claimed at its own
    // instant to be recorded) and moves nothing of cal-shifted's; deleting a used calendar is refused.
    const before = (await http('GET', '/v1/jobs/cal-skipped', ACME)).body;
    expect(before.next_run_at).toBe(new Date(anchor + DAY).toISOString());
    const changed = await http('PUT', '/v1/calendars/today-off', ACME, {
      closed_weekdays: [],
      closed_dates: [dateOf(anchor), dateOf(anchor + DAY)],
    });
    expect(changed.body).toMatchObject({ version: 2, replanned_jobs: 1 });
    // A dry-run edit to NEXT_BUSINESS_DAY shows the closed day's occurrence moved onto the next one's.
    const dry = await http('PATCH', '/v1/jobs/cal-skipped?dry_run=true', ACME, {
      policies: { misfire: 'FIRE_ALL', calendars: ['today-off'], calendar_rule: 'NEXT_BUSINESS_DAY' },
    });
    expect(dry.status).toBe(200);
    const after = (dry.body.edit_preview as { after: { occurrences: Json[] } }).after.occurrences;
    expect(after.slice(0, 2).map((o) => [o.nominal_time, o.calendar_shift_ms ?? 0])).toEqual([
      [new Date(anchor + 2 * DAY).toISOString(), DAY],
      [new Date(anchor + 2 * DAY).toISOString(), 0],
    ]);
    const inUse = await http('DELETE', '/v1/calendars/today-off', ACME);
    expect(inUse.status).toBe(409);
    expect(inUse.body.message).toMatch(/used by 1 job\(s\) \(cal-skipped\)/);
  });

  it('calendars over gRPC: CRUD, job policies, preview, the ledger effect, bad input and tenancy', async () => {
    const created = await grpc.ok('CreateCalendar', {
      calendar: {
        name: 'grpc-cal',
        closed_weekdays: { weekdays: ['SATURDAY', 'SUNDAY'] },
        holidays: [{ date: '2026-12-25', name: 'Christmas Day' }],
      },
    });
    expect(created).toMatchObject({ name: 'grpc-cal', tenant_id: 'acme', shared: false, version: 1 });
    expect((created.closed_weekdays as { weekdays: string[] }).weekdays).toEqual(['SUNDAY', 'SATURDAY']);
    // Unset closed_weekdays: the default weekend; set but empty: no closed weekday.
    const open = await grpc.ok('CreateCalendar', {
      calendar: { name: 'grpc-open', closed_weekdays: { weekdays: [] } },
    });
    expect((open.closed_weekdays as { weekdays?: string[] }).weekdays ?? []).toEqual([]);
    const listed = await grpc.ok('ListCalendars', {});
    expect((listed.calendars as { name: string }[]).map((c) => c.name)).toContain('grpc-cal');
    expect(await grpc.ok('GetCalendar', { name: 'grpc-cal' })).toMatchObject({ version: 1 });

    const stale = await grpc.call('UpdateCalendar', { calendar: { name: 'grpc-cal' }, etag: 'v9' });
    expect(stale.ok).toBe(false);
    expect(!stale.ok && stale.code).toBe(status.FAILED_PRECONDITION);
    const updated = await grpc.ok('UpdateCalendar', {
      calendar: {
        name: 'grpc-cal',
        closed_weekdays: { weekdays: ['SUNDAY'] },
        holidays: [{ date: '2026-12-25', name: 'Christmas Day' }],
      },
      etag: 'v1',
    });
    expect(updated).toMatchObject({ calendar: { version: 2 }, replanned_jobs: 0 });

    const job = await grpc.ok('CreateJob', {
      job: {
        job_id: 'grpc-cal-job',
        schedule: { cron: { expression: '0 9 * * *', time_zone: 'Europe/Berlin' } },
        target: { kafka: { topic: 'calendar-sink' } },
        policies: { calendars: ['grpc-cal'], calendar_rule: 'CALENDAR_RULE_NEXT_BUSINESS_DAY' },
      },
    });
    expect(job.policies).toMatchObject({
      calendars: ['grpc-cal'],
      calendar_rule: 'CALENDAR_RULE_NEXT_BUSINESS_DAY',
    });

    const preview = await grpc.ok('PreviewSchedule', {
      schedule: { cron: { expression: '0 9 * * *', time_zone: 'Europe/Berlin' } },
      from: { seconds: Date.parse('2026-12-25T00:00:00Z') / 1000 },
      count: 1,
      calendars: ['grpc-cal'],
      calendar_rule: 'CALENDAR_RULE_NEXT_BUSINESS_DAY',
    });
    // Version 2 closes Sundays only: Friday's Christmas moves to Saturday 09:00 Berlin.
    expect((preview.fires as Record<string, unknown>[])[0]!.calendar).toEqual({
      reason: 'CALENDAR_SHIFT',
      name: 'grpc-cal',
      version: 2,
      why: 'Christmas Day',
      shift_ms: DAY,
    });

    // The REST-created job's CALENDAR_SHIFT reads the same over gRPC.
    const ledgerEntries = (await grpc.ok('ListOccurrences', { job_id: 'cal-shifted' })).occurrences as Record<
      string,
      unknown
    >[];
    expect(ledgerEntries.map((o) => o.calendar).filter(Boolean)).toContainEqual(
      expect.objectContaining({ reason: 'CALENDAR_SHIFT', name: 'tomorrow-off', version: 1 }),
    );

    const bad = await grpc.call('CreateCalendar', {
      calendar: { name: 'bad', closed_weekdays: { weekdays: ['FUNDAY'] }, closed_dates: ['2026-02-30'] },
    });
    expect(!bad.ok && bad.code).toBe(status.INVALID_ARGUMENT);
    expect(!bad.ok && bad.violations.map((v) => v.field).sort()).toEqual([
      'calendar.closed_dates[0]',
      'calendar.closed_weekdays[0]',
    ]);
    const shared = await grpc.call('CreateCalendar', { calendar: { name: 'grpc-shared' }, shared: true });
    expect(!shared.ok && shared.code).toBe(status.PERMISSION_DENIED);
    expect(
      (await grpc.as(ADMIN).call('CreateCalendar', { calendar: { name: 'grpc-shared' }, shared: true })).ok,
    ).toBe(true);
    expect(await grpc.ok('DeleteCalendar', { name: 'grpc-open' })).toEqual({});
    const gone = await grpc.call('GetCalendar', { name: 'grpc-open' });
    expect(!gone.ok && gone.code).toBe(status.NOT_FOUND);
  });

  it('Kafka: an Avro UPSERT carries calendars and their rule; an unknown rule or calendar is rejected naming the field', async () => {
    const topic = `${iso.topicPrefix}.commands`;
    const registry = new SchemaRegistry({ host: STACK.registryUrl });
    const schemaId = await registry.getLatestSchemaId(`${topic}-value`);
    const kafka = new Kafka({
      clientId: 'calendar-producer',
      brokers: STACK.kafkaBrokers.split(','),
      logLevel: logLevel.NOTHING,
    });
    const producer = kafka.producer();
    await producer.connect();
    const db = new Pg({ connectionString: iso.databaseUrl });
    await db.connect();
    const NS = 'io.tickwork.v1';
    const upsert = (jobId: string, calendars: string[], rule: string, commandId: string) => ({
      command_id: commandId,
      type: 'UPSERT',
      tenant_id: 'acme',
      job_id: jobId,
      issued_at: Date.now(),
      expected_version: null,
      job: {
        schedule: {
          [`${NS}.CronSchedule`]: {
            expression: '0 9 * * *',
            time_zone: 'Europe/Berlin',
            dst_gap: 'AUTO',
            dst_repeat: 'AUTO',
            start_at: null,
            end_at: null,
            max_fires: null,
          },
        },
        target: {
          [`${NS}.WebhookTarget`]: {
            url: 'https://example.com/hook',
            method: 'POST',
            headers: {},
            timeout_ms: 5000,
            success_status_min: 200,
            success_status_max: 299,
          },
        },
        payload: null,
        policies: {
          misfire: 'FIRE_ONCE',
          catch_up_window_ms: null,
          overlap: 'ALLOW',
          jitter_ms: 0,
          retry: null,
          spread_ms: 0,
          calendars,
          calendar_rule: rule,
        },
        labels: {},
      },
    });
    try {
      const badRule = randomUUID();
      const unknown = randomUUID();
      for (const [jobId, calendars, rule, commandId] of [
        ['cal-kafka', ['xmas'], 'NEXT_BUSINESS_DAY', randomUUID()],
        ['cal-kafka-rule', ['xmas'], 'SOMETIMES', badRule],
        ['cal-kafka-unknown', ['no-such-calendar'], 'SKIP', unknown],
      ] as const) {
        await producer.send({
          topic,
          messages: [
            {
              key: jobId,
              value: await registry.encode(schemaId, upsert(jobId, [...calendars], rule, commandId)),
            },
          ],
        });
      }
      const job = await eventually('the UPSERT applied', async () => {
        const r = await http('GET', '/v1/jobs/cal-kafka', ACME);
        return r.status === 200 ? r.body : undefined;
      });
      expect(job.policies).toMatchObject({ calendars: ['xmas'], calendar_rule: 'NEXT_BUSINESS_DAY' });
      const outcome = async (commandId: string) =>
        eventually(`command ${commandId} rejected`, async () => {
          const r = await db.query<{ outcome: string; reason: string }>(
            'SELECT outcome, reason FROM applied_commands WHERE command_id = $1',
            [commandId],
          );
          return r.rows[0];
        });
      expect(await outcome(badRule)).toMatchObject({
        outcome: 'INVALID_JOB',
        reason: expect.stringContaining('policies.calendar_rule'),
      });
      expect(await outcome(unknown)).toMatchObject({
        outcome: 'INVALID_JOB',
        reason: expect.stringContaining(
          'policies.calendars[0]: names no calendar of tenant acme nor a shared one',
        ),
      });
    } finally {
      await producer.disconnect();
      await db.end();
    }
  });

  it('CLI: calendar create|get|list|update|delete, job create --calendar, preview and the ledger show the calendar', async () => {
    const cli = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
        execFile(
          process.execPath,
          [resolve(__dirname, '..', '..', 'dist', 'apps', 'cli', 'src', 'main.js'), ...args],
          {
            env: { PATH: process.env.PATH ?? '', TICKWORK_SERVER: grpcAddress, TICKWORK_TOKEN: ACME },
            timeout: 60_000,
          },
          (err, stdout, stderr) =>
            done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    const dir = mkdtempSync(join(tmpdir(), 'tickwork-cal-'));
    const file = (name: string, body: unknown) => {
      const path = join(dir, name);
      writeFileSync(path, JSON.stringify(body));
      return path;
    };
    const created = await cli([
      'calendar',
      'create',
      '-f',
      file('cal.json', { name: 'cli-cal', holiday_source: { country: 'GB', region: 'ENG', years: [2026] } }),
    ]);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout.split('\n')[0]).toMatch(/^NAME\s+TENANT\s+VERSION\s+CLOSED_WEEKDAYS\s+HOLIDAYS/);
    expect(created.stdout).toMatch(
      /cli-cal\s+acme\s+v1\s+SUNDAY,SATURDAY\s+\d+\s+0\s+0\s+GB-ENG 2026 \(date-holidays 3\.37\.0\)/,
    );
    const got = JSON.parse((await cli(['--json', 'calendar', 'get', 'cli-cal'])).stdout) as Json;
    expect((got.generated_holidays as Json[]).map((h) => h.date)).toContain('2026-12-25');
    expect((await cli(['calendar', 'list'])).stdout).toContain('cli-cal');

    const job = await cli([
      'create',
      '-f',
      file('job.json', {
        job_id: 'cli-cal-job',
        schedule: { kind: 'cron', expression: '0 9 * * *', time_zone: 'Europe/London' },
        target: { type: 'kafka', topic: 'calendar-sink' },
      }),
      '--calendar',
      'cli-cal',
      '--calendar-rule',
      'PREVIOUS_BUSINESS_DAY',
    ]);
    expect(job.code).toBe(0);
    const stored = (await http('GET', '/v1/jobs/cli-cal-job', ACME)).body;
    expect(stored.policies).toMatchObject({ calendars: ['cli-cal'], calendar_rule: 'PREVIOUS_BUSINESS_DAY' });

    const preview = await cli([
      'preview',
      '--cron',
      '0 9 * * *',
      '--tz',
      'Europe/London',
      '--from',
      '2026-12-24T00:00:00Z',
      '-n',
      '2',
      '--calendar',
      'cli-cal',
      '--calendar-rule',
      'previous_business_day',
    ]);
    expect(preview).toMatchObject({ code: 0, stderr: '' });
    // Thursday the 24th's own occurrence, then Christmas (Friday) moved back onto it.
    const rows = preview.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^#\s+UTC\s+LOCAL\s+CALENDAR$/);
    expect(rows[1]).toMatch(/^1\s+2026-12-24T09:00:00.000Z .* -$/);
    expect(rows[2]).toMatch(/^2\s+2026-12-24T09:00:00.000Z .*SHIFT -1d \(Christmas Day\) cli-cal@v1$/);

    const updated = await cli([
      'calendar',
      'update',
      'cli-cal',
      '-f',
      file('cal2.json', { closed_weekdays: ['SUNDAY'] }),
      '--etag',
      'v1',
    ]);
    expect(updated).toMatchObject({ code: 0, stderr: '' });
    expect(updated.stdout).toMatch(/cli-cal\s+acme\s+v2\s+SUNDAY\s/);
    expect(updated.stdout).toContain('re-planned 1 job(s)');
    const inUse = await cli(['calendar', 'delete', 'cli-cal']);
    expect(inUse.code).not.toBe(0);
    expect(inUse.stderr).toContain('used by 1 job(s) (cli-cal-job)');

    // The ledger of the REST test's jobs shows the calendar, its version and the shift.
    const shiftedLedger = await cli(['occurrences', 'cal-shifted']);
    expect(shiftedLedger.stdout).toMatch(/FIRED .*CALENDAR_SHIFT tomorrow-off@v1 \(-1d\)/);
    const skippedLedger = await cli(['occurrences', 'cal-skipped']);
    expect(skippedLedger.stdout).toMatch(/SKIPPED .*CALENDAR_SKIP until .* CALENDAR_SKIP today-off@v1/);

    await http('DELETE', '/v1/jobs/cli-cal-job', ACME);
    const deleted = await cli(['calendar', 'delete', 'cli-cal', '--etag', 'v2']);
    expect(deleted).toMatchObject({ code: 0, stdout: 'deleted calendar cli-cal\n' });
  });
});
