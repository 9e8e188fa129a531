/**
 * The first end-to-end fire, every hop real: REST → PostgreSQL → scheduler claim → Kafka
 * (Avro via the schema registry) → executor → webhook → job_runs → fire-results on Kafka.
 */
import { Client } from 'pg';
import type { FireResult } from '@tickwork/domain';
import { EventCodecs } from '@tickwork/messaging';
import { startApp, type AppProcess } from '../support/apps';
import { eventually, freePort, isolate, STACK, type Isolation } from '../support/env';
import { TopicTap } from '../support/kafka';
import { contractFetch } from '../support/openapi';
import { WebhookReceiver } from '../support/receiver';

describe('first end-to-end fire', () => {
  let iso: Isolation;
  let receiver: WebhookReceiver;
  let apps: AppProcess[] = [];
  let api: AppProcess;
  let db: Client;
  /** Every REST response checked against the served OpenAPI document. */
  let apiFetch: typeof fetch;

  beforeAll(async () => {
    iso = isolate('firstfire');
    receiver = await new WebhookReceiver().start();
    // Its own gRPC port too, so it can run beside other tests that start an API (no tokens: auth is off).
    const env = iso.env({
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      TICKWORK_TICK_MS: '100',
      TICKWORK_GRPC_PORT: String(await freePort()),
    });
    api = startApp('api', env, await freePort());
    // The API creates and migrates the database; the others then start against it.
    await api.ready();
    apiFetch = await contractFetch(api.url);
    const scheduler = startApp('scheduler', env, await freePort());
    const executor = startApp('executor', env, await freePort());
    apps = [api, scheduler, executor];
    await Promise.all([scheduler.ready(), executor.ready()]);
    db = new Client({ connectionString: iso.databaseUrl });
    await db.connect();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await db?.end();
    await receiver?.stop();
    await iso?.dispose();
  });

  it('fires a one-shot webhook job exactly once and publishes its result', async () => {
    const due = new Date(Date.now() + 1_500);
    const res = await apiFetch(`${api.url}/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        tenant_id: 'acme',
        schedule: { kind: 'once', at: due.toISOString() },
        target: { type: 'webhook', url: receiver.url('/hook'), method: 'POST' },
        payload: { hello: 'world' },
      }),
    });
    expect(res.status).toBe(201);
    const created = (await res.json()) as {
      job_id: string;
      shard: number;
      status: string;
      next_run_at: string;
    };
    expect(created.status).toBe('SCHEDULED');
    expect(created.next_run_at).toBe(due.toISOString());
    const stored = await db.query<{ shard: number }>('SELECT shard FROM jobs WHERE job_id = $1', [
      created.job_id,
    ]);
    expect(stored.rows[0]?.shard).toBe(created.shard);

    // The webhook is called once, not before its time.
    await eventually('the webhook call', () => (receiver.calls.length > 0 ? true : undefined), 30_000);
    const call = receiver.calls[0]!;
    expect(call.at).toBeGreaterThanOrEqual(due.getTime());
    expect(call.method).toBe('POST');
    expect(call.path).toBe('/hook');
    expect(JSON.parse(call.body)).toEqual({ hello: 'world' });
    expect(call.headers['tickwork-job-id']).toBe(created.job_id);
    expect(call.headers['tickwork-fence-token']).toBe('1');
    expect(call.headers['webhook-id']).toBe(`${created.job_id}:1`);

    // job_runs holds one SUCCEEDED row, and the job is done.
    const runs = await eventually('a SUCCEEDED run', async () => {
      const r = await db.query<{ status: string; fence_token: string }>(
        'SELECT status, fence_token FROM job_runs WHERE job_id = $1',
        [created.job_id],
      );
      return r.rows.length === 1 && r.rows[0]!.status === 'SUCCEEDED' ? r.rows : undefined;
    });
    expect(runs).toEqual([{ status: 'SUCCEEDED', fence_token: '1' }]);

    // GET shows the job and its last run.
    const got = (await (await apiFetch(`${api.url}/v1/jobs/${created.job_id}`)).json()) as {
      status: string;
      fires_count: number;
      last_run: { status: string; fence_token: number; http_status: number } | null;
    };
    expect(got.status).toBe('COMPLETED');
    expect(got.fires_count).toBe(1);
    expect(got.last_run).toMatchObject({ status: 'SUCCEEDED', fence_token: 1, http_status: 200 });

    // The result event is on Kafka, in the Confluent wire format, decodable through the registry.
    const tap = await TopicTap.open(`${iso.topicPrefix}.fire-results`);
    try {
      const codecs = await EventCodecs.connect(STACK.registryUrl, {
        fireTopics: [],
        resultTopics: [`${iso.topicPrefix}.fire-results`],
      });
      const results: FireResult[] = await eventually('the fire result event', async () => {
        const decoded = await Promise.all(tap.messages.map((m) => codecs.decodeResult(m.value)));
        const mine = decoded.filter((r) => r.jobId === created.job_id);
        return mine.length > 0 ? mine : undefined;
      });
      expect(tap.messages[0]!.value![0]).toBe(0); // magic byte
      expect(results[0]).toMatchObject({
        jobId: created.job_id,
        tenantId: 'acme',
        fenceToken: 1,
        outcome: 'SUCCEEDED',
        httpStatus: 200,
        attempt: 1,
      });
    } finally {
      await tap.close();
    }

    // Still exactly one call after everything settled.
    expect(receiver.calls).toHaveLength(1);
  });

  it("hands the creating request's trace context to the webhook when nothing is traced", async () => {
    // No exporter anywhere: no app builds spans, yet the W3C context of the request that created
    // the job travels API → job row → scheduler's fire → executor → target unchanged.
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const due = new Date(Date.now() + 1_000);
    const res = await apiFetch(`${api.url}/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent, tracestate: 'vendor=tw' },
      body: JSON.stringify({
        tenant_id: 'acme',
        schedule: { kind: 'once', at: due.toISOString() },
        target: { type: 'webhook', url: receiver.url('/traced'), method: 'POST' },
      }),
    });
    expect(res.status).toBe(201);
    const call = await eventually(
      'the traced webhook call',
      () => receiver.calls.find((c) => c.path === '/traced'),
      30_000,
    );
    expect(call.headers.traceparent).toBe(traceparent);
    expect(call.headers.tracestate).toBe('vendor=tw');
  });

  it('rejects bad input with 400 naming the field, and stores nothing', async () => {
    const post = async (body: unknown) => {
      const r = await apiFetch(`${api.url}/v1/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return {
        status: r.status,
        body: (await r.json()) as { error: string; violations?: { field: string; message: string }[] },
      };
    };
    const good = {
      schedule: { kind: 'once', at: new Date(Date.now() + 3_600_000).toISOString() },
      target: { type: 'webhook', url: 'https://example.com/x' },
    };
    const cases: [unknown, string][] = [
      [{ target: good.target }, 'schedule'],
      [{ schedule: good.schedule }, 'target'],
      [{ ...good, schedule: { kind: 'once', at: 'tomorrow at noon' } }, 'schedule.at'],
      [{ ...good, target: { type: 'carrier-pigeon' } }, 'target.type'],
      [{ ...good, target: { type: 'webhook', url: 'not a url' } }, 'target.url'],
      [{ ...good, target: { type: 'webhook', url: 'ftp://example.com/x' } }, 'target.url'],
    ];
    const before = await db.query<{ n: string }>('SELECT count(*) AS n FROM jobs');
    for (const [body, field] of cases) {
      const r = await post(body);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('INVALID_ARGUMENT');
      expect(r.body.violations?.map((v) => v.field)).toContain(field);
    }
    const malformed = await apiFetch(`${api.url}/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"schedule":',
    });
    expect(malformed.status).toBe(400);
    const after = await db.query<{ n: string }>('SELECT count(*) AS n FROM jobs');
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
  });
});
