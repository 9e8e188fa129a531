/**
 * Herd windows end to end, over REST and gRPC, against real api, scheduler and executor processes:
 * a job with policies.spread_ms fires at its slot (a stable hash of job id and occurrence inside
 * [nominal, nominal + spread)), the slot the preview showed; the ledger, runs and the lateness view
 * keep the nominal time and show the slot's offset beside it, lateness counted from the nominal
 * time; and the Jenkins-style H token places a cron's fields per job. Avro ScheduleCommands from an
 * outside producer carry spread_ms too.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { status } from '@grpc/grpc-js';
// eslint-disable-next-line no-restricted-imports -- the test plays an outside producer, not Tickwork code
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
// eslint-disable-next-line no-restricted-imports -- the test plays an outside producer, not Tickwork code
import { Kafka, logLevel } from 'kafkajs';
import { Client as Pg } from 'pg';
import { AdminTestClient, type Msg } from '../support/admin-client';
import { type AppProcess, startPipeline } from '../support/apps';
import { eventually, freePort, isolate, STACK, type Isolation } from '../support/env';
import { contractFetch } from '../support/openapi';
import { WebhookReceiver } from '../support/receiver';

interface PreviewJson {
  fires: { at: string; slot_at?: string; spread_offset_ms?: number }[];
  resolved_expression?: string;
}
interface RunJson {
  fence_token: number;
  nominal_time: string;
  scheduled_for: string;
  started_at: string | null;
  spread_offset_ms: number;
  lateness_ms: number | null;
  status: string;
}

const ms = (iso: string) => new Date(iso).getTime();
const tsMs = (t: unknown) => {
  const m = t as { seconds: number; nanos?: number };
  return Number(m.seconds) * 1000 + Math.floor((m.nanos ?? 0) / 1e6);
};

describe('herd windows (spread_ms) and the H token', () => {
  let iso: Isolation;
  let receiver: WebhookReceiver;
  let apps: AppProcess[] = [];
  let api: AppProcess;
  let apiFetch: typeof fetch;
  let grpc: AdminTestClient;
  let grpcAddress: string;

  beforeAll(async () => {
    iso = isolate('herd');
    receiver = await new WebhookReceiver().start();
    const grpcPort = await freePort();
    const env = iso.env({
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      TICKWORK_TICK_MS: '100',
      TICKWORK_GRPC_PORT: String(grpcPort),
    });
    const pipeline = await startPipeline(env);
    api = pipeline.api;
    apps = pipeline.all;
    apiFetch = await contractFetch(api.url);
    grpcAddress = `127.0.0.1:${grpcPort}`;
    grpc = new AdminTestClient(grpcAddress);
  }, 120_000);

  afterAll(async () => {
    grpc?.close();
    await Promise.all(apps.map((a) => a.stop()));
    await receiver?.stop();
    await iso?.dispose();
  });

  const post = async (path: string, body: unknown) => {
    const r = await apiFetch(`${api.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };
  const get = async <T>(path: string) => (await (await apiFetch(`${api.url}${path}`)).json()) as T;

  it('REST: fires land at the slots the preview showed; lateness counts from the nominal time', async () => {
    const jobId = 'herd-rest';
    // Every 10 s from a second the job's H places, in a window of 8 s.
    const schedule = { kind: 'cron', expression: 'H/10 * * * * *', time_zone: 'UTC' };
    const created = await post('/v1/jobs', {
      job_id: jobId,
      schedule,
      target: { type: 'webhook', url: receiver.url('/rest') },
      policies: { spread_ms: 8_000 },
    });
    expect(created.status).toBe(201);
    const job = created.body as {
      next_run_at: string;
      next_nominal_at: string;
      policies: { spread_ms: number; jitter_ms: number };
    };
    expect(job.policies).toMatchObject({ spread_ms: 8_000, jitter_ms: 0 });

    // The preview for this job, from its first occurrence: the H resolved, and each slot.
    const preview = await post('/v1/schedules/preview', {
      schedule,
      job_id: jobId,
      spread_ms: 8_000,
      from: job.next_nominal_at,
      count: 20,
    });
    expect(preview.status).toBe(200);
    const p = preview.body as unknown as PreviewJson;
    const start = Number(p.resolved_expression?.split('-')[0]);
    expect(p.resolved_expression).toBe(`${start}-59/10 * * * * *`);
    expect(start).toBeLessThan(10);
    const slotOf = new Map<number, { slot: number; offset: number }>();
    for (const f of p.fires) {
      expect(new Date(f.at).getUTCSeconds() % 10).toBe(start);
      expect(f.spread_offset_ms).toBeGreaterThanOrEqual(0);
      expect(f.spread_offset_ms).toBeLessThan(8_000);
      expect(ms(f.slot_at!)).toBe(ms(f.at) + f.spread_offset_ms!);
      slotOf.set(ms(f.at), { slot: ms(f.slot_at!), offset: f.spread_offset_ms! });
    }
    // The job's stored next run is the slot of its next nominal time.
    expect(ms(job.next_run_at)).toBe(slotOf.get(ms(job.next_nominal_at))!.slot);

    // Three fires: each webhook call at or after its slot, carrying the slot as its scheduled time.
    const calls = await eventually(
      'three fires of the spread job',
      () => {
        const c = receiver.calls.filter((x) => x.path === '/rest');
        return c.length >= 3 ? c.slice(0, 3) : undefined;
      },
      60_000,
    );
    const runs = await eventually('three finished runs', async () => {
      const r = await get<{ runs: RunJson[] }>(`/v1/jobs/${jobId}/runs`);
      const done = r.runs.filter((x) => x.status === 'SUCCEEDED');
      return done.length >= 3 ? done : undefined;
    });
    for (const run of runs) {
      const planned = slotOf.get(ms(run.nominal_time));
      expect(planned).toBeDefined();
      expect(ms(run.scheduled_for)).toBe(planned!.slot);
      expect(run.spread_offset_ms).toBe(planned!.offset);
      // Lateness from the nominal time: the offset is part of it; what is beyond the slot is small.
      expect(run.lateness_ms).toBe(ms(run.started_at!) - ms(run.nominal_time));
      expect(run.lateness_ms!).toBeGreaterThanOrEqual(run.spread_offset_ms);
      expect(run.lateness_ms! - run.spread_offset_ms).toBeLessThan(5_000);
      const call = calls.find((c) => c.headers['tickwork-fence-token'] === String(run.fence_token));
      if (call) {
        expect(call.headers['tickwork-scheduled-for']).toBe(run.scheduled_for);
        expect(call.at).toBeGreaterThanOrEqual(planned!.slot);
      }
    }
    for (const c of calls) {
      const slot = ms(String(c.headers['tickwork-scheduled-for']));
      expect([...slotOf.values()].some((s) => s.slot === slot)).toBe(true);
      expect(c.at).toBeGreaterThanOrEqual(slot);
    }

    // The occurrence ledger: nominal time, and the slot's offset beside the scheduled time.
    const ledger = await get<{
      occurrences: {
        outcome: string;
        nominal_time: string;
        scheduled_for?: string;
        spread_offset_ms?: number;
      }[];
    }>(`/v1/jobs/${jobId}/occurrences`);
    const fired = ledger.occurrences.filter((o) => o.outcome === 'FIRED');
    expect(fired.length).toBeGreaterThanOrEqual(3);
    for (const o of fired) {
      const planned = slotOf.get(ms(o.nominal_time))!;
      expect(o.spread_offset_ms).toBe(planned.offset);
      expect(ms(o.scheduled_for!)).toBe(planned.slot);
    }

    // The lateness view counts from the nominal time too: no run is less late than its offset.
    const lateness = await get<{ by_job: { key: string; runs: number; p99_ms: number | null }[] }>(
      `/v1/lateness?window=hour&job_id=${jobId}`,
    );
    const mine = lateness.by_job.find((r) => r.key === jobId)!;
    expect(mine.runs).toBeGreaterThanOrEqual(3);
    expect(mine.p99_ms!).toBeGreaterThanOrEqual(Math.min(...runs.map((r) => r.spread_offset_ms)));
  });

  it('REST: refuses a window wider than the schedule, with jitter, or a preview without the job id', async () => {
    const base = { target: { type: 'webhook', url: receiver.url('/never') } };
    const wide = await post('/v1/jobs', {
      ...base,
      schedule: { kind: 'cron', expression: '*/30 * * * * *' },
      policies: { spread_ms: 30_001 },
    });
    expect(wide.status).toBe(400);
    expect(wide.body.violations).toEqual([
      { field: 'policies.spread_ms', message: expect.stringContaining('at most 30000 ms') },
    ]);
    const both = await post('/v1/jobs', {
      ...base,
      schedule: { kind: 'interval', every_ms: 60_000 },
      policies: { spread_ms: 1_000, jitter_ms: 1_000 },
    });
    expect(both.status).toBe(400);
    expect(both.body.violations).toEqual([
      { field: 'policies.spread_ms', message: expect.stringContaining('jitter_ms') },
    ]);
    const badH = await post('/v1/jobs', {
      ...base,
      schedule: { kind: 'cron', expression: 'H(40-20) 9 * * *' },
    });
    expect(badH.status).toBe(400);
    expect((badH.body.violations as { field: string }[])[0]!.field).toBe('schedule.expression');
    const anonymous = await post('/v1/schedules/preview', {
      schedule: { kind: 'cron', expression: 'H 9 * * *' },
    });
    expect(anonymous.status).toBe(400);
    expect((anonymous.body.violations as { field: string }[])[0]!.field).toBe('job_id');
    const tooWide = await post('/v1/schedules/preview', {
      schedule: { kind: 'interval', every_ms: 10_000 },
      job_id: 'x',
      spread_ms: 10_001,
    });
    expect(tooWide.status).toBe(400);
    expect((tooWide.body.violations as { field: string }[])[0]!.field).toBe('spread_ms');
    const none = await get<{ jobs: unknown[] }>('/v1/jobs?job_id_prefix=never');
    expect(none.jobs ?? []).toEqual([]);
  });

  it('gRPC: the same windows through CreateJob, PreviewSchedule, ListRuns and ListOccurrences', async () => {
    const jobId = 'herd-grpc';
    const anchor = { seconds: Math.floor(Date.now() / 10_000) * 10 + 10, nanos: 0 };
    const schedule = { interval: { every_ms: 10_000, anchor } };
    const created = await grpc.call('CreateJob', {
      job: {
        job_id: jobId,
        schedule,
        target: { webhook: { url: receiver.url('/grpc') } },
        policies: { spread_ms: 9_000 },
      },
    });
    if (!created.ok) throw new Error(`CreateJob failed: ${created.details}`);
    const job = created.res as Msg & { policies: Msg; next_run_at: unknown; next_nominal_at: unknown };
    expect(Number(job.policies.spread_ms)).toBe(9_000);

    const preview = await grpc.call('PreviewSchedule', {
      schedule,
      job_id: jobId,
      spread_ms: 9_000,
      from: job.next_nominal_at,
      count: 20,
    });
    if (!preview.ok) throw new Error(`PreviewSchedule failed: ${preview.details}`);
    const fires = preview.res.fires as { at: unknown; slot_at: unknown; spread_offset_ms: number }[];
    const slotOf = new Map(
      fires.map((f) => [tsMs(f.at), { slot: tsMs(f.slot_at), offset: Number(f.spread_offset_ms) }]),
    );
    for (const f of fires) expect(tsMs(f.slot_at)).toBe(tsMs(f.at) + Number(f.spread_offset_ms));
    expect(tsMs(job.next_run_at)).toBe(slotOf.get(tsMs(job.next_nominal_at))!.slot);

    const runs = await eventually(
      'two finished runs over gRPC',
      async () => {
        const r = await grpc.call('ListRuns', { job_id: jobId });
        if (!r.ok) return undefined;
        const done = ((r.res.runs ?? []) as Msg[]).filter((x) => x.status === 'RUN_STATUS_SUCCEEDED');
        return done.length >= 2 ? done : undefined;
      },
      60_000,
    );
    for (const run of runs) {
      const planned = slotOf.get(tsMs(run.nominal_time))!;
      expect(tsMs(run.scheduled_for)).toBe(planned.slot);
      expect(Number(run.spread_offset_ms ?? 0)).toBe(planned.offset);
      // Started at or after the slot, and not long after it.
      expect(tsMs(run.started_at)).toBeGreaterThanOrEqual(planned.slot - 5);
      expect(tsMs(run.started_at) - planned.slot).toBeLessThan(5_000);
    }
    const occurrences = await grpc.call('ListOccurrences', { job_id: jobId });
    if (!occurrences.ok) throw new Error(occurrences.details);
    const fired = ((occurrences.res.occurrences ?? []) as Msg[]).filter(
      (o) => o.outcome === 'OCCURRENCE_OUTCOME_FIRED',
    );
    expect(fired.length).toBeGreaterThanOrEqual(2);
    for (const o of fired)
      expect(Number(o.spread_offset_ms ?? 0)).toBe(slotOf.get(tsMs(o.nominal_time))!.offset);

    // H through gRPC's preview, and a window too wide refused naming the field.
    const hashed = await grpc.call('PreviewSchedule', {
      schedule: { cron: { expression: 'H 9 * * *', time_zone: 'Europe/London' } },
      job_id: jobId,
      count: 2,
    });
    if (!hashed.ok) throw new Error(hashed.details);
    expect(hashed.res.resolved_expression).toMatch(/^\d{1,2} 9 \* \* \*$/);
    const wide = await grpc.call('CreateJob', {
      job: {
        schedule: { interval: { every_ms: 10_000 } },
        target: { webhook: { url: receiver.url('/never') } },
        policies: { spread_ms: 10_001 },
      },
    });
    expect(wide).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    if (!wide.ok) expect(wide.violations.map((v) => v.field)).toContain('job.policies.spread_ms');
  });

  it('Kafka: an Avro UPSERT with spread_ms and H is applied; a window too wide is rejected naming the field', async () => {
    const topic = `${iso.topicPrefix}.commands`;
    const registry = new SchemaRegistry({ host: STACK.registryUrl });
    const schemaId = await registry.getLatestSchemaId(`${topic}-value`);
    const kafka = new Kafka({
      clientId: 'herd-producer',
      brokers: STACK.kafkaBrokers.split(','),
      logLevel: logLevel.NOTHING,
    });
    const producer = kafka.producer();
    await producer.connect();
    const db = new Pg({ connectionString: iso.databaseUrl });
    await db.connect();
    const NS = 'io.tickwork.v1';
    const upsert = (jobId: string, spreadMs: number, commandId: string) => ({
      command_id: commandId,
      type: 'UPSERT',
      tenant_id: 'default',
      job_id: jobId,
      issued_at: Date.now(),
      expected_version: null,
      job: {
        schedule: {
          [`${NS}.CronSchedule`]: {
            expression: 'H 9 * * *',
            time_zone: 'Europe/London',
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
        // A union of null and one record is written unwrapped (avsc), unlike the schedule's.
        policies: {
          misfire: 'FIRE_ONCE',
          catch_up_window_ms: null,
          overlap: 'ALLOW',
          jitter_ms: 0,
          retry: null,
          spread_ms: spreadMs,
        },
        labels: {},
      },
    });
    try {
      const wideId = randomUUID();
      for (const [jobId, spread, commandId] of [
        ['herd-kafka', 600_000, randomUUID()],
        ['herd-kafka-wide', 86_400_001, wideId],
      ] as const) {
        await producer.send({
          topic,
          messages: [
            { key: jobId, value: await registry.encode(schemaId, upsert(jobId, spread, commandId)) },
          ],
        });
      }
      const job = await eventually('the UPSERT applied', async () => {
        const r = await grpc.call('GetJob', { job_id: 'herd-kafka' });
        return r.ok ? r.res : undefined;
      });
      expect(Number((job.policies as Msg).spread_ms)).toBe(600_000);
      const preview = await grpc.call('PreviewSchedule', {
        schedule: { cron: { expression: 'H 9 * * *', time_zone: 'Europe/London' } },
        job_id: 'herd-kafka',
        spread_ms: 600_000,
        from: job.next_nominal_at,
        count: 1,
      });
      if (!preview.ok) throw new Error(preview.details);
      const first = (preview.res.fires as Msg[])[0]!;
      expect(tsMs(first.at)).toBe(tsMs(job.next_nominal_at));
      expect(tsMs(first.slot_at)).toBe(tsMs(job.next_run_at));
      expect(new Date(tsMs(job.next_nominal_at)).getUTCMinutes()).toBe(
        Number(String(preview.res.resolved_expression).split(' ')[0]),
      );
      const rejected = await eventually('the wide UPSERT rejected', async () => {
        const r = await db.query<{ outcome: string; reason: string }>(
          'SELECT outcome, reason FROM applied_commands WHERE command_id = $1',
          [wideId],
        );
        return r.rows[0];
      });
      expect(rejected.outcome).toBe('INVALID_JOB');
      expect(rejected.reason).toContain('spread_ms');
    } finally {
      await producer.disconnect();
      await db.end();
    }
  });

  it('CLI: preview --job --spread shows the nominal time, the slot and its offset; runs show the offset', async () => {
    const cli = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
        execFile(
          process.execPath,
          [resolve(__dirname, '..', '..', 'dist', 'apps', 'cli', 'src', 'main.js'), ...args],
          { env: { PATH: process.env.PATH ?? '', TICKWORK_SERVER: grpcAddress }, timeout: 60_000 },
          (err, stdout, stderr) =>
            done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    const preview = await cli([
      'preview',
      '--cron',
      'H * * * *',
      '--job',
      'herd-cli',
      '--spread',
      '300000',
      '--from',
      '2026-12-03T13:30:00Z',
      '-n',
      '2',
    ]);
    expect(preview).toMatchObject({ code: 0, stderr: '' });
    const lines = preview.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^H resolves to: \d{1,2} \* \* \* \*$/);
    expect(lines[1]).toMatch(/^#\s+UTC\s+LOCAL\s+SLOT\s+OFFSET_MS$/);
    const json = await cli([
      '--json',
      'preview',
      '--cron',
      'H * * * *',
      '--job',
      'herd-cli',
      '--spread',
      '300000',
      '-n',
      '2',
    ]);
    const fires = (
      JSON.parse(json.stdout) as { fires: { at: string; slot_at: string; spread_offset_ms: number }[] }
    ).fires;
    expect(fires).toHaveLength(2);
    for (const f of fires) expect(ms(f.slot_at) - ms(f.at)).toBe(Number(f.spread_offset_ms));
    // Each row: #, UTC, LOCAL (time and zone), SLOT, OFFSET_MS.
    for (const row of lines.slice(2)) expect(row.split(/\s+/)).toHaveLength(6);
    // Runs of the gRPC test's job (above, same processes) show the nominal time and the slot's offset.
    const runs = await cli(['runs', 'herd-grpc']);
    expect(runs.code).toBe(0);
    expect(runs.stdout.split('\n')[0]).toMatch(/^FENCE\s+NOMINAL_TIME\s+SLOT_OFFSET_MS\s+STATUS/);
    const bad = await cli(['preview', '--cron', 'H 9 * * *']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('job_id');
  });
});
