/**
 * Fire SLOs on the real stack (api, scheduler, executor, Kafka, registry, PostgreSQL): with no
 * executor running, a job's fire is not started by its next occurrence and the scheduler records
 * it MISSED; another job's fire, started when an executor finally comes up, is recorded LATE with
 * its lateness. Both show in the occurrence ledger over REST (checked against the OpenAPI document),
 * gRPC and the CLI, and in the scheduler's metrics (per tenant; per job only for the job that opted
 * in, with its dead-man gauges), which pass promtool. A scheduler killed with -9 whose successor
 * sweeps every shard again from the start records nothing twice.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { AdminTestClient, type Msg } from '../support/admin-client';
import { startApp, type AppProcess } from '../support/apps';
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

interface Occ {
  outcome: string;
  nominal_time: string;
  fence_token?: number;
  reason: string | null;
  lateness_ms?: number | null;
  run_status?: string | null;
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

function promtoolCheckMetrics(text: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.once('error', (e) =>
      reject(new Error(`promtool is not installed (apt-get install prometheus): ${e.message}`)),
    );
    child.once('close', (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}

describe('fire SLOs: LATE and MISSED in the occurrence ledger', () => {
  let iso: Isolation;
  let receiver: WebhookReceiver;
  let api: AppProcess;
  let scheduler: AppProcess | undefined;
  let executor: AppProcess | undefined;
  let db: Client;
  let grpc: AdminTestClient;
  let grpcAddress: string;
  let apiFetch: typeof fetch;
  let env: Record<string, string>;

  const startScheduler = async () => {
    scheduler = startApp('scheduler', env, await freePort());
    await scheduler.ready();
  };
  const occurrences = async (jobId: string): Promise<Occ[]> => {
    const res = await apiFetch(`${api.url}/v1/jobs/${jobId}/occurrences`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { occurrences: Occ[] }).occurrences;
  };
  const schedulerMetrics = async () => {
    const text = await (await fetch(`${scheduler!.url}/metrics`)).text();
    return { text, samples: parseMetrics(text) };
  };
  const waitFor = <T>(what: string, check: () => Promise<T | undefined>, ms = 60_000) =>
    eventually(what, check, ms, 250).catch((e: Error) => {
      throw new Error(
        `${e.message}\n--- scheduler ---\n${scheduler?.tail(30) ?? ''}\n--- executor ---\n${executor?.tail(30) ?? ''}`,
      );
    });
  const sloRows = async () =>
    (
      await db.query<{
        job_id: string;
        fence_token: string;
        reason: string;
        lateness_ms: string | null;
        recorded_at: Date;
      }>(
        'SELECT job_id, fence_token, reason, lateness_ms, recorded_at FROM occurrence_slo ORDER BY job_id, fence_token',
      )
    ).rows.map((r) => ({ ...r, recorded_at: r.recorded_at.toISOString() }));

  beforeAll(async () => {
    iso = isolate('fireslo');
    receiver = await new WebhookReceiver().start();
    const grpcPort = await freePort();
    grpcAddress = `127.0.0.1:${grpcPort}`;
    env = iso.env({
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      TICKWORK_TICK_MS: '100',
      TICKWORK_SLO_SWEEP_MS: '300',
      TICKWORK_GRPC_PORT: String(grpcPort),
    });
    api = startApp('api', env, await freePort());
    await api.ready();
    apiFetch = await contractFetch(api.url);
    grpc = new AdminTestClient(grpcAddress);
    db = new Client({ connectionString: iso.databaseUrl });
    await db.connect();
    await startScheduler();
  }, 120_000);

  afterAll(async () => {
    grpc?.close();
    await Promise.all([api, scheduler, executor].map((a) => a?.stop()));
    await db?.end();
    await receiver?.stop();
    await iso?.dispose();
  });

  it('records MISSED with no executor, LATE once one starts late, each once, on every interface', async () => {
    // Both jobs' first occurrence a few seconds from now (on a whole second).
    const anchor = new Date(Math.ceil((Date.now() + 4_000) / 1000) * 1000);
    // Opted in to per-job metrics; its next occurrence is 2 minutes on, so a run started within
    // that time (however slowly the executor starts on a loaded box) is LATE, not MISSED.
    const created = await apiFetch(`${api.url}/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        job_id: 'slo-late',
        tenant_id: 'acme',
        schedule: { kind: 'interval', every_ms: 120_000, anchor: anchor.toISOString() },
        target: { type: 'webhook', url: receiver.url('/late') },
        policies: { tolerance_ms: 1_000, slo_metrics: true },
      }),
    });
    expect(created.status).toBe(201);
    const job = (await created.json()) as { policies: Record<string, unknown>; next_nominal_at: string };
    expect(job.policies).toMatchObject({ tolerance_ms: 1_000, slo_metrics: true });
    expect(job.next_nominal_at).toBe(anchor.toISOString());

    // Over gRPC: every 4 s, so with no executor its first fire is MISSED 4 s after its nominal time.
    const viaGrpc = await grpc.ok('CreateJob', {
      job: {
        job_id: 'slo-missed',
        tenant_id: 'acme',
        schedule: { interval: { every_ms: 4_000, anchor: { seconds: anchor.getTime() / 1000 } } },
        target: { webhook: { url: receiver.url('/missed') } },
        policies: { tolerance_ms: 500 },
      },
    });
    expect((viaGrpc.policies as Msg).tolerance_ms).toBe(500);
    expect((viaGrpc.policies as Msg).slo_metrics).toBeFalsy();

    // Refused with the field named, on REST and gRPC.
    const bad = await apiFetch(`${api.url}/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        schedule: { kind: 'interval', every_ms: 60_000 },
        target: { type: 'webhook', url: receiver.url('/x') },
        policies: { tolerance_ms: -5, slo_metrics: 'yes' },
      }),
    });
    expect(bad.status).toBe(400);
    expect(
      ((await bad.json()) as { violations: { field: string }[] }).violations.map((v) => v.field),
    ).toEqual(expect.arrayContaining(['policies.tolerance_ms', 'policies.slo_metrics']));
    const badGrpc = await grpc.call('CreateJob', {
      job: {
        schedule: { interval: { every_ms: 60_000 } },
        target: { webhook: { url: receiver.url('/x') } },
        policies: { tolerance_ms: -1 },
      },
    });
    expect(badGrpc.ok ? [] : badGrpc.violations.map((v) => v.field)).toEqual(['job.policies.tolerance_ms']);

    // No executor is running: the first fire of slo-missed is never started by its next occurrence.
    const missed = await waitFor('slo-missed to have a MISSED occurrence', async () => {
      const occ = await occurrences('slo-missed');
      return occ.find((o) => o.reason === 'MISSED');
    });
    expect(missed).toMatchObject({ outcome: 'FIRED', nominal_time: anchor.toISOString(), lateness_ms: null });
    // slo-late's fire is claimed and late, but its deadline (the next occurrence) is far: not judged yet.
    const lateBefore = await occurrences('slo-late');
    expect(lateBefore.map((o) => [o.outcome, o.reason])).toEqual([['FIRED', null]]);

    // An executor comes up and starts the waiting fires: slo-late's is LATE, by how late it started.
    const executorUpAt = Date.now();
    executor = startApp('executor', env, await freePort());
    await executor.ready();
    // LATE is judged when the run starts; wait for the run to finish too, or its status may read RUNNING.
    const late = await waitFor('slo-late to have a LATE occurrence whose run succeeded', async () => {
      const occ = await occurrences('slo-late');
      return occ.find((o) => o.reason === 'LATE' && o.run_status === 'SUCCEEDED');
    });
    expect(late).toMatchObject({
      outcome: 'FIRED',
      nominal_time: anchor.toISOString(),
      run_status: 'SUCCEEDED',
    });
    expect(late.lateness_ms).toBeGreaterThan(1_000);
    expect(late.lateness_ms).toBeLessThanOrEqual(Date.now() - anchor.getTime());
    expect(late.lateness_ms).toBeGreaterThanOrEqual(executorUpAt - anchor.getTime());
    // The fire that was MISSED stays MISSED though it ran in the end.
    await waitFor('the MISSED fire to have run', async () =>
      (await occurrences('slo-missed')).some((o) => o.reason === 'MISSED' && o.run_status === 'SUCCEEDED')
        ? true
        : undefined,
    );

    // gRPC shows the same verdicts.
    const lateGrpc = (await grpc.ok('ListOccurrences', { job_id: 'slo-late' })).occurrences as Msg[];
    expect(lateGrpc.find((o) => o.reason === 'LATE')).toMatchObject({
      outcome: 'OCCURRENCE_OUTCOME_FIRED',
      fence_token: late.fence_token,
      lateness_ms: late.lateness_ms,
    });
    const missedGrpc = (await grpc.ok('ListOccurrences', { job_id: 'slo-missed' })).occurrences as Msg[];
    const m = missedGrpc.find((o) => o.fence_token === missed.fence_token);
    expect(m).toMatchObject({ outcome: 'OCCURRENCE_OUTCOME_FIRED', reason: 'MISSED' });
    expect(m?.lateness_ms).toBeUndefined();

    // The CLI's ledger table names them; a bad tolerance in a job file is refused naming the field.
    const cli = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
        execFile(
          process.execPath,
          [CLI, '--timeout', '30000', ...args],
          { env: { PATH: process.env.PATH ?? '', TICKWORK_SERVER: grpcAddress }, timeout: 60_000 },
          (err, stdout, stderr) =>
            done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    const table = await cli(['occurrences', 'slo-late']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/FIRED .*LATE by \d+\.\ds/);
    expect((await cli(['occurrences', 'slo-missed'])).stdout).toMatch(/MISSED/);
    const dir = mkdtempSync(join(tmpdir(), 'tickwork-slo-'));
    writeFileSync(
      join(dir, 'bad.yaml'),
      'schedule: { kind: interval, every_ms: 60000 }\ntarget: { type: webhook, url: "http://127.0.0.1:1/x" }\npolicies: { tolerance_ms: "1m" }\n',
    );
    const refused = await cli(['create', '-f', join(dir, 'bad.yaml')]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/policies\.tolerance_ms/);

    // Metrics: per tenant always; per job only for slo-late (opted in), with its dead-man gauges.
    const { text, samples } = await waitFor('the SLO series on /metrics', async () => {
      const s = await schedulerMetrics();
      const has = (name: string, labels: Record<string, string>) =>
        s.samples.some((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
      return has('tickwork_fire_slo_verdicts_total', { tenant: 'acme', result: 'MISSED' }) &&
        has('tickwork_fire_slo_verdicts_total', { tenant: 'acme', result: 'LATE' }) &&
        has('tickwork_job_last_success_timestamp_seconds', { job_id: 'slo-late' })
        ? s
        : undefined;
    });
    expect(samples.filter((x) => x.labels.job_id === 'slo-missed')).toEqual([]);
    expect(
      samples.find((x) => x.name === 'tickwork_job_slo_verdicts_total' && x.labels.job_id === 'slo-late'),
    ).toMatchObject({ labels: { tenant: 'acme', job_id: 'slo-late', result: 'LATE' }, value: 1 });
    expect(
      samples.find((x) => x.name === 'tickwork_job_interval_seconds' && x.labels.job_id === 'slo-late')
        ?.value,
    ).toBe(120);
    const lastSuccess = samples.find(
      (x) => x.name === 'tickwork_job_last_success_timestamp_seconds' && x.labels.job_id === 'slo-late',
    )!.value;
    expect(lastSuccess * 1000).toBeGreaterThanOrEqual(anchor.getTime());
    expect(await promtoolCheckMetrics(text)).toEqual({ code: 0, output: '' });

    // Crash-safety: stop new fires, kill -9 the scheduler, make its successor sweep every shard
    // from the start: every verdict stays exactly as it was, and none is added or counted again.
    expect((await apiFetch(`${api.url}/v1/jobs/slo-missed/pause`, { method: 'POST' })).status).toBe(200);
    await waitFor('the paused job to settle (every batch swept, no fire left unjudged)', async () => {
      const { rows } = await db.query<{ unswept: string; watched: string }>(
        `SELECT (SELECT count(*) FROM fire_batches b
                  WHERE b.trigger = 'SCHEDULE'
                    AND NOT EXISTS (SELECT 1 FROM slo_sweep_marks m WHERE m.shard = b.shard AND m.next_batch_id > b.batch_id)) AS unswept,
                (SELECT count(*) FROM slo_watch) AS watched`,
      );
      return Number(rows[0]!.unswept) === 0 && Number(rows[0]!.watched) === 0 ? true : undefined;
    });
    const before = await sloRows();
    expect(before.filter((r) => r.job_id === 'slo-late').map((r) => r.reason)).toEqual(['LATE']);
    expect(before.filter((r) => r.job_id === 'slo-missed').map((r) => r.reason)).toContain('MISSED');
    await scheduler!.kill();
    const resetAt = (await db.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now;
    await db.query('UPDATE slo_sweep_marks SET next_batch_id = (SELECT next_batch_id FROM slo_sweep_floor)');
    await startScheduler();
    await waitFor('every shard swept again by the new scheduler', async () => {
      const { rows } = await db.query<{ stale: string }>(
        `SELECT count(*) AS stale FROM slo_sweep_marks
          WHERE swept_at <= $1`,
        [resetAt],
      );
      const marks = await db.query<{ n: string }>('SELECT count(*) AS n FROM slo_sweep_marks');
      return Number(rows[0]!.stale) === 0 && Number(marks.rows[0]!.n) > 0 ? true : undefined;
    });
    expect(await sloRows()).toEqual(before);
    const after = await schedulerMetrics();
    expect(
      after.samples.filter(
        (x) =>
          x.name === 'tickwork_fire_slo_verdicts_total' &&
          (x.labels.result === 'LATE' || x.labels.result === 'MISSED'),
      ),
    ).toEqual([]);
  });
});
