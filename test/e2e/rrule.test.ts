/**
 * rrule schedules end to end, every hop real: created over REST and gRPC, previewed on both and with the CLI,
 * fired by a real scheduler and executor at a webhook, and bad rules refused naming the field.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { AdminTestClient, dateOf, ts, type Msg } from '../support/admin-client';
import { type AppProcess, startPipeline } from '../support/apps';
import { eventually, freePort, isolate, type Isolation } from '../support/env';
import { contractFetch } from '../support/openapi';
import { WebhookReceiver } from '../support/receiver';

const CLI = join(
  process.env.TICKWORK_TEST_DIST ?? join(__dirname, '..', '..', 'dist'),
  'apps',
  'cli',
  'src',
  'main.js',
);

/** The present as a UTC wall time a few seconds ahead, on an even second: a DTSTART for a rule firing soon. */
function soonAsUtcWall(aheadMs: number): string {
  const t = Math.ceil((Date.now() + aheadMs) / 2_000) * 2_000;
  return new Date(t).toISOString().slice(0, 19);
}

describe('rrule schedules', () => {
  let iso: Isolation;
  let receiver: WebhookReceiver;
  let apps: AppProcess[] = [];
  let api: AppProcess;
  let grpc: AdminTestClient;
  let server: string;
  let apiFetch: typeof fetch;

  const rest = async (method: string, path: string, body?: unknown) => {
    const res = await apiFetch(`${api.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  const tickwork = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((done) => {
      execFile(
        process.execPath,
        [CLI, '--timeout', '30000', ...args],
        { env: { PATH: process.env.PATH ?? '', TICKWORK_SERVER: server }, timeout: 60_000 },
        (err, stdout, stderr) =>
          done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  beforeAll(async () => {
    iso = isolate('rrule');
    receiver = await new WebhookReceiver().start();
    const grpcPort = await freePort();
    server = `127.0.0.1:${grpcPort}`;
    const env = iso.env({
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      TICKWORK_TICK_MS: '100',
      TICKWORK_GRPC_PORT: String(grpcPort),
    });
    const pipeline = await startPipeline(env);
    api = pipeline.api;
    apps = pipeline.all;
    apiFetch = await contractFetch(api.url);
    grpc = new AdminTestClient(server);
  }, 120_000);

  afterAll(async () => {
    grpc?.close();
    await Promise.all(apps.map((a) => a.stop()));
    await receiver?.stop();
    await iso?.dispose();
  });

  it('REST: an every-2-seconds rule fires at its wall times, 3 times, and reads back as written', async () => {
    const dtstart = soonAsUtcWall(3_000);
    const created = await rest('POST', '/v1/jobs', {
      job_id: 'rrule-rest',
      schedule: { kind: 'rrule', rule: 'FREQ=SECONDLY;INTERVAL=2;COUNT=3', dtstart, time_zone: 'UTC' },
      target: { type: 'webhook', url: receiver.url('/rest') },
      payload: { via: 'rest' },
    });
    expect(created.status).toBe(201);
    expect(created.body.schedule).toEqual({
      kind: 'rrule',
      rule: 'FREQ=SECONDLY;INTERVAL=2;COUNT=3',
      dtstart,
      time_zone: 'UTC',
      exdates: [],
      dst_gap: 'AUTO',
      dst_repeat: 'AUTO',
    });
    expect(created.body.next_run_at).toBe(`${dtstart}.000Z`);

    const calls = await eventually(
      'three webhook calls',
      () => {
        const mine = receiver.calls.filter((c) => c.path === '/rest');
        return mine.length >= 3 ? mine : undefined;
      },
      60_000,
    );
    const first = Date.parse(`${dtstart}Z`);
    expect(calls.map((c) => c.headers['tickwork-scheduled-for'])).toEqual([
      new Date(first).toISOString(),
      new Date(first + 2_000).toISOString(),
      new Date(first + 4_000).toISOString(),
    ]);
    for (const c of calls)
      expect(c.at).toBeGreaterThanOrEqual(Date.parse(String(c.headers['tickwork-scheduled-for'])));
    // COUNT=3 is the rule's end: the job completes and nothing more fires.
    const job = await eventually('the job completed', async () => {
      const got = await rest('GET', '/v1/jobs/rrule-rest');
      return got.body.status === 'COMPLETED' ? got.body : undefined;
    });
    expect(job.fires_count).toBe(3);
    const ledger = await rest('GET', '/v1/jobs/rrule-rest/occurrences');
    expect((ledger.body.occurrences as Msg[]).filter((o) => o.outcome === 'FIRED')).toHaveLength(3);
  });

  it('REST preview: last Friday of each month at 17:00 in London across the DST change, with an EXDATE', async () => {
    const preview = await rest('POST', '/v1/schedules/preview', {
      schedule: {
        kind: 'rrule',
        rule: 'FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0',
        dtstart: '2026-01-01T00:00:00',
        time_zone: 'Europe/London',
        exdates: ['2026-04-24T17:00:00'],
      },
      count: 3,
      from: '2026-03-01T00:00:00Z',
    });
    expect(preview.status).toBe(200);
    expect(preview.body.fires).toEqual([
      { at: '2026-03-27T17:00:00.000Z', local_time: '2026-03-27T17:00:00+00:00', time_zone: 'Europe/London' },
      { at: '2026-05-29T16:00:00.000Z', local_time: '2026-05-29T17:00:00+01:00', time_zone: 'Europe/London' },
      { at: '2026-06-26T16:00:00.000Z', local_time: '2026-06-26T17:00:00+01:00', time_zone: 'Europe/London' },
    ]);
  });

  it('REST: bad rules are 400 naming the field', async () => {
    const job = (schedule: Record<string, unknown>) => ({
      schedule: { kind: 'rrule', dtstart: '2026-01-01T00:00:00', ...schedule },
      target: { type: 'webhook', url: receiver.url('/never') },
    });
    const cases: [Record<string, unknown>, string, string][] = [
      [{ rule: 'FREQ=YEARLY;BYWEEKNO=20' }, 'schedule.rule', 'BYWEEKNO is not supported'],
      [{ rule: 'FREQ=WEEKLY;BYDAY=-1FR' }, 'schedule.rule', 'only allowed with FREQ=MONTHLY or FREQ=YEARLY'],
      [{ rule: 'FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30' }, 'schedule.rule', 'would never fire'],
      [{ rule: 'FREQ=DAILY', dtstart: '2026-01-01T00:00:00Z' }, 'schedule.dtstart', 'without an offset'],
      [{ rule: 'FREQ=DAILY', exdates: ['tomorrow'] }, 'schedule.exdates[0]', 'must be a local wall time'],
      [{ rule: 'FREQ=DAILY', time_zone: 'Mars/Olympus' }, 'schedule.time_zone', 'unknown IANA time zone'],
    ];
    for (const [schedule, field, message] of cases) {
      const res = await rest('POST', '/v1/jobs', job(schedule));
      expect({ schedule, status: res.status }).toEqual({ schedule, status: 400 });
      expect(res.body.violations).toEqual(
        expect.arrayContaining([{ field, message: expect.stringContaining(message) }]),
      );
    }
    const preview = await rest('POST', '/v1/schedules/preview', {
      schedule: {
        kind: 'rrule',
        rule: 'FREQ=DAILY;COUNT=2;UNTIL=20270101T000000Z',
        dtstart: '2026-01-01T00:00:00',
      },
    });
    expect(preview.status).toBe(400);
    expect(preview.body.violations).toEqual([
      { field: 'schedule.rule', message: expect.stringContaining('COUNT and UNTIL must not both be given') },
    ]);
  });

  it('gRPC: CreateJob with an RruleSchedule fires; PreviewSchedule shows a SHIFT across the New York gap; violations name the field', async () => {
    const dtstart = soonAsUtcWall(3_000);
    const created = await grpc.ok('CreateJob', {
      job: {
        job_id: 'rrule-grpc',
        schedule: { rrule: { rule: 'FREQ=SECONDLY;INTERVAL=2', dtstart, time_zone: 'UTC', max_fires: 2 } },
        target: { webhook: { url: receiver.url('/grpc') } },
      },
    });
    expect(created.schedule).toMatchObject({
      rrule: { rule: 'FREQ=SECONDLY;INTERVAL=2', dtstart, time_zone: 'UTC', max_fires: 2 },
    });
    const calls = await eventually(
      'two webhook calls',
      () => {
        const mine = receiver.calls.filter((c) => c.path === '/grpc');
        return mine.length >= 2 ? mine : undefined;
      },
      60_000,
    );
    const first = Date.parse(`${dtstart}Z`);
    expect(calls.map((c) => c.headers['tickwork-scheduled-for'])).toEqual([
      new Date(first).toISOString(),
      new Date(first + 2_000).toISOString(),
    ]);

    const preview = await grpc.ok('PreviewSchedule', {
      schedule: {
        rrule: {
          rule: 'FREQ=DAILY;BYHOUR=2;BYMINUTE=30',
          dtstart: '2026-03-01T02:30:00',
          time_zone: 'America/New_York',
        },
      },
      count: 3,
      from: ts(new Date('2026-03-07T00:00:00Z')),
    });
    expect(
      (preview.fires as Msg[]).map((f) => [
        dateOf(f.at)?.toISOString(),
        f.local_time,
        f.shifted_from || null,
      ]),
    ).toEqual([
      ['2026-03-07T07:30:00.000Z', '2026-03-07T02:30:00-05:00', null],
      ['2026-03-08T07:30:00.000Z', '2026-03-08T03:30:00-04:00', '2026-03-08T02:30:00-05:00'],
      ['2026-03-09T06:30:00.000Z', '2026-03-09T02:30:00-04:00', null],
    ]);

    const bad = await grpc.call('CreateJob', {
      job: {
        schedule: { rrule: { rule: 'FREQ=DAILY;BYYEARDAY=1', dtstart: '2026-01-01' } },
        target: { webhook: { url: receiver.url('/never') } },
      },
    });
    expect(bad).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    expect(bad.ok ? [] : bad.violations.map((v) => v.field).sort()).toEqual([
      'job.schedule.rrule.dtstart',
      'job.schedule.rrule.rule',
    ]);
  });

  it('CLI: preview --rrule and create -f with an rrule schedule', async () => {
    const preview = await tickwork([
      'preview',
      '--rrule',
      'FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0',
      '--dtstart',
      '2026-01-01T00:00:00',
      '--tz',
      'Europe/London',
      '--from',
      '2026-03-01T00:00:00Z',
      '-n',
      '2',
    ]);
    expect(preview).toMatchObject({ code: 0 });
    expect(preview.stdout).toContain('2026-03-27T17:00:00.000Z  2026-03-27T17:00:00+00:00 Europe/London');
    expect(preview.stdout).toContain('2026-04-24T16:00:00.000Z  2026-04-24T17:00:00+01:00 Europe/London');

    const dir = mkdtempSync(join(tmpdir(), 'tickwork-rrule-'));
    const file = join(dir, 'job.yaml');
    writeFileSync(
      file,
      [
        'job_id: rrule-cli',
        'schedule: { kind: rrule, rule: "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0", dtstart: "2026-01-01T00:00:00", time_zone: Europe/London, exdates: ["2099-12-25T17:00:00"] }',
        `target: { type: webhook, url: "${receiver.url('/cli')}" }`,
      ].join('\n'),
    );
    const created = await tickwork(['create', '-f', file]);
    expect(created).toMatchObject({ code: 0 });
    expect(created.stdout).toContain(
      'rrule "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0" from 2026-01-01T00:00:00 Europe/London',
    );
    const bad = await tickwork([
      'preview',
      '--rrule',
      'FREQ=HOURLY;BYWEEKNO=3',
      '--dtstart',
      '2026-01-01T00:00:00',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('schedule.rrule.rule');
  });
});
