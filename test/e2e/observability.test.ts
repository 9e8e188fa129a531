/**
 * Observability on the real stack: the apps export their spans over real OTLP/HTTP (configured only
 * by the standard OTEL_* variables) to a collector in this test process that keeps them in memory.
 * One occurrence is one connected trace from the API request through the scheduler's claim to the
 * message on the fires topic; /metrics shows lateness, throughput, lag and process metrics; fire
 * log lines carry the occurrence and its trace and never the payload; readiness says whether
 * PostgreSQL and Kafka answer, on HTTP and on the gRPC health service alike.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { shardOf } from '@tickwork/domain';
import { KAFKAJS_PATCHES, type MessageProducer } from '@tickwork/messaging';
import { AdminTestClient } from '../support/admin-client';
import { startApp, type AppProcess } from '../support/apps';
import { testDatabase, type TestDatabase } from '../support/db';
import { eventually, freePort, isolate, type Isolation } from '../support/env';
import { testKafkaBus, TopicTap } from '../support/kafka';
import { WebhookReceiver } from '../support/receiver';
import { OpenApiContract } from '../support/openapi';
import { seedJobs } from '../support/seed';

/** OTLP span kinds. */
const KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

type AttrValue = string | number | boolean;

interface CollectedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttrValue>>;
  readonly links: readonly {
    traceId: string;
    spanId: string;
    attributes: Readonly<Record<string, AttrValue>>;
  }[];
  readonly statusCode: number;
}

interface OtlpKeyValue {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
}

function attributesOf(kvs: readonly OtlpKeyValue[] | undefined): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const { key, value } of kvs ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
  }
  return out;
}

/** An OTLP/HTTP (JSON) trace receiver that keeps every span in memory. */
class OtlpCollector {
  readonly spans: CollectedSpan[] = [];
  private server: Server | undefined;
  private port = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/v1/traces') this.ingest(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.setHeader('content-type', 'application/json');
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    return this;
  }

  /** The environment that makes an app export its spans here. */
  env(): Record<string, string> {
    return {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${this.port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
  }

  trace(traceId: string): CollectedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  span(spanId: string | undefined): CollectedSpan | undefined {
    return this.spans.find((s) => s.spanId === spanId);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private ingest(body: {
    resourceSpans?: {
      resource?: { attributes?: OtlpKeyValue[] };
      scopeSpans?: {
        spans?: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind: number;
          attributes?: OtlpKeyValue[];
          links?: { traceId: string; spanId: string; attributes?: OtlpKeyValue[] }[];
          status?: { code?: number };
        }[];
      }[];
    }[];
  }): void {
    for (const rs of body.resourceSpans ?? []) {
      const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '?');
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          this.spans.push({
            service,
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ? s.parentSpanId : undefined,
            name: s.name,
            kind: s.kind,
            attributes: attributesOf(s.attributes),
            links: (s.links ?? []).map((l) => ({
              traceId: l.traceId,
              spanId: l.spanId,
              attributes: attributesOf(l.attributes),
            })),
            statusCode: s.status?.code ?? 0,
          });
    }
  }
}

/** `00-<trace>-<span>-<flags>` → ids. */
function parseTraceparent(tp: string | undefined): { traceId: string; spanId: string } {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(tp ?? '');
  if (!m) throw new Error(`not a traceparent: ${tp}`);
  return { traceId: m[1]!, spanId: m[2]! };
}

interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** The samples of a Prometheus text exposition. */
function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return out;
}

/** Scrapes an app's /metrics (through `get`, e.g. the API's document-checking fetch, when given). */
async function scrape(app: AppProcess, get: typeof fetch = fetch): Promise<Sample[]> {
  const res = await get(`${app.url}/metrics`);
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

const pick = (samples: readonly Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

/** `promtool check metrics` (Prometheus's own linter) on a scrape: its exit code and complaints. */
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

/** The Prometheus name suffix each unit calls for (OpenTelemetry's Prometheus compatibility rules). */
const UNIT_SUFFIX: Record<string, { suffix: string; gaugesOnly?: boolean }> = {
  s: { suffix: '_seconds' },
  By: { suffix: '_bytes' },
  '1': { suffix: '_ratio', gaugesOnly: true },
};

/**
 * Waits until every span of the trace has its parent collected (an app exports a parent span
 * after its children, when it ends), then checks the trace is connected with one root.
 */
async function connectedTrace(traceId: string, collector: OtlpCollector): Promise<CollectedSpan> {
  await eventually('the whole trace to be connected', () => {
    const spans = collector.trace(traceId);
    const ids = new Set(spans.map((x) => x.spanId));
    return spans.every((x) => x.parentSpanId === undefined || ids.has(x.parentSpanId)) ? true : undefined;
  });
  return expectConnected(collector.trace(traceId));
}

/** Every span's parent is in the trace, and exactly one span is the root. */
function expectConnected(spans: readonly CollectedSpan[]): CollectedSpan {
  const ids = new Set(spans.map((s) => s.spanId));
  const orphans = spans.filter((s) => s.parentSpanId !== undefined && !ids.has(s.parentSpanId));
  expect(orphans.map((s) => `${s.service}: ${s.name}`)).toEqual([]);
  const roots = spans.filter((s) => s.parentSpanId === undefined);
  expect(roots).toHaveLength(1);
  return roots[0]!;
}

/** Lines of an app's output that are JSON objects. */
function jsonLines(app: AppProcess): Record<string, unknown>[] {
  return app.output.flatMap((l) => {
    try {
      const v = JSON.parse(l) as unknown;
      return v && typeof v === 'object' ? [v as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

const PAYLOAD_MARKER = 'payload-marker-7f3a9c';

describe('observability', () => {
  let iso: Isolation;
  let collector: OtlpCollector;
  let receiver: WebhookReceiver;
  let firesTap: TopicTap;
  let api: AppProcess;
  let scheduler: AppProcess;
  let executor: AppProcess;
  let apps: AppProcess[] = [];
  let grpcAddress: string;
  let firesTopic: string;
  /** The served OpenAPI document, which every REST response of the API is checked against. */
  let contract: OpenApiContract;
  let apiFetch: typeof fetch;

  const postJob = async (body: Record<string, unknown>) => {
    const res = await apiFetch(`${api.url}/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(201);
    return (await res.json()) as { job_id: string; next_run_at: string; shard: number };
  };
  const messagesOf = (jobId: string) => firesTap.messages.filter((m) => m.key?.toString('utf8') === jobId);

  beforeAll(async () => {
    iso = isolate('o11y');
    firesTopic = `${iso.topicPrefix}.fires`;
    collector = await new OtlpCollector().start();
    receiver = await new WebhookReceiver().start();
    const grpcPort = await freePort();
    grpcAddress = `127.0.0.1:${grpcPort}`;
    const env = iso.env({
      ...collector.env(),
      TICKWORK_WEBHOOK_ALLOW: '127.0.0.1',
      TICKWORK_TICK_MS: '100',
      TICKWORK_GRPC_PORT: String(grpcPort),
      TICKWORK_CLUSTER_SAMPLE_MS: '500',
      TICKWORK_LOG_LEVEL: 'debug',
      TICKWORK_RETRY_TIERS: '1s,4s',
    });
    api = startApp('api', env, await freePort());
    apps = [api];
    await api.ready();
    contract = await OpenApiContract.served(api.url);
    apiFetch = contract.fetch(api.url);
    scheduler = startApp('scheduler', env, await freePort());
    executor = startApp('executor', env, await freePort());
    apps.push(scheduler, executor);
    await Promise.all([scheduler.ready(), executor.ready()]);
    firesTap = await TopicTap.open(firesTopic);
  }, 120_000);

  afterAll(async () => {
    await firesTap?.close();
    await Promise.all(apps.map((a) => a.stop()));
    await collector?.stop();
    await receiver?.stop();
    await iso?.dispose();
  });

  it('traces one occurrence as one connected trace: API request → job write → claimed fire → fires topic → executor → webhook → result', async () => {
    const job = await postJob({
      tenant_id: 'acme',
      schedule: { kind: 'once', at: new Date(Date.now() + 1_500).toISOString() },
      target: { type: 'webhook', url: receiver.url('/hook') },
      payload: { marker: PAYLOAD_MARKER },
    });
    const message = await eventually('the fire on the fires topic', () => messagesOf(job.job_id)[0]);
    // The W3C context crossed Kafka in the message headers.
    const { traceId, spanId } = parseTraceparent(message.headers.traceparent);

    const send = await eventually('the send span named in the headers', () => collector.span(spanId));
    const fire = await eventually('the fire span', () => collector.span(send.parentSpanId));
    const write = await eventually('the job write span', () => collector.span(fire.parentSpanId));
    const request = await eventually('the API request span', () => collector.span(write.parentSpanId));

    expect(send).toMatchObject({
      service: 'tickwork-scheduler',
      name: `send ${firesTopic}`,
      kind: KIND.PRODUCER,
      traceId,
    });
    expect(send.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.destination.name': firesTopic,
      'messaging.operation.type': 'send',
      'messaging.kafka.message.key': job.job_id,
      'tickwork.job_id': job.job_id,
      'tickwork.fence_token': 1,
    });
    expect(fire).toMatchObject({ service: 'tickwork-scheduler', name: 'tickwork.fire', traceId });
    expect(fire.attributes).toMatchObject({
      'tickwork.job_id': job.job_id,
      'tickwork.tenant_id': 'acme',
      'tickwork.fence_token': 1,
      'tickwork.scheduled_for': job.next_run_at,
      'tickwork.trigger': 'SCHEDULE',
      'tickwork.shard': job.shard,
    });
    expect(write).toMatchObject({ service: 'tickwork-api', name: 'mutate jobs', kind: KIND.CLIENT, traceId });
    expect(write.attributes).toMatchObject({
      'db.system.name': 'postgresql',
      'db.collection.name': 'jobs',
      'tickwork.job_id': job.job_id,
    });
    expect(request).toMatchObject({
      service: 'tickwork-api',
      name: 'POST /v1/jobs',
      kind: KIND.SERVER,
      traceId,
    });
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/jobs',
      'http.response.status_code': 201,
    });
    expect(request.parentSpanId).toBeUndefined();

    // The executor continues it: consume (child of the send), ledger, webhook call, result.
    const consumed = await eventually('the executor consume span', () =>
      collector.spans.find((s) => s.parentSpanId === send.spanId && s.name === `process ${firesTopic}`),
    );
    expect(consumed).toMatchObject({ service: 'tickwork-executor', kind: KIND.CONSUMER, traceId });
    expect(consumed.attributes).toMatchObject({
      'messaging.consumer.group.name': `${iso.topicPrefix}.executor`,
      'messaging.kafka.message.key': job.job_id,
      'tickwork.fire_id': `${job.job_id}:1`,
    });
    const children = await eventually('the ledger, webhook and result spans', () => {
      const c = collector.trace(traceId).filter((s) => s.parentSpanId === consumed.spanId);
      const names = c.map((s) => s.name);
      return ['begin job_runs', 'POST', 'complete job_runs', `send ${iso.topicPrefix}.fire-results`].every(
        (n) => names.includes(n),
      )
        ? c
        : undefined;
    });
    const call = children.find((s) => s.name === 'POST')!;
    expect(call).toMatchObject({ kind: KIND.CLIENT, statusCode: 0 });
    expect(call.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'url.full': receiver.url('/hook'),
      'tickwork.job_id': job.job_id,
      'tickwork.fence_token': 1,
    });
    expect(children.find((s) => s.name === 'begin job_runs')?.attributes).toMatchObject({
      'db.system.name': 'postgresql',
      'db.collection.name': 'job_runs',
    });
    // The webhook receiver got the call's context: it could continue the trace.
    const hook = receiver.calls.find((c) => c.headers['tickwork-job-id'] === job.job_id);
    expect(parseTraceparent(hook?.headers.traceparent as string)).toEqual({ traceId, spanId: call.spanId });
    expect((await connectedTrace(traceId, collector)).spanId).toBe(request.spanId);

    // The claim batch is a trace of its own; it and the fire link to each other.
    const claimLink = fire.links.find((l) => l.attributes['tickwork.link.role'] === 'claim');
    expect(claimLink).toBeDefined();
    const claim = await eventually('the claim span', () => collector.span(claimLink!.spanId));
    expect(claim).toMatchObject({ service: 'tickwork-scheduler', name: 'claim jobs', kind: KIND.CLIENT });
    expect(claim.traceId).not.toBe(traceId);
    expect(claim.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'db.operation.name': 'claim' });
    expect(claim.links.map((l) => l.spanId)).toContain(fire.spanId);
  });

  it("gives each later occurrence of a recurring job a trace of its own, linked to the request's", async () => {
    const job = await postJob({
      tenant_id: 'acme',
      schedule: {
        kind: 'interval',
        every_ms: 1_000,
        start_at: new Date(Date.now() + 1_000).toISOString(),
        max_fires: 2,
      },
      target: { type: 'webhook', url: receiver.url('/hook') },
    });
    const [first, second] = await eventually('both fires on the fires topic', () => {
      const m = messagesOf(job.job_id);
      return m.length >= 2 ? m : undefined;
    });
    const a = parseTraceparent(first!.headers.traceparent);
    const b = parseTraceparent(second!.headers.traceparent);
    expect(b.traceId).not.toBe(a.traceId);
    // The first occurrence is in the request's trace; the second starts its own, linked to the request.
    const firstFire = await eventually('the first fire span', async () => {
      const send = collector.span(a.spanId);
      return send && collector.span(send.parentSpanId);
    });
    const write = await eventually('the job write', () => collector.span(firstFire.parentSpanId));
    expect(write.name).toBe('mutate jobs');
    const secondFire = await eventually('the second fire span', async () => {
      const send = collector.span(b.spanId);
      return send && collector.span(send.parentSpanId);
    });
    expect(secondFire.parentSpanId).toBeUndefined();
    expect(secondFire.attributes['tickwork.fence_token']).toBe(2);
    const requestLink = secondFire.links.find((l) => l.attributes['tickwork.link.role'] === 'job-request');
    expect(requestLink).toMatchObject({ traceId: a.traceId, spanId: write.spanId });
  });

  it('keeps a manual trigger, published by the outbox relay, in the trigger request’s trace', async () => {
    const job = await postJob({
      tenant_id: 'acme',
      schedule: { kind: 'once', at: new Date(Date.now() + 3_600_000).toISOString() },
      target: { type: 'webhook', url: receiver.url('/hook') },
    });
    const res = await apiFetch(`${api.url}/v1/jobs/${job.job_id}/trigger`, { method: 'POST' });
    expect(res.status).toBeLessThan(300);
    const message = await eventually(
      'the triggered fire on the fires topic',
      () => messagesOf(job.job_id)[0],
    );
    const { traceId, spanId } = parseTraceparent(message.headers.traceparent);
    const send = await eventually('the relay send span', () => collector.span(spanId));
    const fire = await eventually('the manual fire span', () => collector.span(send.parentSpanId));
    const write = await eventually('the trigger write', () => collector.span(fire.parentSpanId));
    const request = await eventually('the trigger request', () => collector.span(write.parentSpanId));
    expect(send.service).toBe('tickwork-scheduler');
    expect(fire).toMatchObject({ service: 'tickwork-api', name: 'tickwork.fire' });
    expect(fire.attributes['tickwork.trigger']).toBe('MANUAL');
    expect(request).toMatchObject({ name: 'POST /v1/jobs/:jobId/trigger', kind: KIND.SERVER, traceId });
    await connectedTrace(traceId, collector);
  });

  it('traces a schedule command from its producer through the scheduler, and counts rejected commands by reason', async () => {
    const bus = testKafkaBus('o11y-test');
    const producer: MessageProducer = await bus.producer();
    const producerSpan = { traceId: 'a1b2c3d4e5f60718293a4b5c6d7e8f90', spanId: '0123456789abcdef' };
    try {
      await producer.send([
        {
          topic: `${iso.topicPrefix}.commands`,
          messages: [
            {
              key: 'o11y-poison',
              value: Buffer.from('not avro at all'),
              headers: { traceparent: `00-${producerSpan.traceId}-${producerSpan.spanId}-01` },
            },
          ],
        },
      ]);
    } finally {
      await producer.disconnect();
    }
    const consumed = await eventually('the command process span', () =>
      collector.spans.find(
        (s) => s.name === `process ${iso.topicPrefix}.commands` && s.traceId === producerSpan.traceId,
      ),
    );
    expect(consumed).toMatchObject({
      service: 'tickwork-scheduler',
      kind: KIND.CONSUMER,
      parentSpanId: producerSpan.spanId,
    });
    expect(consumed.attributes['messaging.consumer.group.name']).toBe(`${iso.topicPrefix}.scheduler`);
    const rejected = await eventually('the rejected command counted', async () => {
      const s = pick(await scrape(scheduler), 'tickwork_commands_total', {
        outcome: 'rejected',
        code: 'UNDECODABLE',
      });
      return s.length === 1 ? s[0] : undefined;
    });
    expect(rejected.value).toBe(1);
  });

  it('keeps retries and the dead letter in the occurrence’s trace, each hop a child of the one before', async () => {
    const flaky = await new WebhookReceiver().start();
    flaky.respond = (n) => (n === 0 ? 503 : 200);
    const failing = await new WebhookReceiver().start();
    failing.respond = () => 500;
    const retry = { max_attempts: 2, initial_backoff_ms: 100, multiplier: 1, max_backoff_ms: 200 };
    try {
      const retried = await postJob({
        tenant_id: 'acme',
        schedule: { kind: 'once', at: new Date(Date.now() + 500).toISOString() },
        target: { type: 'webhook', url: flaky.url('/hook') },
        policies: { retry },
      });
      const doomed = await postJob({
        tenant_id: 'acme',
        schedule: { kind: 'once', at: new Date(Date.now() + 500).toISOString() },
        target: { type: 'webhook', url: failing.url('/hook') },
        policies: { retry: { ...retry, max_attempts: 1 } },
      });

      // Retried: two calls, both carrying the one trace of the occurrence.
      await eventually('the retried call', () => (flaky.calls.length >= 2 ? true : undefined));
      const traceIds = flaky.calls.map((c) => parseTraceparent(c.headers.traceparent as string).traceId);
      expect(new Set(traceIds).size).toBe(1);
      const traceId = traceIds[0]!;
      const retryTopic = `${iso.topicPrefix}.fires.retry.1s`;
      const spans = await eventually('both attempts in the trace', () => {
        const t = collector.trace(traceId);
        const calls = t.filter((x) => x.name === 'POST');
        const hops = [`process ${firesTopic}`, `send ${retryTopic}`, `process ${retryTopic}`];
        return calls.length === 2 && hops.every((h) => t.some((x) => x.name === h)) ? t : undefined;
      });
      const byId = new Map(spans.map((x) => [x.spanId, x]));
      const firstProcess = spans.find((x) => x.name === `process ${firesTopic}`)!;
      const retrySend = spans.find((x) => x.name === `send ${retryTopic}`)!;
      const secondProcess = spans.find((x) => x.name === `process ${retryTopic}`)!;
      expect(retrySend.parentSpanId).toBe(firstProcess.spanId);
      expect(secondProcess.parentSpanId).toBe(retrySend.spanId);
      expect(secondProcess.attributes['tickwork.attempt']).toBe(2);
      const calls = spans.filter((x) => x.name === 'POST');
      expect(calls.map((c) => byId.get(c.parentSpanId!)?.name).sort()).toEqual(
        [`process ${firesTopic}`, `process ${retryTopic}`].sort(),
      );
      expect(calls.map((c) => c.attributes['http.response.status_code']).sort()).toEqual([200, 503]);
      expect(calls.find((c) => c.attributes['http.response.status_code'] === 503)?.statusCode).toBe(2);
      expect(spans.find((x) => x.name === 'tickwork.fire')?.attributes['tickwork.job_id']).toBe(
        retried.job_id,
      );
      await connectedTrace(traceId, collector);

      // Dead-lettered: the DLQ send is in the occurrence's trace, a child of the attempt that gave up.
      await eventually('the failing call', () => (failing.calls.length >= 1 ? true : undefined));
      const doomedTrace = parseTraceparent(failing.calls[0]!.headers.traceparent as string).traceId;
      // The parent ends (and is exported) only after its child, so wait for both.
      const dlq = await eventually('the dead-letter send span and its parent', () => {
        const send = collector.trace(doomedTrace).find((x) => x.name === `send ${iso.topicPrefix}.fires.dlq`);
        return send && collector.span(send.parentSpanId) ? send : undefined;
      });
      expect(collector.span(dlq.parentSpanId)?.name).toBe(`process ${firesTopic}`);
      expect(dlq.attributes['tickwork.job_id']).toBe(doomed.job_id);
    } finally {
      await flaky.stop();
      await failing.stop();
    }
  });

  it('/metrics shows enqueue lateness, throughput, consumer lag, ownership and process metrics with plausible values', async () => {
    const fires = 5;
    const at = new Date(Date.now() + 1_000).toISOString();
    for (let i = 0; i < fires; i++)
      await postJob({
        tenant_id: 'globex',
        schedule: { kind: 'once', at },
        target: { type: 'webhook', url: receiver.url('/hook') },
      });
    const samples = await eventually('the enqueue lateness of five globex fires', async () => {
      const s = await scrape(scheduler);
      const count = pick(s, 'tickwork_fire_enqueue_lateness_seconds_count', { tenant: 'globex' })[0];
      return count && count.value >= fires ? s : undefined;
    });
    const count = pick(samples, 'tickwork_fire_enqueue_lateness_seconds_count', { tenant: 'globex' })[0]!
      .value;
    const sum = pick(samples, 'tickwork_fire_enqueue_lateness_seconds_sum', { tenant: 'globex' })[0]!.value;
    expect(count).toBe(fires);
    // Claimed within the tick after they were due: late by more than nothing and far less than 5 s.
    expect(sum / count).toBeGreaterThan(0);
    expect(sum / count).toBeLessThan(5);
    const buckets = pick(samples, 'tickwork_fire_enqueue_lateness_seconds_bucket', { tenant: 'globex' });
    const cumulative = buckets.map((b) => b.value);
    expect(cumulative).toEqual([...cumulative].sort((x, y) => x - y));
    expect(pick(buckets, 'tickwork_fire_enqueue_lateness_seconds_bucket', { le: '+Inf' })[0]?.value).toBe(
      fires,
    );
    expect(pick(buckets, 'tickwork_fire_enqueue_lateness_seconds_bucket', { le: '5' })[0]?.value).toBe(fires);
    expect(pick(samples, 'tickwork_fires_claimed_total', { tenant: 'globex' })[0]?.value).toBe(fires);
    expect(
      pick(samples, 'tickwork_fires_enqueued_total', { tenant: 'globex', relayed: 'false' })[0]?.value,
    ).toBe(fires);
    expect(pick(samples, 'tickwork_scheduler_shards_owned')[0]?.value).toBe(4);
    expect(pick(samples, 'tickwork_shards_unowned')[0]?.value).toBe(0);
    expect(pick(samples, 'tickwork_outbox_pending')).toHaveLength(4);
    expect(pick(samples, 'tickwork_due_backlog')).toHaveLength(4);
    // Process basics from the runtime instrumentation.
    expect(pick(samples, 'nodejs_eventloop_delay_p99_seconds').length).toBeGreaterThan(0);
    expect(pick(samples, 'v8js_memory_heap_used_bytes').length).toBeGreaterThan(0);

    // Consumer lag per group and partition: every fires partition of the executor group, each
    // between 0 and the messages on that partition (what is uncommitted of them, no more).
    const onPartition = () => {
      const n = new Map<string, number>();
      for (const m of firesTap.messages) n.set(String(m.partition), (n.get(String(m.partition)) ?? 0) + 1);
      return n;
    };
    const lag = await eventually('lag gauges of the executor group on the fires topic', async () => {
      const l = pick(await scrape(scheduler), 'tickwork_kafka_consumer_lag', {
        group: `${iso.topicPrefix}.executor`,
        topic: firesTopic,
      });
      const counts = onPartition();
      // The tap may still be reading the newest messages: wait until it has as many as are uncommitted.
      return l.length === 4 && l.every((x) => x.value <= (counts.get(x.labels.partition!) ?? 0))
        ? l
        : undefined;
    });
    expect(lag.map((l) => l.labels.partition).sort()).toEqual(['0', '1', '2', '3']);
    expect(lag.every((l) => l.value >= 0)).toBe(true);
    expect(lag.reduce((n, l) => n + l.value, 0)).toBeLessThanOrEqual(firesTap.messages.length);
    const commandsLag = pick(await scrape(scheduler), 'tickwork_kafka_consumer_lag', {
      group: `${iso.topicPrefix}.scheduler`,
      topic: `${iso.topicPrefix}.commands`,
    });
    expect(commandsLag.map((l) => l.labels.partition).sort()).toEqual(['0', '1', '2', '3']);
    // One command was sent (the poison one above); the group has it or has committed past it.
    expect(commandsLag.reduce((n, l) => n + l.value, 0)).toBeLessThanOrEqual(1);

    // The API measures its requests by route template.
    const http = pick(await scrape(api, apiFetch), 'http_server_request_duration_seconds_count', {
      http_request_method: 'POST',
      http_route: '/v1/jobs',
      http_response_status_code: '201',
    });
    expect(http[0]?.value).toBeGreaterThanOrEqual(fires);

    // The executor: start lateness, outcomes, target latency, in-flight.
    const ex = await eventually('five globex fires executed', async () => {
      const e = await scrape(executor);
      return (pick(e, 'tickwork_fire_start_lateness_seconds_count', { tenant: 'globex' })[0]?.value ?? 0) >=
        fires
        ? e
        : undefined;
    });
    const started = pick(ex, 'tickwork_fire_start_lateness_seconds_count', { tenant: 'globex' })[0]!.value;
    const startedSum = pick(ex, 'tickwork_fire_start_lateness_seconds_sum', { tenant: 'globex' })[0]!.value;
    expect(started).toBe(fires);
    expect(startedSum / started).toBeGreaterThan(0);
    expect(startedSum / started).toBeLessThan(5);
    expect(pick(ex, 'tickwork_fires_succeeded_total', { tenant: 'globex' })[0]?.value).toBe(fires);
    expect(
      pick(ex, 'tickwork_fires_executed_total', { tenant: 'globex', outcome: 'SUCCEEDED' })[0]?.value,
    ).toBe(fires);
    // From the retry test: one retried attempt and one dead letter of acme.
    expect(pick(ex, 'tickwork_fires_retried_total', { tenant: 'acme' })[0]?.value).toBe(1);
    expect(
      pick(ex, 'tickwork_fires_dead_lettered_total', { tenant: 'acme', reason: 'RETRIES_EXHAUSTED' })[0]
        ?.value,
    ).toBe(1);
    const ok = pick(ex, 'tickwork_target_duration_seconds_count', {
      target_type: 'webhook',
      outcome: 'ok',
    })[0];
    expect(ok?.value).toBeGreaterThanOrEqual(fires);
    expect(
      pick(ex, 'tickwork_target_duration_seconds_count', { target_type: 'webhook', outcome: 'http_5xx' })[0]
        ?.value,
    ).toBe(2);
    expect(pick(ex, 'tickwork_executor_in_flight')[0]?.value).toBeGreaterThanOrEqual(0);
  });

  it('writes JSON fire lines with job_id, fence_token, tenant and the trace, and never the payload', async () => {
    const job = await postJob({
      tenant_id: 'acme',
      schedule: { kind: 'once', at: new Date(Date.now() + 500).toISOString() },
      target: { type: 'webhook', url: receiver.url('/hook') },
      payload: { marker: PAYLOAD_MARKER },
    });
    const message = await eventually('the fire on the fires topic', () => messagesOf(job.job_id)[0]);
    const { traceId } = parseTraceparent(message.headers.traceparent);
    const line = await eventually('the "fire enqueued" line', () =>
      jsonLines(scheduler).find((l) => l.msg === 'fire enqueued' && l.job_id === job.job_id),
    );
    expect(line).toMatchObject({
      level: 'debug',
      service: 'tickwork-scheduler',
      context: 'fires',
      job_id: job.job_id,
      fence_token: 1,
      tenant: 'acme',
      trace_id: traceId,
    });
    expect(typeof line.span_id).toBe('string');
    const executed = await eventually('the "fire executed" line', () =>
      jsonLines(executor).find((l) => l.msg === 'fire executed' && l.job_id === job.job_id),
    );
    expect(executed).toMatchObject({
      service: 'tickwork-executor',
      job_id: job.job_id,
      fence_token: 1,
      tenant: 'acme',
      outcome: 'SUCCEEDED',
      trace_id: traceId,
    });
    // No app writes the payload; every line of every app is JSON.
    for (const app of apps) {
      expect(app.output.filter((l) => l.includes(PAYLOAD_MARKER))).toEqual([]);
      expect(jsonLines(app).length).toBe(app.output.length);
    }
  });

  it("continues a gRPC caller's trace: the server span is the child of the caller's traceparent", async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const client = new AdminTestClient(grpcAddress);
    try {
      await client.call(
        'GetJob',
        { job_id: 'no-such-job' },
        { metadata: { traceparent: `00-${traceId}-${callerSpanId}-01` } },
      );
      const server = await eventually('the server span in the caller’s trace', () =>
        collector.spans.find((s) => s.traceId === traceId && s.kind === KIND.SERVER),
      );
      expect(server).toMatchObject({
        service: 'tickwork-api',
        name: 'tickwork.admin.v1.SchedulerAdmin/GetJob',
        parentSpanId: callerSpanId,
      });
      expect(server.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.method': 'GetJob' });
    } finally {
      client.close();
    }
  });

  it('exports conventional Prometheus names: promtool check metrics passes on every app, and units are name suffixes', async () => {
    // One gRPC call of its own, so the RPC histogram has a series whatever ran before.
    const client = new AdminTestClient(grpcAddress);
    try {
      await client.call('GetJob', { job_id: 'no-such-job' });
    } finally {
      client.close();
    }
    // Series each app must have, under their unit-suffixed names (GC and event-loop delay are
    // sampled on timers: waited for, bounded).
    const expected: [AppProcess, string[]][] = [
      [
        api,
        [
          'http_server_request_duration_seconds_bucket',
          'rpc_server_call_duration_seconds_bucket',
          'v8js_gc_duration_seconds_bucket',
          'nodejs_eventloop_delay_p99_seconds',
          'nodejs_eventloop_utilization_ratio',
          'v8js_memory_heap_used_bytes',
          'tickwork_kafkajs_patch_info',
        ],
      ],
      [
        scheduler,
        [
          'nodejs_eventloop_delay_p99_seconds',
          'nodejs_eventloop_time_seconds_total',
          'v8js_memory_heap_used_bytes',
          'tickwork_kafkajs_patch_info',
        ],
      ],
      [
        executor,
        [
          'nodejs_eventloop_delay_p99_seconds',
          'nodejs_eventloop_time_seconds_total',
          'v8js_memory_heap_used_bytes',
          'tickwork_kafkajs_patch_info',
        ],
      ],
    ];
    for (const [app, names] of expected) {
      const text = await eventually(`${app.name} to export ${names.join(', ')}`, async () => {
        const res = await (app === api ? apiFetch : fetch)(`${app.url}/metrics`);
        const body = await res.text();
        const present = new Set(parseMetrics(body).map((x) => x.name));
        return names.every((n) => present.has(n)) ? body : undefined;
      });
      const lint = await promtoolCheckMetrics(text);
      expect({ app: app.name, ...lint }).toEqual({ app: app.name, code: 0, output: '' });

      // Every kafkajs patch took effect in every app: none fell back to stock kafkajs speed.
      const patches = pick(parseMetrics(text), 'tickwork_kafkajs_patch_info');
      expect({
        app: app.name,
        patches: patches.map((x) => `${x.labels.patch}=${x.labels.applied}`).sort(),
      }).toEqual({
        app: app.name,
        patches: KAFKAJS_PATCHES.map((patch) => `${patch}=true`).sort(),
      });

      // Every metric that states a unit carries it in its name (what OpenMetrics requires).
      const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
      const units = [...text.matchAll(/^# UNIT (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!] as const);
      expect(units.length).toBeGreaterThan(5);
      const unsuffixed = units.filter(([name, unit]) => {
        const rule = UNIT_SUFFIX[unit];
        const type = types.get(name);
        if (!rule || (rule.gaugesOnly && type !== 'gauge')) return false;
        return !name.replace(/_total$/, '').endsWith(rule.suffix);
      });
      expect({ app: app.name, unsuffixed }).toEqual({ app: app.name, unsuffixed: [] });
      // The old names are gone.
      const present = new Set(parseMetrics(text).map((x) => x.name));
      for (const old of [
        'http_server_request_duration_bucket',
        'rpc_server_call_duration_bucket',
        'v8js_gc_duration_bucket',
        'nodejs_eventloop_delay_p99',
        'v8js_memory_heap_used',
      ])
        expect(present.has(old)).toBe(false);
    }
  });

  it('is ready when PostgreSQL and Kafka answer, and says so the same way on HTTP and gRPC', async () => {
    const ready = await apiFetch(`${api.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { postgres: 'up', kafka: 'up' } });
    const schedulerReady = (await (await fetch(`${scheduler.url}/health/ready`)).json()) as {
      checks: unknown;
    };
    expect(schedulerReady.checks).toEqual({ postgres: 'up', kafka: 'up', shards: 'up' });
    const client = new AdminTestClient(grpcAddress);
    try {
      expect(await client.check('')).toMatchObject({ ok: true, res: { status: 'SERVING' } });
    } finally {
      client.close();
    }
  });

  it('is not ready while Kafka is unreachable: HTTP 503 naming the check, gRPC NOT_SERVING', async () => {
    const grpcPort = await freePort();
    const lonely = startApp(
      'api',
      iso.env({ KAFKA_BROKERS: `127.0.0.1:${await freePort()}`, TICKWORK_GRPC_PORT: String(grpcPort) }),
      await freePort(),
    );
    apps.push(lonely);
    const client = new AdminTestClient(`127.0.0.1:${grpcPort}`);
    try {
      const body = await eventually(
        'the API to answer its readiness probe',
        async () => {
          // Connection refused while it starts; an answer that breaks the document fails the test.
          const res = await fetch(`${lonely.url}/health/ready`).catch(() => undefined);
          if (res)
            contract.assert({
              method: 'GET',
              url: '/health/ready',
              status: res.status,
              contentType: res.headers.get('content-type'),
              body: await res.clone().text(),
            });
          return res
            ? { status: res.status, body: (await res.json()) as { checks?: Record<string, string> } }
            : undefined;
        },
        60_000,
        250,
      );
      expect(body.status).toBe(503);
      expect(body.body.checks?.postgres).toBe('up');
      expect(body.body.checks?.kafka).toMatch(/^down: /);
      expect(await client.check('')).toMatchObject({ ok: true, res: { status: 'NOT_SERVING' } });
    } finally {
      client.close();
      await lonely.stop();
    }
  });
});

describe('observability of a missed fire', () => {
  let db: TestDatabase;
  const apps: AppProcess[] = [];

  beforeAll(async () => {
    db = await testDatabase('o11ymissed');
  });

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.kill()));
    await db?.close();
  });

  it("shows a job whose shard owner is stopped in that shard's due backlog and oldest-due age, until it fires", async () => {
    const env = db.iso.env({
      TICKWORK_SHARDS: '2',
      TICKWORK_FIRES_PARTITIONS: '2',
      TICKWORK_TICK_MS: '100',
      // The frozen owner keeps its shards until its Kafka session and its lease run out (10 s).
      TICKWORK_SHARD_LEASE_MS: '10000',
      TICKWORK_CLUSTER_SAMPLE_MS: '300',
    });
    const one = startApp('scheduler', env, await freePort());
    apps.push(one);
    await one.ready();
    const two = startApp('scheduler', env, await freePort());
    apps.push(two);
    await two.ready();
    const leases = await eventually('each instance to hold one shard', async () => {
      const { rows } = await db.pool.query<{ shard: number; owner: string | null }>(
        'SELECT shard, owner FROM shard_leases WHERE expires_at > now() ORDER BY shard',
      );
      return rows.length === 2 && new Set(rows.map((r) => r.owner)).size === 2 ? rows : undefined;
    });
    const victim = [one, two].find((a) => `scheduler-${a.port}` === leases[0]!.owner)!;
    const witness = victim === one ? two : one;
    const shard = leases[0]!.shard;
    const other = String(1 - shard);
    let prefix = 'missed';
    while (shardOf(`${prefix}-0`, 2) !== shard) prefix += 'x';

    victim.signal('SIGSTOP');
    try {
      await seedJobs(db.pool, {
        prefix,
        count: 1,
        shardCount: 2,
        schedule: () => ({ kind: 'once', at: new Date(Date.now()) }),
        firstAt: () => new Date(Date.now()),
        target: { type: 'kafka', topic: `${db.iso.topicPrefix}.sink`, key: null, headers: {} },
      });
      // Nobody claims it: the witness's gauges show it in the victim's shard, ageing.
      const samples = await eventually('the missed job in the due backlog gauges', async () => {
        const s = await scrape(witness);
        const age = pick(s, 'tickwork_due_oldest_age_seconds', { shard: String(shard) })[0];
        return age && age.value >= 2 ? s : undefined;
      });
      expect(pick(samples, 'tickwork_due_backlog', { shard: String(shard) })[0]?.value).toBe(1);
      expect(pick(samples, 'tickwork_due_backlog', { shard: other })[0]?.value).toBe(0);
      expect(pick(samples, 'tickwork_due_oldest_age_seconds', { shard: other })[0]?.value).toBe(0);
      const fired = await db.pool.query('SELECT 1 FROM fires WHERE job_id = $1', [`${prefix}-0`]);
      expect(fired.rowCount).toBe(0);
    } finally {
      victim.signal('SIGCONT');
    }
    // Once the shard has a live owner again the job fires, and the backlog drains.
    await eventually(
      'the backlog to drain',
      async () => {
        const s = await scrape(witness);
        return pick(s, 'tickwork_due_backlog', { shard: String(shard) })[0]?.value === 0 ? true : undefined;
      },
      60_000,
      250,
    );
    const fired = await db.pool.query('SELECT 1 FROM fires WHERE job_id = $1', [`${prefix}-0`]);
    expect(fired.rowCount).toBe(1);
  });
});
