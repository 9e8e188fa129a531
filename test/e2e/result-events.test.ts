/**
 * policies.result_events end to end, every hop real: jobs created over REST with ALL, FAILURES
 * and NONE, a webhook that fails each job's first call and answers the retry, and a Kafka target
 * (its unleased first attempt) under FAILURES. Every run is retried and succeeds alike; only the
 * fire-results topic differs. The topic is read to its end after the executor counted every
 * attempt (it counts one only after the attempt's result, if any, was acknowledged by Kafka), so
 * a result left out is proven absent, not merely late.
 */
import { Client } from 'pg';
import type { FireResult } from '@tickwork/domain';
import { EventCodecs } from '@tickwork/messaging';
import { startApp, type AppProcess } from '../support/apps';
import { eventually, freePort, isolate, STACK, type Isolation } from '../support/env';
import { testKafkaBus, TopicTap } from '../support/kafka';
import { AdminTestClient, type Msg } from '../support/admin-client';
import { contractFetch } from '../support/openapi';
import { executorEnv, ScriptedReceiver } from './executor-harness';

/** The sum of a counter's samples (every label set) in a Prometheus scrape. */
async function counterSum(app: AppProcess, name: string): Promise<number> {
  const text = await (await fetch(`${app.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{.*\})? (\S+)$/.exec(line);
    if (m && m[1] === name) sum += Number(m[2]);
  }
  return sum;
}

describe('policies.result_events: which results reach the fire-results topic', () => {
  let iso: Isolation;
  let receiver: ScriptedReceiver;
  let apps: AppProcess[] = [];
  let api: AppProcess;
  let executor: AppProcess;
  let db: Client;
  let apiFetch: typeof fetch;
  let grpc: AdminTestClient;

  beforeAll(async () => {
    iso = isolate('resultevents');
    receiver = await new ScriptedReceiver().start();
    // Each path's first call fails (retryable), every later one succeeds.
    receiver.script = (call) =>
      receiver.calls.filter((c) => c.path === call.path).length === 1 ? { status: 503 } : { status: 200 };
    const admin = await testKafkaBus('tickwork-test').admin();
    try {
      await admin.createTopics([
        { name: `${iso.topicPrefix}.sink`, partitions: 1, replicationFactor: 1, configs: {} },
      ]);
    } finally {
      await admin.disconnect();
    }
    const grpcPort = await freePort();
    const env = iso.env({
      ...executorEnv(),
      TICKWORK_TICK_MS: '100',
      TICKWORK_GRPC_PORT: String(grpcPort),
    });
    api = startApp('api', env, await freePort());
    await api.ready();
    apiFetch = await contractFetch(api.url);
    const scheduler = startApp('scheduler', env, await freePort());
    executor = startApp('executor', env, await freePort());
    apps = [api, scheduler, executor];
    await Promise.all([scheduler.ready(), executor.ready()]);
    db = new Client({ connectionString: iso.databaseUrl });
    await db.connect();
    grpc = new AdminTestClient(`127.0.0.1:${grpcPort}`);
  }, 120_000);

  afterAll(async () => {
    grpc?.close();
    await Promise.all(apps.map((a) => a.stop()));
    await db?.end();
    await receiver?.stop();
    await iso?.dispose();
  });

  it('ALL publishes every attempt, FAILURES only the failed one, NONE nothing; the runs are alike', async () => {
    const due = new Date(Date.now() + 2_000).toISOString();
    const retry = { max_attempts: 3, initial_backoff_ms: 200 };
    const create = async (jobId: string, target: object, resultEvents?: string) => {
      const res = await apiFetch(`${api.url}/v1/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          job_id: jobId,
          tenant_id: 'acme',
          schedule: { kind: 'once', at: due },
          target,
          policies: { retry, ...(resultEvents ? { result_events: resultEvents } : {}) },
        }),
      });
      expect(res.status).toBe(201);
      return (await res.json()) as { policies: Record<string, unknown> };
    };
    const hook = (path: string) => ({ type: 'webhook', url: receiver.url(path) });
    const jobs = {
      all: await create(`re-all-${iso.id}`, hook('/all')),
      failures: await create(`re-failures-${iso.id}`, hook('/failures'), 'FAILURES'),
      none: await create(`re-none-${iso.id}`, hook('/none'), 'NONE'),
      kafka: await create(
        `re-kafka-${iso.id}`,
        { type: 'kafka', topic: `${iso.topicPrefix}.sink` },
        'FAILURES',
      ),
    };
    // ALL is the default and stored as such: the job's policies leave it out.
    expect(jobs.all.policies).not.toHaveProperty('result_events');
    expect(jobs.failures.policies.result_events).toBe('FAILURES');
    expect(jobs.none.policies.result_events).toBe('NONE');
    const ids = {
      all: `re-all-${iso.id}`,
      failures: `re-failures-${iso.id}`,
      none: `re-none-${iso.id}`,
      kafka: `re-kafka-${iso.id}`,
    };

    // Every run ends the same way whatever its policy: the webhooks on their second attempt.
    const runs = await eventually(
      'every run SUCCEEDED',
      async () => {
        const r = await db.query<{ job_id: string; status: string; attempt: number }>(
          'SELECT job_id, status, attempt FROM job_runs ORDER BY job_id',
        );
        return r.rows.length === 4 && r.rows.every((x) => x.status === 'SUCCEEDED') ? r.rows : undefined;
      },
      60_000,
    );
    expect(Object.fromEntries(runs.map((r) => [r.job_id, r.attempt]))).toEqual({
      [ids.all]: 2,
      [ids.failures]: 2,
      [ids.none]: 2,
      [ids.kafka]: 1,
    });
    expect(receiver.calls.map((c) => c.path).sort()).toEqual([
      '/all',
      '/all',
      '/failures',
      '/failures',
      '/none',
      '/none',
    ]);

    // Seven attempts counted (three failed, four succeeded): each counted after its result, if
    // any, was acknowledged. Then the topic's end is everything that will ever be on it.
    await eventually(
      'seven attempts counted by the executor',
      async () => ((await counterSum(executor, 'tickwork_fires_executed_total')) >= 7 ? true : undefined),
      30_000,
    );
    const topic = `${iso.topicPrefix}.fire-results`;
    const admin = await testKafkaBus('tickwork-test').admin();
    let published: number;
    try {
      // A group that never committed: only the partitions' ends matter (the topic is this test's own).
      const ends = await admin.groupLag(`result-events-ends-${iso.id}`, topic);
      published = ends.reduce((n, p) => n + Number(p.end), 0);
    } finally {
      await admin.disconnect();
    }
    const tap = await TopicTap.open(topic);
    try {
      await eventually('the results topic read to its end', () =>
        tap.messages.length >= published ? true : undefined,
      );
      const codecs = await EventCodecs.connect(STACK.registryUrl, { fireTopics: [], resultTopics: [topic] });
      const results: FireResult[] = await Promise.all(tap.messages.map((m) => codecs.decodeResult(m.value)));
      const of = (jobId: string) =>
        results
          .filter((r) => r.jobId === jobId)
          .map((r) => `${r.attempt} ${r.outcome}`)
          .sort();
      expect(of(ids.all)).toEqual(['1 RETRYING', '2 SUCCEEDED']);
      expect(of(ids.failures)).toEqual(['1 RETRYING']);
      expect(of(ids.none)).toEqual([]);
      expect(of(ids.kafka)).toEqual([]);
      expect(results).toHaveLength(3);
    } finally {
      await tap.close();
    }
  });

  it('gRPC writes and reads result_events as the ResultEvents enum (unspecified = ALL)', async () => {
    const job = (jobId: string, policies: Msg): Msg => ({
      job_id: jobId,
      tenant_id: 'acme',
      schedule: { once: { at: { seconds: Math.floor(Date.now() / 1000) + 86_400 } } },
      target: { webhook: { url: receiver.url('/later') } },
      policies,
    });
    await grpc.ok('CreateJob', { job: job(`grpc-none-${iso.id}`, { result_events: 'RESULT_EVENTS_NONE' }) });
    await grpc.ok('CreateJob', { job: job(`grpc-default-${iso.id}`, {}) });
    const stored = await db.query<{ job_id: string; result_events: string | null }>(
      `SELECT job_id, policies ->> 'result_events' AS result_events FROM jobs WHERE job_id LIKE 'grpc-%' ORDER BY job_id`,
    );
    expect(stored.rows).toEqual([
      { job_id: `grpc-default-${iso.id}`, result_events: null },
      { job_id: `grpc-none-${iso.id}`, result_events: 'NONE' },
    ]);
    const read = async (jobId: string) =>
      ((await grpc.ok('GetJob', { job_id: jobId })).policies as Msg).result_events;
    expect(await read(`grpc-none-${iso.id}`)).toBe('RESULT_EVENTS_NONE');
    expect(await read(`grpc-default-${iso.id}`)).toBe('RESULT_EVENTS_ALL');
    expect(await read(`re-failures-${iso.id}`)).toBe('RESULT_EVENTS_FAILURES');
  });
});
