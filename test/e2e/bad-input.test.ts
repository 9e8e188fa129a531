/**
 * Bad input, table-driven, against a real API and scheduler (real PostgreSQL, Kafka, registry):
 * every class of issue 25 (items 7-12) over REST, gRPC and Kafka schedule commands. Each case
 * asserts the status (HTTP status, gRPC code or reject code), that the field is named, and that
 * no row changed: the jobs, fires, idempotency keys and applied commands are compared before and
 * after, and the audit log grew by exactly the one refusal a mutating call owes (README: every
 * refused mutating call is audited) or not at all.
 *
 * Every REST response is also checked against the OpenAPI document the API serves (Ajv, via
 * test/support/openapi.ts): the refusals are documented responses, 413, 415 and 422 included.
 * The gRPC side uses a plain grpc-js client over the committed proto, and raw bytes where a
 * well-behaved client cannot send the input (undecodable messages, Values nested past protobuf's
 * limit); the Kafka side is an outside producer (kafkajs + the Confluent serializer).
 */
import { createHash, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { credentials, Metadata, status, Client as GrpcClient, type ServiceError } from '@grpc/grpc-js';
// eslint-disable-next-line no-restricted-imports -- the test plays an outside producer, not Tickwork code
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
// eslint-disable-next-line no-restricted-imports -- the test plays an outside producer, not Tickwork code
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { Client as Pg } from 'pg';
import { Writer } from 'protobufjs';
import { filtersDigest } from '@tickwork/jobs';
import { AdminTestClient, decodeBadRequest, type Msg } from '../support/admin-client';
import { startApp, type AppProcess } from '../support/apps';
import { contractFetch } from '../support/openapi';
import { eventually, freePort, isolate, STACK, type Isolation } from '../support/env';
import { TopicTap } from '../support/kafka';

const NS = 'io.tickwork.v1';
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const TOKEN = 'tok-badinput-acme-0123456789abcdef';
const ADMIN = 'tok-badinput-admin-0123456789abcdef';
const TENANTS = JSON.stringify({
  tokens: [
    { name: 'acme-user', sha256: sha(TOKEN), role: 'tenant', tenant: 'acme' },
    { name: 'ops', sha256: sha(ADMIN), role: 'admin' },
  ],
});
/** The payload nesting limit on every interface (MAX_PAYLOAD_DEPTH in libs/domain). */
const DEPTH_LIMIT = 32;
const SECRET = 'Bearer seed-secret-0123456789';

/** What a refused call came back with, on any interface. */
interface Outcome {
  /** HTTP status, gRPC status name, or the rejected command's tickwork-reject-code. */
  readonly status: number | string;
  /** The fields named (violations), or for Kafka the reject reason. */
  readonly named: string;
}

interface Case {
  readonly name: string;
  readonly via: 'rest' | 'grpc' | 'kafka';
  readonly send: () => Promise<Outcome>;
  readonly status: number | string;
  /** The field that must be named. */
  readonly field: string | RegExp;
  /** The action audited as refused (one new audit_events row), or undefined when nothing is audited. */
  readonly audited?: string;
}

type Json = Record<string, unknown>;

/** A JSON value nested `depth` deep: [[[...[0]...]]]. */
const nested = (depth: number): unknown => {
  let v: unknown = 0;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
};
/** The same as JSON text, built without recursion (JSON.stringify of 10k levels overflows the stack). */
const nestedText = (depth: number): string => `${'['.repeat(depth)}0${']'.repeat(depth)}`;
/** A google.protobuf.Value message nested `depth` lists deep, as the proto-loader client takes it. */
const nestedValue = (depth: number): Msg => {
  let v: Msg = { numberValue: 0 };
  for (let i = 0; i < depth; i++) v = { listValue: { values: [v] } };
  return v;
};
/** The bytes of a CreateJobRequest whose job.payload is a Value nested `depth` lists deep. */
const deepCreateJobBytes = (depth: number): Buffer => {
  let value = Writer.create()
    .uint32((2 << 3) | 1)
    .double(0)
    .finish(); // Value.number_value
  for (let i = 0; i < depth; i++) {
    const list = Writer.create()
      .uint32((1 << 3) | 2)
      .bytes(value)
      .finish(); // ListValue.values
    value = Writer.create()
      .uint32((6 << 3) | 2)
      .bytes(list)
      .finish(); // Value.list_value
  }
  const job = Writer.create()
    .uint32((5 << 3) | 2)
    .bytes(value)
    .finish(); // Job.payload
  return Buffer.from(
    Writer.create()
      .uint32((1 << 3) | 2)
      .bytes(job)
      .finish(),
  ); // CreateJobRequest.job
};
/** The error code a refused REST call is audited with, by its HTTP status. */
const CODE_OF_HTTP: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  422: 'FAILED_PRECONDITION',
};
/** The error code a rejected Kafka command is audited with, by its reject code. */
// INVALID_COMMAND is audited only for a BACKFILL refused for its request (the backfill record).
const CODE_OF_REJECT: Record<string, string> = {
  INVALID_JOB: 'INVALID_ARGUMENT',
  INVALID_COMMAND: 'INVALID_ARGUMENT',
};
const pageToken = (o: unknown) => Buffer.from(JSON.stringify(o), 'utf8').toString('base64url');

describe('bad input over REST, gRPC and Kafka commands: a 4xx naming the field, nothing stored', () => {
  let iso: Isolation;
  let apps: AppProcess[] = [];
  let apiUrl: string;
  let grpcAddress: string;
  let grpc: AdminTestClient;
  let db: Pg;
  let registry: SchemaRegistry;
  let producer: Producer;
  let schemaId: number;
  let topic: string;
  let rejected: TopicTap;
  /** fetch that checks every response against the OpenAPI document the API serves. */
  let checkedFetch: typeof fetch;

  // ---------- the three interfaces ----------

  const http = async (
    method: string,
    path: string,
    opts: {
      token?: string | null;
      body?: unknown;
      raw?: string | Buffer;
      headers?: Record<string, string>;
    } = {},
  ) => {
    const token = opts.token === undefined ? TOKEN : opts.token;
    const res = await checkedFetch(`${apiUrl}${path}`, {
      method,
      headers: {
        ...(opts.body !== undefined || opts.raw !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...opts.headers,
      },
      body: opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
    });
    const text = await res.text();
    let body: Json = {};
    try {
      body = text ? (JSON.parse(text) as Json) : {};
    } catch {
      body = { text };
    }
    return { status: res.status, headers: res.headers, body };
  };
  const restOutcome = async (r: ReturnType<typeof http>): Promise<Outcome> => {
    const { status: s, body } = await r;
    const violations = (body.violations ?? []) as { field: string }[];
    return { status: s, named: [...violations.map((v) => v.field), String(body.message ?? '')].join(' | ') };
  };
  const rest =
    (method: string, path: string, opts: Parameters<typeof http>[2] = {}) =>
    () =>
      restOutcome(http(method, path, opts));

  const grpcCall =
    (method: string, req: Msg, opts: { token?: string | null; metadata?: Record<string, string> } = {}) =>
    async (): Promise<Outcome> => {
      const client = opts.token === undefined ? grpc : grpc.as(opts.token ?? undefined);
      const r = await client.call(method, req, {
        ...(opts.token === null ? { authorization: '' } : {}),
        ...(opts.metadata ? { metadata: opts.metadata } : {}),
      });
      if (r.ok) return { status: 'OK', named: '' };
      return { status: r.codeName, named: [...r.violations.map((v) => v.field), r.details].join(' | ') };
    };
  /** gRPC cases refused INVALID_ARGUMENT naming `field`: [name, method, request, field, audited RPC?]. */
  const addInvalidGrpc = (cases: readonly [string, string, Msg, string, string?][]) => {
    for (const [name, method, req, field, audited] of cases)
      add({
        name: `${method}: ${name}`,
        via: 'grpc',
        send: grpcCall(method, req),
        status: 'INVALID_ARGUMENT',
        field,
        ...(audited ? { audited } : {}),
      });
  };
  /** A unary call with the request as raw bytes (what a broken or hostile client sends). */
  const grpcRaw = (method: string, bytes: Buffer) => () =>
    new Promise<Outcome>((done) => {
      const client = new GrpcClient(grpcAddress, credentials.createInsecure());
      const md = new Metadata();
      md.set('authorization', `Bearer ${TOKEN}`);
      client.makeUnaryRequest(
        `/tickwork.admin.v1.SchedulerAdmin/${method}`,
        (b: Buffer) => b,
        (b: Buffer) => b,
        bytes,
        md,
        { deadline: new Date(Date.now() + 10_000) },
        (err: ServiceError | null) => {
          client.close();
          if (!err) return done({ status: 'OK', named: '' });
          const bin = err.metadata?.get('grpc-status-details-bin')[0];
          const violations = Buffer.isBuffer(bin) ? decodeBadRequest(bin) : [];
          done({
            status: status[err.code] ?? String(err.code),
            named: [...violations.map((v) => v.field), err.details].join(' | '),
          });
        },
      );
    });

  /** A ScheduleCommand as avsc wants it. */
  const command = (type: string, jobId: string, job: Msg | null = null, tenant = 'acme'): Msg => ({
    command_id: randomUUID(),
    type,
    tenant_id: tenant,
    job_id: jobId,
    job,
    issued_at: Date.now(),
    expected_version: null,
  });
  const avroJob = (
    opts: {
      payload?: string | null;
      labels?: Record<string, string>;
      headers?: Record<string, string>;
      url?: string;
      expression?: string;
      kafka?: { topic: string; key: string | null; headers?: Record<string, string> };
      retry?: Msg;
    } = {},
  ): Msg => ({
    schedule: {
      [`${NS}.CronSchedule`]: {
        expression: opts.expression ?? '0 9 * * MON-FRI',
        time_zone: 'Europe/London',
        dst_gap: 'AUTO',
        dst_repeat: 'AUTO',
        start_at: null,
        end_at: null,
        max_fires: null,
      },
    },
    target: opts.kafka
      ? {
          [`${NS}.KafkaTarget`]: {
            topic: opts.kafka.topic,
            key: opts.kafka.key,
            headers: opts.kafka.headers ?? {},
          },
        }
      : {
          [`${NS}.WebhookTarget`]: {
            url: opts.url ?? 'https://example.com/hook',
            method: 'POST',
            headers: opts.headers ?? {},
            timeout_ms: 5000,
            success_status_min: 200,
            success_status_max: 299,
          },
        },
    payload: opts.payload === undefined ? JSON.stringify({ hello: 'world' }) : opts.payload,
    policies: opts.retry
      ? {
          misfire: 'FIRE_ONCE',
          catch_up_window_ms: null,
          overlap: 'ALLOW',
          jitter_ms: 0,
          retry: {
            max_attempts: 5,
            initial_backoff_ms: 1000,
            multiplier: 2,
            max_backoff_ms: 600000,
            max_event_age_ms: 86400000,
            ...opts.retry,
          },
        }
      : null,
    labels: opts.labels ?? {},
  });
  /** Publishes a command (key = its job id unless given) and waits for it on the rejected topic. */
  const kafkaCommand = (cmd: () => Msg, key?: string) => async (): Promise<Outcome> => {
    const c = cmd();
    const value = await registry.encode(schemaId, c);
    await producer.send({ topic, messages: [{ key: key ?? (c.job_id as string), value }] });
    const m = await eventually(
      `command ${String(c.command_id)} on ${topic}.rejected`,
      () => rejected.messages.find((r) => r.value?.equals(value)),
      60_000,
    );
    const reason = m.headers['tickwork-reject-reason'] ?? '';
    // "job.payload: nests …; job.labels.team: must …" → the fields, then the reason itself.
    const fields = reason.split('; ').map((part) => part.slice(0, Math.max(0, part.indexOf(': '))));
    return { status: m.headers['tickwork-reject-code'] ?? '', named: [...fields, reason].join(' | ') };
  };

  // ---------- what must not change ----------

  const snapshot = async () => {
    const { rows } = await db.query<Record<string, string>>(
      `SELECT (SELECT md5(coalesce(string_agg(j::text, '|' ORDER BY job_id), '')) FROM jobs j) AS jobs,
              (SELECT count(*) FROM fires)::text AS fires,
              (SELECT count(*) FROM idempotency_keys)::text AS idempotency_keys,
              (SELECT count(*) FROM applied_commands WHERE outcome = 'APPLIED')::text AS applied_commands,
              (SELECT md5(coalesce(string_agg(c::text, '|' ORDER BY c.name), '')) FROM business_calendars c) AS calendars,
              (SELECT md5(coalesce(string_agg(b::text, '|' ORDER BY backfill_id), '')) FROM backfills b) AS backfills,
              (SELECT coalesce(max(id), 0) FROM audit_events)::text AS last_audit`,
    );
    return rows[0]!;
  };

  // ---------- the job definitions the cases spoil ----------

  const webhookJob = (over: Json = {}): Json => ({
    schedule: { kind: 'interval', every_ms: 3_600_000 },
    target: { type: 'webhook', url: 'https://example.com/h' },
    ...over,
  });
  const kafkaTarget = (over: Json = {}): Json => ({ type: 'kafka', topic: 'acme.out', ...over });
  const protoJob = (over: Msg = {}): Msg => ({
    schedule: { interval: { every_ms: 3_600_000 } },
    target: { webhook: { url: 'https://example.com/h' } },
    ...over,
  });

  beforeAll(async () => {
    iso = isolate('badinput');
    topic = `${iso.topicPrefix}.commands`;
    const grpcPort = await freePort();
    grpcAddress = `127.0.0.1:${grpcPort}`;
    const env = iso.env({ TICKWORK_TENANTS: TENANTS, TICKWORK_GRPC_PORT: String(grpcPort) });
    const api = startApp('api', env, await freePort());
    await api.ready();
    apiUrl = api.url;
    checkedFetch = await contractFetch(apiUrl);
    const scheduler = startApp('scheduler', env, await freePort());
    apps = [api, scheduler];
    await scheduler.ready();
    grpc = new AdminTestClient(grpcAddress, TOKEN);
    db = new Pg({ connectionString: iso.databaseUrl });
    await db.connect();
    registry = new SchemaRegistry({ host: STACK.registryUrl });
    schemaId = await registry.getLatestSchemaId(`${topic}-value`);
    const kafka = new Kafka({
      clientId: 'outside-producer',
      brokers: STACK.kafkaBrokers.split(','),
      logLevel: logLevel.NOTHING,
    });
    producer = kafka.producer();
    await producer.connect();
    rejected = await TopicTap.open(`${topic}.rejected`);

    // The job the PATCH, page-token and secret cases act on.
    const seeded = await http('POST', '/v1/jobs', {
      body: webhookJob({
        job_id: 'seed-1',
        target: {
          type: 'webhook',
          url: 'https://example.com/h',
          headers: { Authorization: SECRET, 'X-Plain': 'p' },
        },
        labels: { team: 'core' },
      }),
    });
    expect(seeded.status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await rejected?.close();
    await producer?.disconnect();
    grpc?.close();
    await Promise.all(apps.map((a) => a.stop()));
    await db?.end();
    await iso?.dispose();
  });

  // ---------- the table ----------

  const cases: Case[] = [];
  // A Kafka UPSERT refused for its job is a refused mutating call too: audited as UpsertJob.
  const add = (c: Case) =>
    cases.push(c.via === 'kafka' && c.status === 'INVALID_JOB' ? { audited: 'UpsertJob', ...c } : c);

  // 7. Text PostgreSQL cannot store: NUL and unpaired surrogates, in every text field of a job.
  const BAD_TEXT: [string, string][] = [
    ['NUL', 'a\u0000b'],
    ['a lone high surrogate', 'a\ud800b'],
    ['a lone low surrogate', 'a\udc00b'],
  ];
  for (const [what, x] of BAD_TEXT) {
    const restFields: [string, string, Json][] = [
      ['payload value', 'payload.note', { payload: { note: x } }],
      ['payload key', `payload.k${x}`, { payload: { [`k${x}`]: 1 } }],
      ['payload list item', 'payload.list[1]', { payload: { list: ['ok', x] } }],
      ['label value', 'labels.team', { labels: { team: x } }],
      ['label key', `labels.t${x}`, { labels: { [`t${x}`]: 'v' } }],
      [
        'webhook header value',
        'target.headers.X-Trace',
        { target: { type: 'webhook', url: 'https://example.com/h', headers: { 'X-Trace': x } } },
      ],
      ['webhook url', 'target.url', { target: { type: 'webhook', url: `https://example.com/${x}` } }],
      ['kafka key', 'target.key', { target: kafkaTarget({ key: x }) }],
      ['kafka header value', 'target.headers.h', { target: kafkaTarget({ headers: { h: x } }) }],
    ];
    for (const [name, field, over] of restFields) {
      add({
        name: `POST /v1/jobs: ${what} in the ${name}`,
        via: 'rest',
        send: rest('POST', '/v1/jobs', { body: webhookJob(over) }),
        status: 400,
        field,
        audited: 'CreateJob',
      });
      add({
        name: `PATCH /v1/jobs/:id: ${what} in the ${name}`,
        via: 'rest',
        send: rest('PATCH', '/v1/jobs/seed-1', { body: over }),
        status: 400,
        field,
        audited: 'UpdateJob',
      });
    }
    const grpcFields: [string, string, Msg][] = [
      [
        'payload value',
        'job.payload.note',
        { payload: { structValue: { fields: { note: { stringValue: x } } } } },
      ],
      [
        'payload key',
        `job.payload.k${x}`,
        { payload: { structValue: { fields: { [`k${x}`]: { numberValue: 1 } } } } },
      ],
      ['label value', 'job.labels.team', { labels: { team: x } }],
      [
        'webhook header value',
        'job.target.webhook.headers.X-Trace',
        { target: { webhook: { url: 'https://example.com/h', headers: { 'X-Trace': x } } } },
      ],
      ['webhook url', 'job.target.webhook.url', { target: { webhook: { url: `https://example.com/${x}` } } }],
      ['kafka key', 'job.target.kafka.key', { target: { kafka: { topic: 'acme.out', key: x } } }],
    ];
    // protobuf strings are UTF-8 on the wire: a lone surrogate arrives as U+FFFD, which is text.
    if (x.includes('\u0000'))
      for (const [name, field, over] of grpcFields)
        add({
          name: `CreateJob: ${what} in the ${name}`,
          via: 'grpc',
          send: grpcCall('CreateJob', { job: protoJob(over) }),
          status: 'INVALID_ARGUMENT',
          field,
          audited: 'CreateJob',
        });
  }
  // Avro strings are UTF-8 (a lone surrogate cannot be written); the payload is JSON text, which can escape one.
  const kafkaText: [string, string, () => Msg][] = [
    [
      'NUL in a label value',
      'job.labels.team',
      () => command('UPSERT', 'k-text-1', avroJob({ labels: { team: 'a\u0000' } })),
    ],
    [
      'NUL in a webhook header',
      'job.target.headers.X-Trace',
      () => command('UPSERT', 'k-text-2', avroJob({ headers: { 'X-Trace': 'a\u0000' } })),
    ],
    [
      'NUL in the url',
      'job.target.url',
      () => command('UPSERT', 'k-text-3', avroJob({ url: 'https://example.com/\u0000' })),
    ],
    [
      'NUL in a kafka key',
      'job.target.key',
      () => command('UPSERT', 'k-text-4', avroJob({ kafka: { topic: 'acme.out', key: 'k\u0000' } })),
    ],
    [
      'NUL in the payload (escaped JSON)',
      'job.payload.a',
      () => command('UPSERT', 'k-text-5', avroJob({ payload: '{"a":"x\\u0000"}' })),
    ],
    [
      'a lone surrogate in the payload (escaped JSON)',
      'job.payload.a',
      () => command('UPSERT', 'k-text-6', avroJob({ payload: '{"a":"x\\ud800"}' })),
    ],
  ];
  for (const [name, field, cmd] of kafkaText)
    add({ name: `UPSERT: ${name}`, via: 'kafka', send: kafkaCommand(cmd), status: 'INVALID_JOB', field });
  // avsc reads a map into a plain object, where a key "__proto__" would vanish: refused instead.
  for (const [name, job] of [
    [
      'a label key __proto__',
      () => avroJob({ labels: JSON.parse('{"__proto__": "x"}') as Record<string, string> }),
    ],
    [
      'a webhook header named __proto__',
      () => avroJob({ headers: JSON.parse('{"__proto__": "x"}') as Record<string, string> }),
    ],
  ] as const)
    add({
      name: `UPSERT: ${name}`,
      via: 'kafka',
      send: kafkaCommand(() => command('UPSERT', `k-proto-${name.length}`, job())),
      status: 'INVALID_COMMAND',
      field: /__proto__/,
    });
  add({
    name: 'PAUSE: NUL in the job id and the message key',
    via: 'kafka',
    send: kafkaCommand(() => command('PAUSE', 'k\u0000')),
    status: 'INVALID_COMMAND',
    field: /job_id/,
  });

  // 7. NUL in query parameters and path segments.
  const restQueries: [string, string, string][] = [
    ['GET /v1/jobs?label= (value)', `/v1/jobs?label=${encodeURIComponent('team=a\u0000')}`, 'label[0]'],
    ['GET /v1/jobs?label= (key)', `/v1/jobs?label=${encodeURIComponent('t\u0000=v')}`, 'label[0]'],
    ['GET /v1/jobs?status=', '/v1/jobs?status=%00', 'status'],
    ['GET /v1/jobs?tenant_id=', '/v1/jobs?tenant_id=a%00', 'tenant_id'],
    ['GET /v1/dead-letters?job_id=', '/v1/dead-letters?job_id=a%00', 'job_id'],
    ['GET /v1/dead-letters?tenant_id=', '/v1/dead-letters?tenant_id=a%00', 'tenant_id'],
    ['GET /v1/jobs/:id', '/v1/jobs/a%00b', 'job_id'],
    ['GET /v1/jobs/:id/runs', '/v1/jobs/a%00b/runs', 'job_id'],
    ['GET /v1/jobs/:id/runs/:fence', '/v1/jobs/a%00b/runs/1', 'job_id'],
    ['GET /v1/jobs/:id/occurrences', '/v1/jobs/a%00b/occurrences', 'job_id'],
  ];
  for (const [name, path, field] of restQueries)
    add({ name: `${name}: NUL`, via: 'rest', send: rest('GET', path), status: 400, field });
  add({
    name: 'POST /v1/dead-letters/:fire_id/replay: NUL in the fire id',
    via: 'rest',
    send: rest('POST', '/v1/dead-letters/a%00b:1/replay'),
    status: 400,
    field: 'fire_id',
    audited: 'ReplayDeadLetter',
  });
  const grpcQueries: [string, Msg, string][] = [
    ['GetJob', { job_id: 'a\u0000b' }, 'job_id'],
    ['ListJobs', { labels: { team: 'a\u0000' } }, 'labels.team'],
    ['ListJobs', { labels: { 't\u0000': 'v' } }, 'labels.t\u0000'],
    ['ListDeadLetters', { job_id: 'a\u0000b' }, 'job_id'],
    ['ListRuns', { job_id: 'a\u0000b' }, 'job_id'],
    ['GetRun', { job_id: 'a\u0000b', fence_token: 1 }, 'job_id'],
    ['ListOccurrences', { job_id: 'a\u0000b' }, 'job_id'],
  ];
  for (const [method, req, field] of grpcQueries)
    add({
      name: `${method}: NUL in ${field}`,
      via: 'grpc',
      send: grpcCall(method, req),
      status: 'INVALID_ARGUMENT',
      field,
    });
  add({
    name: 'ReplayDeadLetter: NUL in the fire id',
    via: 'grpc',
    send: grpcCall('ReplayDeadLetter', { fire_id: 'a\u0000b:1' }),
    status: 'INVALID_ARGUMENT',
    field: 'fire_id',
    audited: 'ReplayDeadLetter',
  });

  // 7. Crafted page tokens: the right kind, wrong value types.
  const tokens: [string, string, unknown][] = [
    ['jobs, after a number', '/v1/jobs', { k: 'jobs', after: 5 }],
    ['jobs, after NUL', '/v1/jobs', { k: 'jobs', after: 'a\u0000' }],
    ['jobs, not JSON', '/v1/jobs', 'not json at all'],
    ['runs, before a string', '/v1/jobs/seed-1/runs', { k: 'runs:seed-1', before: 'x' }],
    ['runs, before 1e300', '/v1/jobs/seed-1/runs', { k: 'runs:seed-1', before: 1e300 }],
    [
      'occurrences, at not an instant',
      '/v1/jobs/seed-1/occurrences',
      { k: 'occurrences:seed-1', at: 'x', kind: 'FIRE', seq: 1 },
    ],
    [
      'occurrences, kind unknown',
      '/v1/jobs/seed-1/occurrences',
      { k: 'occurrences:seed-1', at: '2026-01-01T00:00:00.000Z', kind: 'NOPE', seq: 1 },
    ],
    [
      'occurrences, seq a string',
      '/v1/jobs/seed-1/occurrences',
      { k: 'occurrences:seed-1', at: '2026-01-01T00:00:00.000Z', kind: 'FIRE', seq: '1' },
    ],
    [
      'dead letters, atMicros not digits',
      '/v1/dead-letters',
      { k: 'dead-letters', atMicros: 'x', jobId: 'a', fenceToken: 1 },
    ],
    [
      'dead letters, jobId NUL',
      '/v1/dead-letters',
      { k: 'dead-letters', atMicros: '1', jobId: 'a\u0000', fenceToken: 1 },
    ],
    [
      'dead letters, atMicros past bigint',
      '/v1/dead-letters',
      { k: 'dead-letters', atMicros: '99999999999999999999', jobId: 'a', fenceToken: 1 },
    ],
  ];
  const grpcListOf: Record<string, [string, Msg]> = {
    '/v1/jobs': ['ListJobs', {}],
    '/v1/jobs/seed-1/runs': ['ListRuns', { job_id: 'seed-1' }],
    '/v1/jobs/seed-1/occurrences': ['ListOccurrences', { job_id: 'seed-1' }],
    '/v1/dead-letters': ['ListDeadLetters', {}],
  };
  // Each crafted token carries the right filter digest (acme's own listing), so what is refused
  // is the position's value, not the binding to the listing's filters.
  const digestOf: Record<string, string> = {
    '/v1/jobs': filtersDigest({ tenant_id: 'acme' }),
    '/v1/jobs/seed-1/runs': filtersDigest({}),
    '/v1/jobs/seed-1/occurrences': filtersDigest({}),
    '/v1/dead-letters': filtersDigest({ tenant_id: 'acme' }),
  };
  for (const [name, path, token] of tokens) {
    const t =
      typeof token === 'string'
        ? Buffer.from(token).toString('base64url')
        : pageToken({ ...(token as Json), f: digestOf[path] });
    add({
      name: `GET ${path}: page token ${name}`,
      via: 'rest',
      send: rest('GET', `${path}?page_token=${t}`),
      status: 400,
      field: /page_token: is not a page token issued by this listing/,
    });
    const [method, req] = grpcListOf[path]!;
    add({
      name: `${method}: page token ${name}`,
      via: 'grpc',
      send: grpcCall(method, { ...req, page_token: t }),
      status: 'INVALID_ARGUMENT',
      field: /page_token: is not a page token issued by this listing/,
    });
  }

  // 4. A page token is bound to every filter of its listing, the console's too.
  const boundTo = (filters: Record<string, string | Record<string, string>>) =>
    pageToken({ k: 'jobs', after: 'a', f: filtersDigest({ tenant_id: 'acme', ...filters }) });
  for (const [name, token, query] of [
    ['job_id_prefix', boundTo({ job_id_prefix: 'a' }), 'job_id_prefix=b'],
    ['target_type', boundTo({ target_type: 'webhook' }), 'target_type=kafka'],
    ['label_selector inequality', boundTo({}), 'label_selector=team!=x'],
    ['label_selector equality', boundTo({ label: { team: 'a' } }), 'label_selector=team=b'],
  ] as const)
    add({
      name: `GET /v1/jobs: a page token issued for another ${name}`,
      via: 'rest',
      send: rest('GET', `/v1/jobs?${query}&page_token=${token}`),
      status: 400,
      field: /page_token: was issued for other filters/,
    });

  // 7. Bodies the parser refuses: over the limit (413), a charset it cannot read (415), not JSON (400).
  const big = (bytes: number) => JSON.stringify(webhookJob({ payload: { blob: 'x'.repeat(bytes) } }));
  for (const [method, path] of [
    ['POST', '/v1/jobs'],
    ['PATCH', '/v1/jobs/seed-1'],
  ] as const) {
    for (const size of [400 * 1024, 5 * 1024 * 1024])
      add({
        name: `${method} ${path}: a body of ${size} bytes`,
        via: 'rest',
        send: rest(method, path, { raw: big(size) }),
        status: 413,
        field: 'body',
      });
    add({
      name: `${method} ${path}: charset=latin1`,
      via: 'rest',
      send: rest(method, path, {
        raw: JSON.stringify(webhookJob()),
        headers: { 'content-type': 'application/json; charset=latin1' },
      }),
      status: 415,
      field: 'content-type',
    });
    add({
      name: `${method} ${path}: malformed JSON`,
      via: 'rest',
      send: rest(method, path, { raw: '{"schedule": ' }),
      status: 400,
      field: 'body',
    });
  }

  // 7. Encodings: a gzip bomb inflates past the limit (413), gzip that is not gzip (400), an
  // encoding the parser does not read (415); a body that is not declared JSON (415).
  const job = JSON.stringify(webhookJob());
  for (const [method, path] of [
    ['POST', '/v1/jobs'],
    ['PATCH', '/v1/jobs/seed-1'],
  ] as const) {
    add({
      name: `${method} ${path}: a gzip body that inflates past the limit`,
      via: 'rest',
      send: rest(method, path, {
        raw: gzipSync(Buffer.from(big(2 * 1024 * 1024))),
        headers: { 'content-encoding': 'gzip' },
      }),
      status: 413,
      field: 'body',
    });
    add({
      name: `${method} ${path}: content-encoding gzip on a body that is not gzip`,
      via: 'rest',
      send: rest(method, path, { raw: job, headers: { 'content-encoding': 'gzip' } }),
      status: 400,
      field: 'body',
    });
    add({
      name: `${method} ${path}: content-encoding compress`,
      via: 'rest',
      send: rest(method, path, { raw: job, headers: { 'content-encoding': 'compress' } }),
      status: 415,
      field: 'content-encoding',
    });
    add({
      name: `${method} ${path}: a JSON body sent as text/plain`,
      via: 'rest',
      send: rest(method, path, { raw: job, headers: { 'content-type': 'text/plain' } }),
      status: 415,
      field: 'content-type',
    });
  }
  for (const [path, body] of [
    ['/v1/bulk-actions', 'action=PAUSE&label_selector=team%3Dcore'],
    ['/v1/schedules/preview', 'schedule=x'],
    ['/v1/jobs', 'job_id=x'],
  ] as const)
    add({
      name: `POST ${path}: a form body`,
      via: 'rest',
      send: rest('POST', path, {
        raw: body,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      status: 415,
      field: 'content-type',
    });
  add({
    name: 'POST /v1/jobs: an Idempotency-Key that is not ASCII',
    via: 'rest',
    send: rest('POST', '/v1/jobs', { body: webhookJob(), headers: { 'idempotency-key': 'cl\u00e9' } }),
    status: 400,
    field: 'Idempotency-Key',
    audited: 'CreateJob',
  });

  // 7 and 8. Payload nesting: one limit (32) on every interface, checked without recursion.
  for (const depth of [DEPTH_LIMIT + 1, 10_000]) {
    const raw = `{"schedule":{"kind":"interval","every_ms":3600000},"target":{"type":"webhook","url":"https://example.com/h"},"payload":${nestedText(depth)}}`;
    add({
      name: `POST /v1/jobs: a payload nested ${depth} deep`,
      via: 'rest',
      send: rest('POST', '/v1/jobs', { raw }),
      status: 400,
      field: 'payload',
      audited: 'CreateJob',
    });
    add({
      name: `PATCH /v1/jobs/:id: a payload nested ${depth} deep`,
      via: 'rest',
      send: rest('PATCH', '/v1/jobs/seed-1', { raw: `{"payload":${nestedText(depth)}}` }),
      status: 400,
      field: 'payload',
      audited: 'UpdateJob',
    });
    add({
      name: `UPSERT: a payload nested ${depth} deep`,
      via: 'kafka',
      send: kafkaCommand(() => command('UPSERT', `k-deep-${depth}`, avroJob({ payload: nestedText(depth) }))),
      status: 'INVALID_JOB',
      field: 'job.payload',
    });
  }
  add({
    name: `CreateJob: a payload Value nested ${DEPTH_LIMIT + 1} deep`,
    via: 'grpc',
    send: grpcCall('CreateJob', { job: protoJob({ payload: nestedValue(DEPTH_LIMIT + 1) }) }),
    status: 'INVALID_ARGUMENT',
    field: 'job.payload',
    audited: 'CreateJob',
  });
  add({
    name: 'UpdateJob: a payload Value nested 40 deep',
    via: 'grpc',
    send: grpcCall('UpdateJob', {
      job: { job_id: 'seed-1', payload: nestedValue(40) },
      update_mask: { paths: ['payload'] },
    }),
    status: 'INVALID_ARGUMENT',
    field: 'job.payload',
    audited: 'UpdateJob',
  });
  for (const depth of [60, 5_000])
    add({
      name: `CreateJob (raw bytes): a payload Value nested ${depth} deep, past protobuf's limit`,
      via: 'grpc',
      send: grpcRaw('CreateJob', deepCreateJobBytes(depth)),
      status: 'INVALID_ARGUMENT',
      field: 'request',
    });

  // 7. Size over gRPC: a payload over the limit is the job's fault (named, audited); a message
  // over TICKWORK_GRPC_MAX_MESSAGE_BYTES (payload limit + 64 KiB) is refused by the transport
  // before any handler runs (RESOURCE_EXHAUSTED, as REST's 413).
  add({
    name: 'CreateJob: a payload of 300 KB (over the 256 KiB limit)',
    via: 'grpc',
    send: grpcCall('CreateJob', { job: protoJob({ payload: { stringValue: 'x'.repeat(300 * 1024) } }) }),
    status: 'INVALID_ARGUMENT',
    field: 'job.payload',
    audited: 'CreateJob',
  });
  add({
    name: 'CreateJob: a message of 5 MB',
    via: 'grpc',
    send: grpcCall('CreateJob', { job: protoJob({ payload: { stringValue: 'x'.repeat(5 * 1024 * 1024) } }) }),
    status: 'RESOURCE_EXHAUSTED',
    field: /larger than max/,
  });

  // 7. Undecodable gRPC requests and oversized metadata.
  for (const method of ['CreateJob', 'UpdateJob', 'ListJobs', 'GetJob'])
    add({
      name: `${method} (raw bytes): a request that is not the message`,
      via: 'grpc',
      send: grpcRaw(method, Buffer.from([0x0a, 0xff, 0xff, 0xff])),
      status: 'INVALID_ARGUMENT',
      field: 'request',
    });
  // 100 KB of metadata is served (here refused for its token, not for its size). One value over
  // 64 KiB compressed is refused by the HTTP/2 layer (nghttp2's header field limit) before any
  // gRPC code runs: that is the transport's answer, not the API's (docs/api.md).
  const bigMetadata = Object.fromEntries(
    Array.from({ length: 10 }, (_, i) => [`x-meta-${i}`, 'x'.repeat(10 * 1024)]),
  );
  add({
    name: 'ListJobs: 100 KB of metadata and an unknown token',
    via: 'grpc',
    send: grpcCall('ListJobs', {}, { token: 'not-a-known-token', metadata: bigMetadata }),
    status: 'UNAUTHENTICATED',
    field: /bearer token/,
  });
  add({
    name: 'CreateJob: 100 KB of metadata and a 32 KB unknown token (audited)',
    via: 'grpc',
    send: grpcCall('CreateJob', { job: protoJob() }, { token: 'x'.repeat(32 * 1024), metadata: bigMetadata }),
    status: 'UNAUTHENTICATED',
    field: /bearer token/,
    audited: 'CreateJob',
  });

  // 7. Instants at and past the end of JavaScript's Date range.
  const previews: [string, unknown][] = [
    ['the last Date', '+275760-09-13T00:00:00.000Z'],
    ['a day before the last Date', '+275760-09-12T00:00:00.000Z'],
    ['a year past 9999', '+010000-01-01T00:00:00.000Z'],
    ['a date without an offset', '2026-01-01T00:00:00'],
    ['a number', 1e15],
  ];
  for (const [name, from] of previews)
    add({
      name: `POST /v1/schedules/preview: from ${name}`,
      via: 'rest',
      send: rest('POST', '/v1/schedules/preview', {
        body: { schedule: { kind: 'interval', every_ms: 60_000 }, from },
      }),
      status: 400,
      field: 'from',
    });
  // 9. Definitions that parse but cannot be a job: each refused naming the field.
  const wh = (over: Json) => ({ type: 'webhook', url: 'https://example.com/h', ...over });
  const shapes: [string, Json, string][] = [
    [
      'a cron that never fires (Feb 30)',
      { schedule: { kind: 'cron', expression: '0 0 30 2 *', time_zone: 'UTC' } },
      'schedule.expression',
    ],
    ['every_ms 0', { schedule: { kind: 'interval', every_ms: 0 } }, 'schedule.every_ms'],
    ['every_ms 1.5', { schedule: { kind: 'interval', every_ms: 1.5 } }, 'schedule.every_ms'],
    ['every_ms 1e20', { schedule: { kind: 'interval', every_ms: 1e20 } }, 'schedule.every_ms'],
    ['every_ms as text', { schedule: { kind: 'interval', every_ms: '60000' } }, 'schedule.every_ms'],
    [
      'an unknown time zone',
      { schedule: { kind: 'cron', expression: '0 9 * * *', time_zone: 'Mars/Olympus' } },
      'schedule.time_zone',
    ],
    [
      'an empty time zone',
      { schedule: { kind: 'cron', expression: '0 9 * * *', time_zone: '' } },
      'schedule.time_zone',
    ],
    ['an unknown schedule kind', { schedule: { kind: 'lunar' } }, 'schedule.kind'],
    ['a webhook url that is not http(s)', { target: wh({ url: 'ftp://example.com/x' }) }, 'target.url'],
    [
      'a webhook url with credentials',
      { target: wh({ url: 'https://user:pw@example.com/x' }) },
      'target.url',
    ],
    ['a webhook method TRACE', { target: wh({ method: 'TRACE' }) }, 'target.method'],
    ['timeout_ms 0', { target: wh({ timeout_ms: 0 }) }, 'target.timeout_ms'],
    [
      'success_status min above max',
      { target: wh({ success_status: { min: 300, max: 200 } }) },
      'target.success_status.max',
    ],
    [
      'success_status max 600',
      { target: wh({ success_status: { min: 200, max: 600 } }) },
      'target.success_status.max',
    ],
    ['a label value that is a number', { labels: { team: 5 } }, 'labels.team'],
    ['a job_id with a slash', { job_id: 'a/b' }, 'job_id'],
    ['a job_id of 129 characters', { job_id: 'j'.repeat(129) }, 'job_id'],
    ['an unknown top-level field', { colour: 'blue' }, 'colour'],
    ['an unknown target type', { target: { type: 'carrier-pigeon' } }, 'target.type'],
    [
      'a kafka target on a topic internal to Kafka',
      { target: kafkaTarget({ topic: '__consumer_offsets' }) },
      'target.topic',
    ],
    [
      "a kafka target on the registry's topic",
      { target: kafkaTarget({ topic: '_schemas' }) },
      'target.topic',
    ],
    ['jitter_ms -1', { policies: { jitter_ms: -1 } }, 'policies.jitter_ms'],
    ['misfire unknown', { policies: { misfire: 'SOMETIMES' } }, 'policies.misfire'],
  ];
  for (const [name, over, field] of shapes)
    add({
      name: `POST /v1/jobs: ${name}`,
      via: 'rest',
      send: rest('POST', '/v1/jobs', { raw: JSON.stringify(webhookJob(over)) }),
      status: 400,
      field,
      audited: 'CreateJob',
    });

  // 10. Credentials in a webhook URL would be echoed by every read (and fetch refuses them at
  // every fire); a Kafka target on Tickwork's own topics could forge fires or commands. Both are
  // refused on every interface, not only by the executor at fire time.
  const ownTopic = () => `${iso.topicPrefix}.fires`;
  add({
    name: "POST /v1/jobs: a kafka target on Tickwork's own fires topic",
    via: 'rest',
    send: () =>
      restOutcome(
        http('POST', '/v1/jobs', { body: webhookJob({ target: kafkaTarget({ topic: ownTopic() }) }) }),
      ),
    status: 400,
    field: 'target.topic',
    audited: 'CreateJob',
  });
  add({
    name: "CreateJob: a kafka target on Tickwork's own commands topic",
    via: 'grpc',
    send: () => grpcCall('CreateJob', { job: protoJob({ target: { kafka: { topic: topic } } }) })(),
    status: 'INVALID_ARGUMENT',
    field: 'job.target.kafka.topic',
    audited: 'CreateJob',
  });
  add({
    name: 'CreateJob: a webhook url with credentials',
    via: 'grpc',
    send: grpcCall('CreateJob', {
      job: protoJob({ target: { webhook: { url: 'https://u:p@example.com/h' } } }),
    }),
    status: 'INVALID_ARGUMENT',
    field: 'job.target.webhook.url',
    audited: 'CreateJob',
  });
  add({
    name: 'UPSERT: a webhook url with credentials',
    via: 'kafka',
    send: kafkaCommand(() => command('UPSERT', 'k-creds', avroJob({ url: 'https://u:p@example.com/h' }))),
    status: 'INVALID_JOB',
    field: 'job.target.url',
  });
  add({
    name: "UPSERT: a kafka target on Tickwork's own fires topic",
    via: 'kafka',
    send: () =>
      kafkaCommand(() =>
        command('UPSERT', 'k-own-topic', avroJob({ kafka: { topic: ownTopic(), key: null } })),
      )(),
    status: 'INVALID_JOB',
    field: 'job.target.topic',
  });

  // 9. Update masks over gRPC; an If-Match no version can have over REST (a weak or stale etag is
  // well formed: 412 when it does not match, as api-rest tests).
  const masks: [string, Msg, string][] = [
    [
      'a nested update_mask path',
      { job: { job_id: 'seed-1' }, update_mask: { paths: ['target.url'] } },
      'update_mask.paths[0]',
    ],
    [
      'an empty update_mask path',
      { job: { job_id: 'seed-1' }, update_mask: { paths: [''] } },
      'update_mask.paths[0]',
    ],
    ['no update_mask', { job: { job_id: 'seed-1', labels: { a: 'b' } } }, 'update_mask'],
    [
      'a mask naming job_id',
      { job: { job_id: 'seed-1' }, update_mask: { paths: ['job_id'] } },
      'update_mask.paths[0]',
    ],
  ];
  for (const [name, req, field] of masks)
    add({
      name: `UpdateJob: ${name}`,
      via: 'grpc',
      send: grpcCall('UpdateJob', req),
      status: 'INVALID_ARGUMENT',
      field,
      audited: 'UpdateJob',
    });
  add({
    name: 'PATCH /v1/jobs/:id: If-Match a version past 2^53',
    via: 'rest',
    send: rest('PATCH', '/v1/jobs/seed-1', {
      body: { labels: {} },
      headers: { 'if-match': '"v99999999999999999999"' },
    }),
    status: 400,
    field: 'etag',
    audited: 'UpdateJob',
  });

  // 7 and 9. The preview's other fields.
  add({
    name: 'POST /v1/schedules/preview: NUL in the job_id',
    via: 'rest',
    send: rest('POST', '/v1/schedules/preview', {
      body: { schedule: { kind: 'interval', every_ms: 60_000 }, job_id: 'a\u0000' },
    }),
    status: 400,
    field: 'job_id',
  });
  add({
    name: 'POST /v1/schedules/preview: spread_ms -1',
    via: 'rest',
    send: rest('POST', '/v1/schedules/preview', {
      body: { schedule: { kind: 'interval', every_ms: 60_000 }, job_id: 'p', spread_ms: -1 },
    }),
    status: 400,
    field: 'spread_ms',
  });
  add({
    name: 'POST /v1/schedules/preview: count 1001',
    via: 'rest',
    send: rest('POST', '/v1/schedules/preview', {
      body: { schedule: { kind: 'interval', every_ms: 60_000 }, count: 1001 },
    }),
    status: 400,
    field: 'count',
  });
  add({
    name: 'PreviewSchedule: NUL in the job_id',
    via: 'grpc',
    send: grpcCall('PreviewSchedule', { schedule: { interval: { every_ms: 60_000 } }, job_id: 'a\u0000' }),
    status: 'INVALID_ARGUMENT',
    field: 'job_id',
  });
  add({
    name: 'PreviewSchedule: spread_ms -1',
    via: 'grpc',
    send: grpcCall('PreviewSchedule', {
      schedule: { interval: { every_ms: 60_000 } },
      job_id: 'p',
      spread_ms: -1,
    }),
    status: 'INVALID_ARGUMENT',
    field: 'spread_ms',
  });
  add({
    name: 'ListOccurrences: page_size 5000',
    via: 'grpc',
    send: grpcCall('ListOccurrences', { job_id: 'seed-1', page_size: 5000 }),
    status: 'INVALID_ARGUMENT',
    field: 'page_size',
  });

  // 9. A day its month does not have (JavaScript's Date would move it into the next month).
  const notADay: [string, string, Parameters<typeof http>[2], string, string?][] = [
    [
      'POST',
      '/v1/jobs',
      { body: webhookJob({ schedule: { kind: 'once', at: '2026-02-30T09:00:00Z' } }) },
      'schedule.at',
      'CreateJob',
    ],
    [
      'PATCH',
      '/v1/jobs/seed-1',
      {
        body: {
          schedule: { kind: 'interval', every_ms: 3_600_000, start_at: '2027-04-31T00:00:00+02:00' },
        },
      },
      'schedule.start_at',
      'UpdateJob',
    ],
    [
      'POST',
      '/v1/schedules/preview',
      { body: { schedule: { kind: 'interval', every_ms: 60_000 }, from: '2025-02-29T00:00:00Z' } },
      'from',
    ],
    [
      'POST',
      '/v1/bulk-actions',
      { body: { action: 'PAUSE', label_selector: 'team=core', until: '2100-02-29T00:00:00Z' } },
      'until',
      'BulkAction',
    ],
  ];
  for (const [method, path, opts, field, audited] of notADay)
    add({
      name: `${method} ${path}: ${field} on a day its month does not have`,
      via: 'rest',
      send: rest(method, path, opts),
      status: 400,
      field,
      ...(audited ? { audited } : {}),
    });
  for (const seconds of [1e15, 8.64e12, -1e15])
    add({
      name: `PreviewSchedule: from seconds ${seconds}`,
      via: 'grpc',
      send: grpcCall('PreviewSchedule', { schedule: { interval: { every_ms: 60_000 } }, from: { seconds } }),
      status: 'INVALID_ARGUMENT',
      field: 'from',
    });
  const grpcInstants: [string, string, Msg][] = [
    ['once.at seconds 1e15', 'job.schedule.once.at', { schedule: { once: { at: { seconds: 1e15 } } } }],
    [
      'interval.anchor seconds 8.64e12',
      'job.schedule.interval.anchor',
      { schedule: { interval: { every_ms: 60_000, anchor: { seconds: 8.64e12 } } } },
    ],
    [
      'cron.end_at seconds -1e15',
      'job.schedule.cron.end_at',
      { schedule: { cron: { expression: '0 9 * * *', time_zone: 'UTC', end_at: { seconds: -1e15 } } } },
    ],
  ];
  for (const [name, field, over] of grpcInstants)
    add({
      name: `CreateJob: ${name}`,
      via: 'grpc',
      send: grpcCall('CreateJob', { job: protoJob(over) }),
      status: 'INVALID_ARGUMENT',
      field,
      audited: 'CreateJob',
    });

  // 9. Validation gaps: every retry field, unknown keys, __proto__, CRLF in headers, gRPC enum numbers.
  const retryBad: [string, unknown][] = [
    ['max_attempts', 0],
    ['max_attempts', 101],
    ['max_attempts', 'x'],
    ['initial_backoff_ms', -1],
    ['multiplier', 0.5],
    ['multiplier', 'x'],
    ['max_backoff_ms', -1],
    ['max_event_age_ms', 10],
  ];
  for (const [key, value] of retryBad) {
    add({
      name: `POST /v1/jobs: policies.retry.${key} = ${JSON.stringify(value)}`,
      via: 'rest',
      send: rest('POST', '/v1/jobs', { body: webhookJob({ policies: { retry: { [key]: value } } }) }),
      status: 400,
      field: `policies.retry.${key}`,
      audited: 'CreateJob',
    });
    if (typeof value === 'number')
      add({
        name: `CreateJob: policies.retry.${key} = ${value}`,
        via: 'grpc',
        send: grpcCall('CreateJob', { job: protoJob({ policies: { retry: { [key]: value } } }) }),
        status: 'INVALID_ARGUMENT',
        field: `job.policies.retry.${key}`,
        audited: 'CreateJob',
      });
  }
  add({
    name: 'UPSERT: policies.retry.max_attempts = 0',
    via: 'kafka',
    send: kafkaCommand(() => command('UPSERT', 'k-retry', avroJob({ retry: { max_attempts: 0 } }))),
    status: 'INVALID_JOB',
    field: 'job.policies.retry.max_attempts',
  });
  const restShapes: [string, string, Json][] = [
    ['policies.retry not an object', 'policies.retry', { policies: { retry: 5 } }],
    [
      'an unknown key in policies.retry',
      'policies.retry.max_attempt',
      { policies: { retry: { max_attempt: 3 } } },
    ],
    [
      'an unknown key in target.success_status',
      'target.success_status.minimum',
      {
        target: {
          type: 'webhook',
          url: 'https://example.com/h',
          success_status: { min: 200, max: 299, minimum: 1 },
        },
      },
    ],
    ['a label key __proto__', 'labels.__proto__', { labels: JSON.parse('{"__proto__": "x"}') as Json }],
    [
      'CRLF in a webhook header name',
      'target.headers.X-A\r\nX-Injected',
      { target: { type: 'webhook', url: 'https://example.com/h', headers: { 'X-A\r\nX-Injected': 'v' } } },
    ],
    [
      'CRLF in a webhook header value',
      'target.headers.X-A',
      { target: { type: 'webhook', url: 'https://example.com/h', headers: { 'X-A': 'v\r\nX-Injected: 1' } } },
    ],
    [
      'a bare LF in a webhook header value',
      'target.headers.X-A',
      { target: { type: 'webhook', url: 'https://example.com/h', headers: { 'X-A': 'v\nw' } } },
    ],
    [
      'a colon in a webhook header name',
      'target.headers.X-A:',
      { target: { type: 'webhook', url: 'https://example.com/h', headers: { 'X-A:': 'v' } } },
    ],
  ];
  for (const [name, field, over] of restShapes)
    add({
      name: `POST /v1/jobs: ${name}`,
      via: 'rest',
      // Sent as text: JSON.stringify keeps an own __proto__ key, a spread would not.
      send: rest('POST', '/v1/jobs', { raw: JSON.stringify(webhookJob(over)) }),
      status: 400,
      field,
      audited: 'CreateJob',
    });
  add({
    name: 'PATCH /v1/jobs/:id: CRLF in a webhook header value',
    via: 'rest',
    send: rest('PATCH', '/v1/jobs/seed-1', {
      body: {
        target: { type: 'webhook', url: 'https://example.com/h', headers: { 'X-A': 'v\r\nX-Injected: 1' } },
      },
    }),
    status: 400,
    field: 'target.headers.X-A',
    audited: 'UpdateJob',
  });
  add({
    name: 'CreateJob: CRLF in a webhook header value',
    via: 'grpc',
    send: grpcCall('CreateJob', {
      job: protoJob({
        target: { webhook: { url: 'https://example.com/h', headers: { 'X-A': 'v\r\nX-Injected: 1' } } },
      }),
    }),
    status: 'INVALID_ARGUMENT',
    field: 'job.target.webhook.headers.X-A',
    audited: 'CreateJob',
  });
  add({
    name: 'CreateJob: CRLF in a webhook header name',
    via: 'grpc',
    send: grpcCall('CreateJob', {
      job: protoJob({ target: { webhook: { url: 'https://example.com/h', headers: { 'X-A\r\nB': 'v' } } } }),
    }),
    status: 'INVALID_ARGUMENT',
    field: 'job.target.webhook.headers.X-A\r\nB',
    audited: 'CreateJob',
  });
  add({
    name: 'UPSERT: CRLF in a webhook header value',
    via: 'kafka',
    send: kafkaCommand(() =>
      command('UPSERT', 'k-crlf', avroJob({ headers: { 'X-A': 'v\r\nX-Injected: 1' } })),
    ),
    status: 'INVALID_JOB',
    field: 'job.target.headers.X-A',
  });
  // protobufjs keeps a "__proto__" map key as an own property: the service sees it and refuses it.
  add({
    name: 'CreateJob: a label key __proto__',
    via: 'grpc',
    send: grpcCall('CreateJob', { job: protoJob({ labels: JSON.parse('{"__proto__": "x"}') as Msg }) }),
    status: 'INVALID_ARGUMENT',
    field: 'job.labels.__proto__',
    audited: 'CreateJob',
  });
  add({
    name: 'CreateJob: a webhook header named __proto__',
    via: 'grpc',
    send: grpcCall('CreateJob', {
      job: protoJob({
        target: {
          webhook: { url: 'https://example.com/h', headers: JSON.parse('{"__proto__": "x"}') as Msg },
        },
      }),
    }),
    status: 'INVALID_ARGUMENT',
    field: 'job.target.webhook.headers.__proto__',
    audited: 'CreateJob',
  });
  const kafkaShapes: [string, string, () => Msg][] = [
    [
      'NUL in a label key',
      'job.labels.t\u0000',
      () => command('UPSERT', 'k-shape-1', avroJob({ labels: { 't\u0000': 'v' } })),
    ],
    [
      'NUL in a payload key (escaped JSON)',
      'job.payload.k\u0000',
      () => command('UPSERT', 'k-shape-2', avroJob({ payload: '{"k\\u0000":1}' })),
    ],
    [
      'NUL in a kafka target header',
      'job.target.headers.h',
      () =>
        command(
          'UPSERT',
          'k-shape-3',
          avroJob({ kafka: { topic: 'acme.out', key: null, headers: { h: 'a\u0000' } } }),
        ),
    ],
    [
      'CRLF in a webhook header name',
      'job.target.headers.X-A\r\nB',
      () => command('UPSERT', 'k-shape-4', avroJob({ headers: { 'X-A\r\nB': 'v' } })),
    ],
    [
      'policies.retry.multiplier = 0.5',
      'job.policies.retry.multiplier',
      () => command('UPSERT', 'k-shape-5', avroJob({ retry: { multiplier: 0.5 } })),
    ],
    [
      'policies.retry.max_event_age_ms = 10',
      'job.policies.retry.max_event_age_ms',
      () => command('UPSERT', 'k-shape-6', avroJob({ retry: { max_event_age_ms: 10 } })),
    ],
  ];
  for (const [name, field, cmd] of kafkaShapes)
    add({ name: `UPSERT: ${name}`, via: 'kafka', send: kafkaCommand(cmd), status: 'INVALID_JOB', field });
  const enums: [string, string, Msg][] = [
    ['policies.misfire 99', 'job.policies.misfire', { policies: { misfire: 99 } }],
    ['policies.overlap -5', 'job.policies.overlap', { policies: { overlap: -5 } }],
    [
      'cron dst_gap 7',
      'job.schedule.cron.dst_gap',
      { schedule: { cron: { expression: '0 9 * * *', time_zone: 'UTC', dst_gap: 7 } } },
    ],
    [
      'cron dst_repeat 9',
      'job.schedule.cron.dst_repeat',
      { schedule: { cron: { expression: '0 9 * * *', time_zone: 'UTC', dst_repeat: 9 } } },
    ],
    [
      'webhook method 42',
      'job.target.webhook.method',
      { target: { webhook: { url: 'https://example.com/h', method: 42 } } },
    ],
  ];
  for (const [name, field, over] of enums)
    add({
      name: `CreateJob: ${name}`,
      via: 'grpc',
      send: grpcCall('CreateJob', { job: protoJob(over) }),
      status: 'INVALID_ARGUMENT',
      field,
      audited: 'CreateJob',
    });
  add({
    name: 'ListJobs: status 99',
    via: 'grpc',
    send: grpcCall('ListJobs', { status: 99 }),
    status: 'INVALID_ARGUMENT',
    field: 'status',
  });

  // 10. A secret header's mask is not a value: sent for a job that holds no such secret, it is refused.
  add({
    name: 'POST /v1/jobs: the secret mask as an Authorization value',
    via: 'rest',
    send: rest('POST', '/v1/jobs', {
      body: webhookJob({
        target: { type: 'webhook', url: 'https://example.com/h', headers: { Authorization: '********' } },
      }),
    }),
    status: 400,
    field: 'target.headers.Authorization',
    audited: 'CreateJob',
  });
  add({
    name: 'PATCH /v1/jobs/:id: the secret mask for a header the job does not hold',
    via: 'rest',
    send: rest('PATCH', '/v1/jobs/seed-1', {
      body: {
        target: { type: 'webhook', url: 'https://example.com/h', headers: { 'X-Api-Key': '********' } },
      },
    }),
    status: 400,
    field: 'target.headers.X-Api-Key',
    audited: 'UpdateJob',
  });

  // 11. Refused mutating calls are audited: no or a bad token, unknown fields, bad If-Match, bad ids.
  const mutating: [string, string, string, unknown][] = [
    ['POST', '/v1/jobs', 'CreateJob', webhookJob()],
    ['PATCH', '/v1/jobs/seed-1', 'UpdateJob', { labels: {} }],
    ['DELETE', '/v1/jobs/seed-1', 'DeleteJob', undefined],
    ['POST', '/v1/jobs/seed-1/pause', 'PauseJob', undefined],
    ['POST', '/v1/jobs/seed-1/resume', 'ResumeJob', undefined],
    ['POST', '/v1/jobs/seed-1/trigger', 'TriggerJob', undefined],
    ['POST', '/v1/dead-letters/seed-1:1/replay', 'ReplayDeadLetter', undefined],
  ];
  for (const [method, path, action, body] of mutating)
    for (const [how, token] of [
      ['no token', null],
      ['an unknown token', 'not-a-known-token'],
    ] as const)
      add({
        name: `${method} ${path}: ${how}`,
        via: 'rest',
        send: rest(method, path, { token, ...(body !== undefined ? { body } : {}) }),
        status: 401,
        field: /token/,
        audited: action,
      });
  const grpcMutating: [string, Msg][] = [
    ['CreateJob', { job: protoJob() }],
    ['UpdateJob', { job: { job_id: 'seed-1', labels: {} }, update_mask: { paths: ['labels'] } }],
    ['DeleteJob', { job_id: 'seed-1' }],
    ['PauseJob', { job_id: 'seed-1' }],
    ['ResumeJob', { job_id: 'seed-1' }],
    ['TriggerJob', { job_id: 'seed-1' }],
    ['ReplayDeadLetter', { fire_id: 'seed-1:1' }],
  ];
  for (const [method, req] of grpcMutating)
    for (const [how, token] of [
      ['no token', null],
      ['an unknown token', 'not-a-known-token'],
    ] as const)
      add({
        name: `${method}: ${how}`,
        via: 'grpc',
        send: grpcCall(method, req, { token }),
        status: 'UNAUTHENTICATED',
        field: /token/,
        audited: method,
      });
  const refusedEdits: [string, string, string, Parameters<typeof http>[2], string][] = [
    ['PATCH with an unknown field', 'PATCH', '/v1/jobs/seed-1', { body: { status: 'PAUSED' } }, 'status'],
    ['PATCH with a body that is not an object', 'PATCH', '/v1/jobs/seed-1', { raw: '[1]' }, 'body'],
    [
      'PATCH with a malformed If-Match',
      'PATCH',
      '/v1/jobs/seed-1',
      { body: { labels: {} }, headers: { 'if-match': 'garbage' } },
      'etag',
    ],
    [
      'DELETE with a malformed If-Match',
      'DELETE',
      '/v1/jobs/seed-1',
      { headers: { 'if-match': '"w3"' } },
      'etag',
    ],
    ['PATCH of an invalid job id', 'PATCH', '/v1/jobs/bad%20id!', { body: { labels: {} } }, 'job_id'],
    ['DELETE of an invalid job id', 'DELETE', '/v1/jobs/bad%20id!', {}, 'job_id'],
    ['pause of an invalid job id', 'POST', '/v1/jobs/bad%20id!/pause', {}, 'job_id'],
    ['resume of an invalid job id', 'POST', '/v1/jobs/bad%20id!/resume', {}, 'job_id'],
    ['trigger of an invalid job id', 'POST', '/v1/jobs/bad%20id!/trigger', {}, 'job_id'],
    ['replay of a fire id without a fence token', 'POST', '/v1/dead-letters/seed-1/replay', {}, 'fire_id'],
    ['replay of a fire id with a bad fence token', 'POST', '/v1/dead-letters/seed-1:x/replay', {}, 'fire_id'],
    ['replay of a fire id without a job id', 'POST', '/v1/dead-letters/:1/replay', {}, 'fire_id'],
  ];
  const actionOf = (method: string, path: string) =>
    path.includes('/replay')
      ? 'ReplayDeadLetter'
      : path.endsWith('/pause')
        ? 'PauseJob'
        : path.endsWith('/resume')
          ? 'ResumeJob'
          : path.endsWith('/trigger')
            ? 'TriggerJob'
            : method === 'DELETE'
              ? 'DeleteJob'
              : 'UpdateJob';
  for (const [name, method, path, opts, field] of refusedEdits)
    add({
      name: `${method} ${path}: ${name}`,
      via: 'rest',
      send: rest(method, path, opts),
      status: 400,
      field,
      audited: actionOf(method, path),
    });
  const grpcRefusedEdits: [string, string, Msg, string][] = [
    [
      'a malformed etag',
      'UpdateJob',
      { job: { job_id: 'seed-1', labels: {} }, update_mask: { paths: ['labels'] }, etag: 'garbage' },
      'etag',
    ],
    [
      'an unknown update_mask path',
      'UpdateJob',
      { job: { job_id: 'seed-1' }, update_mask: { paths: ['status'] } },
      'update_mask.paths[0]',
    ],
    ['a malformed etag', 'DeleteJob', { job_id: 'seed-1', etag: 'garbage' }, 'etag'],
    ['an invalid job id', 'PauseJob', { job_id: 'bad id!' }, 'job_id'],
    ['an invalid job id', 'TriggerJob', { job_id: 'bad id!' }, 'job_id'],
    ['a malformed fire id', 'ReplayDeadLetter', { fire_id: 'seed-1' }, 'fire_id'],
  ];
  for (const [name, method, req, field] of grpcRefusedEdits)
    add({
      name: `${method}: ${name}`,
      via: 'grpc',
      send: grpcCall(method, req),
      status: 'INVALID_ARGUMENT',
      field,
      audited: method,
    });

  // 7 and 9 again, on the surfaces added since the issue was filed (bulk actions, the console's
  // list filters, lateness, rrule schedules): the same classes of input, the same refusals.
  const laterRest: [string, string, string, Parameters<typeof http>[2], string, string?][] = [
    [
      'NUL in a label_selector value',
      'POST',
      '/v1/bulk-actions',
      { body: { action: 'PAUSE', label_selector: 'team=a\u0000' } },
      'label_selector',
      'BulkAction',
    ],
    [
      'a lone surrogate in a label_selector key',
      'POST',
      '/v1/bulk-actions',
      { body: { action: 'PAUSE', label_selector: 't\ud800=v' } },
      'label_selector',
      'BulkAction',
    ],
    [
      'until past the end of the Date range',
      'POST',
      '/v1/bulk-actions',
      { body: { action: 'PAUSE', label_selector: 'team=core', until: '+275760-09-13T00:00:00.001Z' } },
      'until',
      'BulkAction',
    ],
    [
      'an unknown field',
      'POST',
      '/v1/bulk-actions',
      { body: { action: 'PAUSE', label_selector: 'team=core', everything: true } },
      'everything',
      'BulkAction',
    ],
    [
      'NUL in the tenant_id (admin)',
      'POST',
      '/v1/bulk-actions',
      { token: ADMIN, body: { action: 'PAUSE', label_selector: 'team=core', tenant_id: 'a\u0000' } },
      'tenant_id',
      'BulkAction',
    ],
    ['NUL in job_id_prefix', 'GET', '/v1/jobs?job_id_prefix=a%00', {}, 'job_id_prefix'],
    ['NUL in target_type', 'GET', '/v1/jobs?target_type=%00', {}, 'target_type'],
    [
      'NUL in label_selector',
      'GET',
      `/v1/jobs?label_selector=${encodeURIComponent('team!=a\u0000')}`,
      {},
      'label_selector',
    ],
    ['NUL in the job_id', 'GET', '/v1/lateness?job_id=a%00', {}, 'job_id'],
    ['NUL in the tenant_id (admin)', 'GET', '/v1/lateness?tenant_id=a%00', { token: ADMIN }, 'tenant_id'],
    ['NUL in the window', 'GET', '/v1/lateness?window=1h%00', {}, 'window'],
    [
      'NUL in an rrule rule',
      'POST',
      '/v1/jobs',
      {
        body: webhookJob({
          schedule: {
            kind: 'rrule',
            rule: 'FREQ=DAILY\u0000',
            dtstart: '2026-01-01T09:00:00',
            time_zone: 'UTC',
          },
        }),
      },
      'schedule.rule',
      'CreateJob',
    ],
    [
      'NUL in an rrule exdate',
      'POST',
      '/v1/jobs',
      {
        body: webhookJob({
          schedule: {
            kind: 'rrule',
            rule: 'FREQ=DAILY',
            dtstart: '2026-01-01T09:00:00',
            time_zone: 'UTC',
            exdates: ['2026-01-02T09:00:00\u0000'],
          },
        }),
      },
      'schedule.exdates[0]',
      'CreateJob',
    ],
    [
      'NUL in a cron time_zone',
      'POST',
      '/v1/jobs',
      { body: webhookJob({ schedule: { kind: 'cron', expression: '0 9 * * *', time_zone: 'UTC\u0000' } }) },
      'schedule.time_zone',
      'CreateJob',
    ],
    [
      'NUL in a cron expression',
      'POST',
      '/v1/schedules/preview',
      { body: { schedule: { kind: 'cron', expression: '0 9 * * *\u0000', time_zone: 'UTC' } } },
      'schedule.expression',
    ],
  ];
  for (const [name, method, path, opts, field, audited] of laterRest)
    add({
      name: `${method} ${path.split('?')[0]}: ${name}`,
      via: 'rest',
      send: rest(method, path, opts),
      status: 400,
      field,
      ...(audited ? { audited } : {}),
    });
  for (const window of ['toString', '__proto__'])
    add({
      name: `GET /v1/lateness: a window named ${window}`,
      via: 'rest',
      send: rest('GET', `/v1/lateness?window=${window}`),
      status: 400,
      field: 'window',
    });
  add({
    name: 'POST /v1/schedules/preview: charset=latin1',
    via: 'rest',
    send: rest('POST', '/v1/schedules/preview', {
      raw: JSON.stringify({ schedule: { kind: 'interval', every_ms: 60_000 } }),
      headers: { 'content-type': 'application/json; charset=latin1' },
    }),
    status: 415,
    field: 'content-type',
  });
  add({
    name: 'POST /v1/bulk-actions: a body of 5 MiB',
    via: 'rest',
    send: rest('POST', '/v1/bulk-actions', {
      raw: JSON.stringify({ action: 'PAUSE', label_selector: `team=${'x'.repeat(5 * 1024 * 1024)}` }),
    }),
    status: 413,
    field: 'body',
  });
  const laterGrpc: [string, string, Msg, string, string?][] = [
    ['action 99', 'BulkAction', { action: 99, label_selector: 'team=core' }, 'action', 'BulkAction'],
    [
      'missed 99',
      'BulkAction',
      { action: 'BULK_ACTION_KIND_RESUME', label_selector: 'team=core', missed: 99 },
      'missed',
      'BulkAction',
    ],
    [
      'until seconds 1e15',
      'BulkAction',
      { action: 'BULK_ACTION_KIND_PAUSE', label_selector: 'team=core', until: { seconds: 1e15 } },
      'until',
      'BulkAction',
    ],
    [
      'NUL in label_selector',
      'BulkAction',
      { action: 'BULK_ACTION_KIND_PAUSE', label_selector: 'team=a\u0000' },
      'label_selector',
      'BulkAction',
    ],
    ['NUL in the job_id', 'GetLateness', { job_id: 'a\u0000' }, 'job_id'],
    ['NUL in the window', 'GetLateness', { window: '1h\u0000' }, 'window'],
    [
      'NUL in an rrule rule',
      'CreateJob',
      {
        job: protoJob({
          schedule: { rrule: { rule: 'FREQ=DAILY\u0000', dtstart: '2026-01-01T09:00:00', time_zone: 'UTC' } },
        }),
      },
      'job.schedule.rrule.rule',
      'CreateJob',
    ],
    [
      'rrule dst_gap 7',
      'CreateJob',
      {
        job: protoJob({
          schedule: {
            rrule: { rule: 'FREQ=DAILY', dtstart: '2026-01-01T09:00:00', time_zone: 'UTC', dst_gap: 7 },
          },
        }),
      },
      'job.schedule.rrule.dst_gap',
      'CreateJob',
    ],
    [
      'rrule end_at seconds 1e15',
      'CreateJob',
      {
        job: protoJob({
          schedule: {
            rrule: {
              rule: 'FREQ=DAILY',
              dtstart: '2026-01-01T09:00:00',
              time_zone: 'UTC',
              end_at: { seconds: 1e15 },
            },
          },
        }),
      },
      'job.schedule.rrule.end_at',
      'CreateJob',
    ],
    [
      'NUL in a cron time_zone',
      'PreviewSchedule',
      { schedule: { cron: { expression: '0 9 * * *', time_zone: 'UTC\u0000' } } },
      'schedule.cron.time_zone',
    ],
  ];
  addInvalidGrpc(laterGrpc);

  // Backfills: the window, the pace and the skip reasons, each refused naming its field (a dry
  // run writes nothing, not even the refusal's audit row); a backfill id that is not one.
  const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString();
  const dayAgo = () => new Date(Date.now() - 86_400_000).toISOString();
  const backfillRest: [string, () => Json, string, boolean][] = [
    ['no from', () => ({ to: hourAgo() }), 'from', true],
    ['NUL in from', () => ({ from: `${dayAgo()}\u0000`, to: hourAgo() }), 'from', true],
    [
      'a day that does not exist in from',
      () => ({ from: '2026-02-30T00:00:00Z', to: hourAgo() }),
      'from',
      true,
    ],
    ['to before from', () => ({ from: hourAgo(), to: dayAgo() }), 'to', true],
    [
      'to in the future',
      () => ({ from: dayAgo(), to: new Date(Date.now() + 3_600_000).toISOString() }),
      'to',
      true,
    ],
    ['a window over 366 days', () => ({ from: '2020-01-01T00:00:00Z', to: hourAgo() }), 'to', true],
    [
      'max_per_second 0',
      () => ({ from: dayAgo(), to: hourAgo(), max_per_second: 0 }),
      'max_per_second',
      true,
    ],
    [
      'max_per_second as text',
      () => ({ from: dayAgo(), to: hourAgo(), max_per_second: '5' }),
      'max_per_second',
      true,
    ],
    [
      'max_per_second over 1000',
      () => ({ from: dayAgo(), to: hourAgo(), max_per_second: 1e6 }),
      'max_per_second',
      true,
    ],
    [
      'an unknown skip reason',
      () => ({ from: dayAgo(), to: hourAgo(), skip_reasons: ['LATE'] }),
      'skip_reasons[0]',
      true,
    ],
    [
      'skip_reasons not a list',
      () => ({ from: dayAgo(), to: hourAgo(), skip_reasons: 'PAUSED' }),
      'skip_reasons',
      true,
    ],
    ['an unknown field', () => ({ from: dayAgo(), to: hourAgo(), everything: true }), 'everything', true],
    ['a dry run with to before from', () => ({ from: hourAgo(), to: dayAgo(), dry_run: true }), 'to', false],
  ];
  for (const [name, body, field, audited] of backfillRest)
    add({
      name: `POST /v1/jobs/:id/backfills: ${name}`,
      via: 'rest',
      send: () => restOutcome(http('POST', '/v1/jobs/seed-1/backfills', { body: body() })),
      status: 400,
      field,
      ...(audited ? { audited: 'CreateBackfill' } : {}),
    });
  add({
    name: 'GET /v1/jobs/:id/backfills/:backfill_id: not a backfill id',
    via: 'rest',
    send: rest('GET', '/v1/jobs/seed-1/backfills/abc'),
    status: 400,
    field: 'backfill_id',
  });
  add({
    name: 'POST /v1/jobs/:id/backfills/:backfill_id/cancel: backfill id 0',
    via: 'rest',
    send: rest('POST', '/v1/jobs/seed-1/backfills/0/cancel'),
    status: 400,
    field: 'backfill_id',
    audited: 'CancelBackfill',
  });
  add({
    name: 'GET /v1/jobs/:id/backfills: a page token of another listing',
    via: 'rest',
    send: rest(
      'GET',
      `/v1/jobs/seed-1/backfills?page_token=${pageToken({ k: 'runs:seed-1', before: 1, f: filtersDigest({}) })}`,
    ),
    status: 400,
    field: 'page_token',
  });
  const backfillCommand = (backfill: Msg | null) => () => ({
    ...command('BACKFILL', 'seed-1'),
    backfill: backfill && { max_per_second: null, skip_reasons: null, ...backfill },
  });
  add({
    name: 'BACKFILL: to before from',
    via: 'kafka',
    send: kafkaCommand(backfillCommand({ from: Date.now() - 3_600_000, to: Date.now() - 86_400_000 })),
    status: 'INVALID_COMMAND',
    field: 'backfill.to',
    audited: 'CreateBackfill',
  });
  add({
    name: 'BACKFILL: an unknown skip reason',
    via: 'kafka',
    send: kafkaCommand(
      backfillCommand({ from: Date.now() - 86_400_000, to: Date.now() - 3_600_000, skip_reasons: ['LATE'] }),
    ),
    status: 'INVALID_COMMAND',
    field: 'backfill.skip_reasons[0]',
    audited: 'CreateBackfill',
  });
  add({
    name: 'BACKFILL: no backfill record',
    via: 'kafka',
    send: kafkaCommand(backfillCommand(null)),
    status: 'INVALID_COMMAND',
    field: /backfill is required for BACKFILL/,
  });
  const secondsAgo = (s: number) => ({ seconds: Math.floor(Date.now() / 1000) - s, nanos: 0 });
  addInvalidGrpc([
    ['no from', 'CreateBackfill', { job_id: 'seed-1', to: secondsAgo(3600) }, 'from', 'CreateBackfill'],
    [
      'to before from',
      'CreateBackfill',
      { job_id: 'seed-1', from: secondsAgo(60), to: secondsAgo(3600) },
      'to',
      'CreateBackfill',
    ],
    [
      'max_per_second over 1000',
      'CreateBackfill',
      { job_id: 'seed-1', from: secondsAgo(86_400), to: secondsAgo(3600), max_per_second: 5000 },
      'max_per_second',
      'CreateBackfill',
    ],
    [
      'an unknown skip reason',
      'CreateBackfill',
      { job_id: 'seed-1', from: secondsAgo(86_400), to: secondsAgo(3600), skip_reasons: ['LATE'] },
      'skip_reasons[0]',
      'CreateBackfill',
    ],
    [
      'skip_reasons with only_never_fired',
      'CreateBackfill',
      {
        job_id: 'seed-1',
        from: secondsAgo(86_400),
        to: secondsAgo(3600),
        skip_reasons: ['PAUSED'],
        only_never_fired: true,
      },
      'skip_reasons',
      'CreateBackfill',
    ],
    [
      'a dry run with no to',
      'CreateBackfill',
      { job_id: 'seed-1', from: secondsAgo(3600), dry_run: true },
      'to',
    ],
    ['not a backfill id', 'GetBackfill', { job_id: 'seed-1', backfill_id: 'x' }, 'backfill_id'],
    [
      'an empty backfill id',
      'CancelBackfill',
      { job_id: 'seed-1', backfill_id: '' },
      'backfill_id',
      'CancelBackfill',
    ],
    [
      'a page token of another listing',
      'ListBackfills',
      { job_id: 'seed-1', page_token: 'bm90LWEtdG9rZW4' },
      'page_token',
    ],
  ]);

  // Numbers JSON can write but a job cannot keep: 1e400 parses to Infinity, which jsonb would
  // store as null; NaN and ±Infinity in a protobuf double the same.
  for (const [name, raw, field] of [
    ['a payload number 1e400', '{"n":1e400}', 'payload.n'],
    ['a payload number -1e400 in a list', '{"l":[1,-1e400]}', 'payload.l[1]'],
  ] as const) {
    add({
      name: `POST /v1/jobs: ${name}`,
      via: 'rest',
      send: rest('POST', '/v1/jobs', {
        raw: `{"schedule":{"kind":"interval","every_ms":3600000},"target":{"type":"webhook","url":"https://example.com/h"},"payload":${raw}}`,
      }),
      status: 400,
      field,
      audited: 'CreateJob',
    });
    add({
      name: `UPSERT: ${name}`,
      via: 'kafka',
      send: kafkaCommand(() => command('UPSERT', `k-num-${raw.length}`, avroJob({ payload: raw }))),
      status: 'INVALID_JOB',
      field: `job.${field}`,
    });
  }
  for (const [name, n] of [
    ['NaN', NaN],
    ['Infinity', Infinity],
  ] as const)
    add({
      name: `CreateJob: a payload number ${name}`,
      via: 'grpc',
      send: grpcCall('CreateJob', {
        job: protoJob({ payload: { structValue: { fields: { n: { numberValue: n } } } } }),
      }),
      status: 'INVALID_ARGUMENT',
      field: 'job.payload.n',
      audited: 'CreateJob',
    });
  add({
    name: 'POST /v1/jobs: every_ms 1e400',
    via: 'rest',
    send: rest('POST', '/v1/jobs', {
      raw: '{"schedule":{"kind":"interval","every_ms":1e400},"target":{"type":"webhook","url":"https://example.com/h"}}',
    }),
    status: 400,
    field: 'schedule.every_ms',
    audited: 'CreateJob',
  });
  add({
    name: 'POST /v1/jobs: a top-level key __proto__',
    via: 'rest',
    send: rest('POST', '/v1/jobs', {
      raw: '{"__proto__":{"job_id":"x"},"schedule":{"kind":"interval","every_ms":3600000},"target":{"type":"webhook","url":"https://example.com/h"}}',
    }),
    status: 400,
    field: '__proto__',
    audited: 'CreateJob',
  });
  add({
    name: 'PATCH /v1/jobs/:id: a top-level key __proto__',
    via: 'rest',
    send: rest('PATCH', '/v1/jobs/seed-1', { raw: '{"__proto__":{"labels":{}}}' }),
    status: 400,
    field: '__proto__',
    audited: 'UpdateJob',
  });
  for (const [name, path, field] of [
    ['a tenant_id given twice', '/v1/jobs?tenant_id=acme&tenant_id=acme', 'tenant_id'],
    ['page_size 1e3', '/v1/jobs?page_size=1e3', 'page_size'],
    ['page_size 1001', '/v1/jobs?page_size=1001', 'page_size'],
    ['a fence token past 2^53', '/v1/jobs/seed-1/runs/99999999999999999999', 'fence_token'],
  ] as const)
    add({
      name: `GET ${path.split('?')[0]}: ${name}`,
      via: 'rest',
      send: rest('GET', path),
      status: 400,
      field,
    });
  // A malformed dry_run is taken for a dry run (not audited: it would write nothing); a real
  // update refused for its query is audited.
  for (const [name, query, field, audited] of [
    ['dry_run neither true nor false', 'dry_run=maybe', 'dry_run', undefined],
    ['update_mask given twice', 'update_mask=labels&update_mask=labels', 'update_mask', 'UpdateJob'],
    ['dry_run_count given twice', 'dry_run_count=1&dry_run_count=2', 'dry_run_count', 'UpdateJob'],
    [
      'a dry run with update_mask given twice',
      'dry_run=true&update_mask=a&update_mask=b',
      'update_mask',
      undefined,
    ],
  ] as const)
    add({
      name: `PATCH /v1/jobs/:id: ${name}`,
      via: 'rest',
      send: rest('PATCH', `/v1/jobs/seed-1?${query}`, { body: { labels: {} } }),
      status: 400,
      field,
      ...(audited ? { audited } : {}),
    });

  // More of the same classes over gRPC: text, numbers and ids in the other requests' fields.
  const grpcMore: [string, string, Msg, string, string?][] = [
    ['NUL in the job id', 'DeleteJob', { job_id: 'a\u0000' }, 'job_id', 'DeleteJob'],
    ['NUL in the job id', 'TriggerJob', { job_id: 'a\u0000' }, 'job_id', 'TriggerJob'],
    [
      'NUL in the job id',
      'UpdateJob',
      { job: { job_id: 'a\u0000', labels: {} }, update_mask: { paths: ['labels'] } },
      'job.job_id',
      'UpdateJob',
    ],
    [
      'NUL in an update_mask path',
      'UpdateJob',
      { job: { job_id: 'seed-1' }, update_mask: { paths: ['labels\u0000'] } },
      'update_mask.paths[0]',
      'UpdateJob',
    ],
    [
      'NUL in the tenant_id (job)',
      'CreateJob',
      { job: protoJob({ tenant_id: 'a\u0000' }) },
      'job.tenant_id',
      'CreateJob',
    ],
    ['page_size -1', 'ListJobs', { page_size: -1 }, 'page_size'],
    ['page_size 1001', 'ListRuns', { job_id: 'seed-1', page_size: 1001 }, 'page_size'],
    ['fence_token -1', 'GetRun', { job_id: 'seed-1', fence_token: -1 }, 'fence_token'],
    ['count -1', 'PreviewSchedule', { schedule: { interval: { every_ms: 60_000 } }, count: -1 }, 'count'],
    [
      'count 1e6',
      'PreviewSchedule',
      { schedule: { interval: { every_ms: 60_000 } }, count: 1_000_000 },
      'count',
    ],
    [
      'timeout_ms -1',
      'CreateJob',
      { job: protoJob({ target: { webhook: { url: 'https://example.com/h', timeout_ms: -1 } } }) },
      'job.target.webhook.timeout_ms',
      'CreateJob',
    ],
    [
      'max_fires -1',
      'CreateJob',
      { job: protoJob({ schedule: { interval: { every_ms: 60_000, max_fires: -1 } } }) },
      'job.schedule.interval.max_fires',
      'CreateJob',
    ],
  ];
  addInvalidGrpc(grpcMore);
  // And over Kafka: the envelope's own fields and instants past the Date range.
  const kafkaMore: [string, string, string | RegExp, () => Msg][] = [
    [
      'NUL in the tenant_id',
      'INVALID_COMMAND',
      /tenant_id/,
      () => command('UPSERT', 'k-more-1', avroJob(), 'a\u0000'),
    ],
    [
      'NUL in the command_id',
      'INVALID_COMMAND',
      /command_id/,
      () => ({ ...command('PAUSE', 'k-more-2'), command_id: 'c\u0000' }),
    ],
    [
      'expected_version -1',
      'INVALID_COMMAND',
      /expected_version/,
      () => ({ ...command('UPSERT', 'k-more-3', avroJob()), expected_version: -1 }),
    ],
    [
      'NUL in the time zone',
      'INVALID_JOB',
      'job.schedule.time_zone',
      () => {
        const job = avroJob();
        const cron = (job.schedule as Msg)[`${NS}.CronSchedule`] as Msg;
        cron.time_zone = 'UTC\u0000';
        return command('UPSERT', 'k-more-4', job);
      },
    ],
    [
      // Refused as it is decoded (a timestamp-millis that is no Date), before the job's checks.
      'start_at past the end of the Date range',
      'INVALID_COMMAND',
      /job: schedule\.start_at: 9000000000000000 ms is not an instant/,
      () => {
        const job = avroJob();
        const cron = (job.schedule as Msg)[`${NS}.CronSchedule`] as Msg;
        cron.start_at = 9e15;
        return command('UPSERT', 'k-more-5', job);
      },
    ],
  ];
  for (const [name, code, field, cmd] of kafkaMore)
    add({ name: `UPSERT/PAUSE: ${name}`, via: 'kafka', send: kafkaCommand(cmd), status: code, field });

  // 12. Idempotency keys: malformed, or reused for another request.
  for (const [name, key] of [
    ['256 characters', 'k'.repeat(256)],
    ['a space', 'two words'],
  ] as const) {
    add({
      name: `POST /v1/jobs: an Idempotency-Key of ${name}`,
      via: 'rest',
      send: rest('POST', '/v1/jobs', { body: webhookJob(), headers: { 'idempotency-key': key } }),
      status: 400,
      field: 'Idempotency-Key',
      audited: 'CreateJob',
    });
    add({
      name: `CreateJob: an idempotency_key of ${name}`,
      via: 'grpc',
      send: grpcCall('CreateJob', { job: protoJob(), idempotency_key: key }),
      status: 'INVALID_ARGUMENT',
      field: 'idempotency_key',
      audited: 'CreateJob',
    });
  }
  add({
    name: 'CreateJob: an idempotency_key that is not ASCII',
    via: 'grpc',
    send: grpcCall('CreateJob', { job: protoJob(), idempotency_key: 'clé' }),
    status: 'INVALID_ARGUMENT',
    field: 'idempotency_key',
    audited: 'CreateJob',
  });
  add({
    name: 'POST /v1/jobs: an Idempotency-Key used before for another request',
    via: 'rest',
    send: rest('POST', '/v1/jobs', {
      body: webhookJob({ labels: { other: 'request' } }),
      headers: { 'idempotency-key': 'used-key-rest' },
    }),
    status: 422,
    field: /idempotency_key "used-key-rest" was used for a different CreateJob request/,
    audited: 'CreateJob',
  });
  add({
    name: 'CreateJob: an idempotency_key used before for another request',
    via: 'grpc',
    send: grpcCall('CreateJob', {
      job: protoJob({ labels: { other: 'request' } }),
      idempotency_key: 'used-key-grpc',
    }),
    status: 'FAILED_PRECONDITION',
    field: /idempotency_key "used-key-grpc" was used for a different CreateJob request/,
    audited: 'CreateJob',
  });

  // Business calendars: a calendar's fields, a job's calendars and rule, a preview's, on every interface.
  const calendarJob = (policies: Json): Json => webhookJob({ policies });
  const avroCalendarJob = (calendars: string[], rule: string): Msg => ({
    ...avroJob(),
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
  });
  const restCalendarCases: [string, string, string, unknown, string, string?][] = [
    [
      'a calendar name with capitals',
      'POST',
      '/v1/jobs',
      calendarJob({ calendars: ['Ops'] }),
      'policies.calendars[0]',
      'CreateJob',
    ],
    [
      'a calendar that does not exist',
      'POST',
      '/v1/jobs',
      calendarJob({ calendars: ['no-such'] }),
      'policies.calendars[0]',
      'CreateJob',
    ],
    [
      'a calendar named twice',
      'POST',
      '/v1/jobs',
      calendarJob({ calendars: ['a', 'a'] }),
      'policies.calendars[1]',
      'CreateJob',
    ],
    [
      'nine calendars',
      'POST',
      '/v1/jobs',
      calendarJob({ calendars: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'] }),
      'policies.calendars',
      'CreateJob',
    ],
    [
      'calendar_rule SOMETIMES',
      'POST',
      '/v1/jobs',
      calendarJob({ calendars: ['a'], calendar_rule: 'SOMETIMES' }),
      'policies.calendar_rule',
      'CreateJob',
    ],
    [
      'calendars on a once schedule',
      'POST',
      '/v1/jobs',
      webhookJob({ schedule: { kind: 'once', at: '2099-01-01T00:00:00Z' }, policies: { calendars: ['a'] } }),
      'policies.calendars',
      'CreateJob',
    ],
    [
      'a calendar closing every weekday',
      'POST',
      '/v1/calendars',
      {
        name: 'c1',
        closed_weekdays: ['SUNDAY', 'MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY'],
      },
      'closed_weekdays',
      'CreateCalendar',
    ],
    [
      'a weekday FUNDAY',
      'POST',
      '/v1/calendars',
      { name: 'c1', closed_weekdays: ['FUNDAY'] },
      'closed_weekdays[0]',
      'CreateCalendar',
    ],
    [
      'a closed date 2026-02-30',
      'POST',
      '/v1/calendars',
      { name: 'c1', closed_dates: ['2026-02-30'] },
      'closed_dates[0]',
      'CreateCalendar',
    ],
    [
      'an open date that is no date',
      'POST',
      '/v1/calendars',
      { name: 'c1', open_dates: ['soon'] },
      'open_dates[0]',
      'CreateCalendar',
    ],
    [
      'a holiday without a name',
      'POST',
      '/v1/calendars',
      { name: 'c1', holidays: [{ date: '2026-12-25' }] },
      'holidays[0].name',
      'CreateCalendar',
    ],
    [
      'a country date-holidays does not know',
      'POST',
      '/v1/calendars',
      { name: 'c1', holiday_source: { country: 'XX', years: [2026] } },
      'holiday_source.country',
      'CreateCalendar',
    ],
    [
      'a region the country does not have',
      'POST',
      '/v1/calendars',
      { name: 'c1', holiday_source: { country: 'DE', region: 'ZZ', years: [2026] } },
      'holiday_source.region',
      'CreateCalendar',
    ],
    [
      'a holiday year 1900',
      'POST',
      '/v1/calendars',
      { name: 'c1', holiday_source: { country: 'DE', years: [1900] } },
      'holiday_source.years[0]',
      'CreateCalendar',
    ],
    [
      '21 holiday years',
      'POST',
      '/v1/calendars',
      {
        name: 'c1',
        holiday_source: { country: 'DE', years: Array.from({ length: 21 }, (_, i) => 2000 + i) },
      },
      'holiday_source.years',
      'CreateCalendar',
    ],
    ['a calendar name with a space', 'POST', '/v1/calendars', { name: 'my cal' }, 'name', 'CreateCalendar'],
    [
      'an unknown calendar field',
      'POST',
      '/v1/calendars',
      { name: 'c1', colour: 'red' },
      'colour',
      'CreateCalendar',
    ],
    ['a calendar renamed by its update', 'PUT', '/v1/calendars/c1', { name: 'c2' }, 'name', 'UpdateCalendar'],
    [
      'preview calendar_rule SOMETIMES',
      'POST',
      '/v1/schedules/preview',
      { schedule: { kind: 'interval', every_ms: 60_000 }, calendars: ['a'], calendar_rule: 'SOMETIMES' },
      'calendar_rule',
    ],
    [
      'preview a calendar that does not exist',
      'POST',
      '/v1/schedules/preview',
      { schedule: { kind: 'interval', every_ms: 60_000 }, calendars: ['no-such'] },
      'calendars[0]',
    ],
  ];
  for (const [what, method, path, body, field, audited] of restCalendarCases)
    add({
      name: `${method} ${path}: ${what}`,
      via: 'rest',
      send: rest(method, path, { body }),
      status: 400,
      field,
      ...(audited ? { audited } : {}),
    });
  add({
    name: 'PUT /v1/calendars/c1: an If-Match that is no etag',
    via: 'rest',
    send: rest('PUT', '/v1/calendars/c1', { body: {}, headers: { 'if-match': 'yesterday' } }),
    status: 400,
    field: 'If-Match',
    audited: 'UpdateCalendar',
  });
  add({
    name: 'GET /v1/calendars: page_size 501',
    via: 'rest',
    send: rest('GET', '/v1/calendars?page_size=501'),
    status: 400,
    field: 'page_size',
  });
  addInvalidGrpc([
    [
      'a holiday date that is no date',
      'CreateCalendar',
      { calendar: { name: 'c1', holidays: [{ date: 'tomorrow', name: 'x' }] } },
      'calendar.holidays[0].date',
      'CreateCalendar',
    ],
    [
      'a weekday FUNDAY',
      'CreateCalendar',
      { calendar: { name: 'c1', closed_weekdays: { weekdays: ['FUNDAY'] } } },
      'calendar.closed_weekdays[0]',
      'CreateCalendar',
    ],
    ['no calendar name', 'CreateCalendar', { calendar: {} }, 'calendar.name', 'CreateCalendar'],
    [
      'a calendar that does not exist',
      'CreateJob',
      { job: protoJob({ policies: { calendars: ['no-such'] } }) },
      'job.policies.calendars[0]',
      'CreateJob',
    ],
    [
      'calendar_rule 99',
      'CreateJob',
      { job: protoJob({ policies: { calendars: ['a'], calendar_rule: 99 } }) },
      'job.policies.calendar_rule',
      'CreateJob',
    ],
    [
      'an etag that is no etag',
      'UpdateCalendar',
      { calendar: { name: 'c1' }, etag: 'yesterday' },
      'etag',
      'UpdateCalendar',
    ],
    [
      'a calendar name with capitals',
      'PreviewSchedule',
      { schedule: { interval: { every_ms: 60_000 } }, calendars: ['UPPER'] },
      'calendars[0]',
    ],
    ['page_size 501', 'ListCalendars', { page_size: 501 }, 'page_size'],
  ]);
  for (const [what, calendars, rule, field] of [
    ['calendar_rule SOMETIMES', ['a'], 'SOMETIMES', 'job.policies.calendar_rule'],
    ['a calendar that does not exist', ['no-such'], 'SKIP', 'job.policies.calendars[0]'],
    ['a calendar name with capitals', ['Ops'], 'SKIP', 'job.policies.calendars[0]'],
  ] as const)
    add({
      name: `UPSERT: ${what}`,
      via: 'kafka',
      send: kafkaCommand(() =>
        command('UPSERT', `k-cal-${what.length}`, avroCalendarJob([...calendars], rule)),
      ),
      status: 'INVALID_JOB',
      field,
    });

  // ---------- policies.result_events ----------
  add({
    name: 'POST /v1/jobs: result_events SOMETIMES',
    via: 'rest',
    send: rest('POST', '/v1/jobs', { body: webhookJob({ policies: { result_events: 'SOMETIMES' } }) }),
    status: 400,
    field: 'policies.result_events',
    audited: 'CreateJob',
  });
  addInvalidGrpc([
    [
      'result_events 99',
      'CreateJob',
      { job: protoJob({ policies: { result_events: 99 } }) },
      'job.policies.result_events',
      'CreateJob',
    ],
  ]);
  add({
    name: 'UPSERT: result_events SOMETIMES',
    via: 'kafka',
    send: kafkaCommand(() =>
      command('UPSERT', 'k-result-events', {
        ...avroJob(),
        policies: {
          misfire: 'FIRE_ONCE',
          catch_up_window_ms: null,
          overlap: 'ALLOW',
          jitter_ms: 0,
          retry: null,
          result_events: 'SOMETIMES',
        },
      }),
    ),
    status: 'INVALID_JOB',
    field: 'job.policies.result_events',
  });

  it(`has a case for every class (${cases.length} cases)`, () => {
    expect(cases.length).toBeGreaterThan(200);
    expect(new Set(cases.map((c) => `${c.via} ${c.name}`)).size).toBe(cases.length);
  });

  describe.each(['rest', 'grpc', 'kafka'] as const)('%s', (via) => {
    beforeAll(async () => {
      // The keys the "used before" cases reuse, each taken by a first request.
      if (via === 'rest') {
        const first = await http('POST', '/v1/jobs', {
          body: webhookJob(),
          headers: { 'idempotency-key': 'used-key-rest' },
        });
        expect(first.status).toBe(201);
      }
      if (via === 'grpc') await grpc.ok('CreateJob', { job: protoJob(), idempotency_key: 'used-key-grpc' });
    });

    it.each(cases.filter((c) => c.via === via).map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      const before = await snapshot();
      const outcome = await c.send();
      expect(outcome.status).toBe(c.status);
      if (typeof c.field === 'string') expect(outcome.named.split(' | ')).toContain(c.field);
      else expect(outcome.named).toMatch(c.field);
      const after = await snapshot();
      expect({ ...after, last_audit: undefined }).toEqual({ ...before, last_audit: undefined });
      const audit = await db.query<{ action: string; outcome: string; via: string }>(
        'SELECT action, outcome, via FROM audit_events WHERE id > $1 ORDER BY id',
        [before.last_audit],
      );
      if (c.audited === undefined) expect(audit.rows).toEqual([]);
      else
        expect(audit.rows).toEqual([
          {
            action: c.audited,
            outcome:
              typeof c.status === 'number' ? CODE_OF_HTTP[c.status] : (CODE_OF_REJECT[c.status] ?? c.status),
            via: c.via,
          },
        ]);
    });
  });

  // ---------- what the refusals protect: the behaviour that must keep working ----------

  it(`accepts a payload nested exactly ${DEPTH_LIMIT} deep on every interface, and every interface returns it`, async () => {
    const rest1 = await http('POST', '/v1/jobs', {
      body: webhookJob({ job_id: 'deep-rest', payload: nested(DEPTH_LIMIT) }),
    });
    expect(rest1.status).toBe(201);
    await grpc.ok('CreateJob', { job: protoJob({ job_id: 'deep-grpc', payload: nestedValue(DEPTH_LIMIT) }) });
    await producer.send({
      topic,
      messages: [
        {
          key: 'deep-kafka',
          value: await registry.encode(
            schemaId,
            command('UPSERT', 'deep-kafka', avroJob({ payload: nestedText(DEPTH_LIMIT) })),
          ),
        },
      ],
    });
    await eventually('the Kafka job to be applied', async () => {
      const refused = rejected.messages.find((r) => r.key?.toString() === 'deep-kafka');
      if (refused) throw new Error(`refused: ${refused.headers['tickwork-reject-reason'] ?? '?'}`);
      return (await grpc.call('GetJob', { job_id: 'deep-kafka' })).ok ? true : undefined;
    });
    for (const id of ['deep-rest', 'deep-grpc', 'deep-kafka']) {
      const got = await grpc.ok('GetJob', { job_id: id });
      expect(got.job_id).toBe(id);
      expect((await http('GET', `/v1/jobs/${id}`)).body.payload).toEqual(nested(DEPTH_LIMIT));
    }
    // The tenant's and the admin's all-tenant listings carry them too (the CLI's `list --all`).
    const mine = (await grpc.ok('ListJobs', { page_size: 1000 })).jobs as Msg[];
    expect(mine.map((j) => j.job_id)).toEqual(
      expect.arrayContaining(['deep-rest', 'deep-grpc', 'deep-kafka']),
    );
    const all = (await grpc.as(ADMIN).ok('ListJobs', { page_size: 1000 })).jobs as Msg[];
    expect(all.map((j) => j.job_id)).toEqual(
      expect.arrayContaining(['deep-rest', 'deep-grpc', 'deep-kafka']),
    );
  });

  it('accepts the crafted page tokens with the filters they were issued for (they differ only in those)', async () => {
    const token = (filters: Record<string, string | Record<string, string>>) =>
      pageToken({ k: 'jobs', after: 'a', f: filtersDigest({ tenant_id: 'acme', ...filters }) });
    for (const [filters, query] of [
      [{ job_id_prefix: 'a' }, 'job_id_prefix=a'],
      [{ target_type: 'webhook' }, 'target_type=webhook'],
      [{ label_not: { team: 'x' } }, 'label_selector=team!=x'],
      [{ label: { team: 'b' } }, 'label_selector=team=b'],
    ] as const)
      expect((await http('GET', `/v1/jobs?${query}&page_token=${token(filters)}`)).status).toBe(200);
  });

  it('audits a refused Kafka UPSERT once, however often the same command comes back', async () => {
    const c = command('UPSERT', 'k-copies', avroJob({ labels: { team: 'a\u0000' } }));
    const value = await registry.encode(schemaId, c);
    await producer.send({ topic, messages: [{ key: 'k-copies', value }] });
    await producer.send({
      topic,
      messages: [
        { key: 'k-copies', value },
        { key: 'k-copies', value },
      ],
    });
    const copies = await eventually(
      'three rejections of the same command',
      () => {
        const seen = rejected.messages.filter((m) => m.value?.equals(value));
        return seen.length >= 3 ? seen : undefined;
      },
      60_000,
    );
    expect(copies.map((m) => m.headers['tickwork-reject-code'])).toEqual([
      'INVALID_JOB',
      'INVALID_JOB',
      'INVALID_JOB',
    ]);
    expect(copies[1]!.headers['tickwork-reject-reason']).toMatch(/^rejected before, as INVALID_JOB/);
    const audit = await db.query<{ action: string; outcome: string }>(
      `SELECT action, outcome FROM audit_events WHERE details->>'command_id' = $1`,
      [c.command_id],
    );
    expect(audit.rows).toEqual([{ action: 'UpsertJob', outcome: 'INVALID_ARGUMENT' }]);
  });

  it('takes the body-less operations with any body, as before (only JSON operations check the media type)', async () => {
    const r = await http('POST', '/v1/jobs/seed-1/resume', {
      raw: 'ignored',
      headers: { 'content-type': 'text/plain' },
    });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('SCHEDULED');
  });

  it('logged no error while refusing all of the above: every refusal was foreseen, none an internal error', () => {
    // The apps log JSON lines with the level by name. The Kafka client's own lines are not about
    // input (on a broker that has just started it logs refused coordinator and producer-id
    // requests at error level, and retries them).
    const errors = apps.flatMap((a) =>
      a.output
        .filter((l) => /"level":"(error|fatal)"/.test(l) && !/"msg":"kafkajs: /.test(l))
        .map((l) => `${a.name}: ${l.slice(0, 400)}`),
    );
    expect(errors).toEqual([]);
    // The check reads what it thinks it reads: the rejected commands' warnings are there.
    expect(apps.some((a) => a.output.some((l) => /"level":"warn".*rejected \(INVALID_JOB\)/.test(l)))).toBe(
      true,
    );
  });

  it('serves a call that carries 100 KB of metadata with a valid token (was INTERNAL)', async () => {
    const metadata = Object.fromEntries(
      Array.from({ length: 10 }, (_, i) => [`x-meta-${i}`, 'x'.repeat(10 * 1024)]),
    );
    const listed = await grpc.call('ListJobs', {}, { metadata });
    expect(listed.ok && (listed.res.jobs as Msg[]).some((j) => j.job_id === 'seed-1')).toBe(true);
    const created = await grpc.call('CreateJob', { job: protoJob({ job_id: 'big-metadata' }) }, { metadata });
    expect(created.ok && created.res.job_id).toBe('big-metadata');
  });

  it('stores secret target headers write-only: masked on every read, kept on update unless replaced', async () => {
    const stored = async () =>
      (await db.query<{ target: Json }>(`SELECT target FROM jobs WHERE job_id = 'seed-1'`)).rows[0]!.target
        .headers as Record<string, string>;
    const masked = { Authorization: '********', 'X-Plain': 'p' };
    expect(((await http('GET', '/v1/jobs/seed-1')).body.target as Json).headers).toEqual(masked);
    const listed = ((await http('GET', '/v1/jobs')).body.jobs as Json[]).find((j) => j.job_id === 'seed-1')!;
    expect((listed.target as Json).headers).toEqual(masked);
    expect(((await grpc.ok('GetJob', { job_id: 'seed-1' })).target as Msg).webhook).toMatchObject({
      headers: masked,
    });
    const grpcListed = ((await grpc.ok('ListJobs', {})).jobs as Msg[]).find((j) => j.job_id === 'seed-1')!;
    expect((grpcListed.target as Msg).webhook).toMatchObject({ headers: masked });

    // A read-modify-write of the target sends the mask back: the secret is kept.
    const read = (await http('GET', '/v1/jobs/seed-1')).body;
    const patched = await http('PATCH', '/v1/jobs/seed-1', {
      body: { target: { ...(read.target as Json), timeout_ms: 20_000 } },
    });
    expect(patched.status).toBe(200);
    expect((patched.body.target as Json).headers).toEqual(masked);
    expect(await stored()).toEqual({ Authorization: SECRET, 'X-Plain': 'p' });
    // The same over gRPC, from what GetJob returned.
    const got = await grpc.ok('GetJob', { job_id: 'seed-1' });
    await grpc.ok('UpdateJob', {
      job: { job_id: 'seed-1', target: got.target },
      update_mask: { paths: ['target'] },
    });
    expect(await stored()).toEqual({ Authorization: SECRET, 'X-Plain': 'p' });

    // A new value replaces it; a header left out is gone; a new secret is masked from the start.
    const replaced = await http('PATCH', '/v1/jobs/seed-1', {
      body: {
        target: {
          type: 'webhook',
          url: 'https://example.com/h',
          headers: { Authorization: 'Bearer new', 'X-Api-Key': 'k1' },
        },
      },
    });
    expect((replaced.body.target as Json).headers).toEqual({
      Authorization: '********',
      'X-Api-Key': '********',
    });
    expect(await stored()).toEqual({ Authorization: 'Bearer new', 'X-Api-Key': 'k1' });
    // Back as it was, for the cases that follow.
    await http('PATCH', '/v1/jobs/seed-1', {
      body: {
        target: {
          type: 'webhook',
          url: 'https://example.com/h',
          headers: { Authorization: SECRET, 'X-Plain': 'p' },
        },
      },
    });
    expect(await stored()).toEqual({ Authorization: SECRET, 'X-Plain': 'p' });
  });

  it('an idempotency key makes a CreateJob retry return the same job, per tenant', async () => {
    const count = async (label: string) =>
      Number(
        (
          await db.query(`SELECT count(*) FROM jobs WHERE labels @> $1::jsonb`, [
            JSON.stringify({ run: label }),
          ])
        ).rows[0]!.count,
      );
    // REST: no job_id, so each attempt would otherwise get its own generated id.
    const body = webhookJob({ labels: { run: 'rest-idem' } });
    const first = await http('POST', '/v1/jobs', { body, headers: { 'idempotency-key': 'retry-rest-1' } });
    const again = await http('POST', '/v1/jobs', { body, headers: { 'idempotency-key': 'retry-rest-1' } });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.job_id).toBe(first.body.job_id);
    expect(await count('rest-idem')).toBe(1);
    // The same key under another tenant is another key.
    const admin = await http('POST', '/v1/jobs', {
      token: ADMIN,
      body: { ...body, tenant_id: 'globex' },
      headers: { 'idempotency-key': 'retry-rest-1' },
    });
    expect(admin.status).toBe(201);
    expect(admin.body.job_id).not.toBe(first.body.job_id);
    expect(await count('rest-idem')).toBe(2);

    // gRPC: a deadline too short to answer in; the call may still be applied, and the retry tells.
    const req = { job: protoJob({ labels: { run: 'grpc-idem' } }), idempotency_key: 'retry-grpc-1' };
    const hurried = await grpc.call('CreateJob', req, { deadlineMs: 1 });
    const retried = await grpc.call('CreateJob', req);
    expect(retried.ok).toBe(true);
    if (hurried.ok && retried.ok) expect(retried.res.job_id).toBe(hurried.res.job_id);
    else if (!hurried.ok) expect(hurried.codeName).toBe('DEADLINE_EXCEEDED');
    const third = await grpc.call('CreateJob', req);
    expect(third.ok && retried.ok && third.res.job_id === retried.res.job_id).toBe(true);
    expect(await count('grpc-idem')).toBe(1);
  });
});
