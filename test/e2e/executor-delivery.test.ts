/**
 * One real executor process against real Kafka, the schema registry, PostgreSQL and a real local
 * HTTP receiver; the test publishes fire events onto the fires topic as a scheduler would.
 * Exactly-once effect on re-delivery, the retry path through the tier topics, dead letters,
 * Retry-After, hanging webhooks, bad input, the SSRF guard and the Kafka target.
 */
import type { FireEvent, FireResult, Target } from '@tickwork/domain';
import { startApp, type AppProcess } from '../support/apps';
import { testDatabase, type TestDatabase } from '../support/db';
import { eventually, freePort } from '../support/env';
import { KafkaSink } from '../support/sink';
import {
  executorEnv,
  fireOf,
  FirePublisher,
  insertJob,
  Outputs,
  quickRetry,
  ScriptedReceiver,
  topicsOf,
  webhook,
  type Call,
} from './executor-harness';

const T = 60_000;

describe('executor delivery', () => {
  let db: TestDatabase;
  let executor: AppProcess;
  let receiver: ScriptedReceiver;
  let publisher: FirePublisher;
  let out: Outputs;
  const scripts = new Map<string, (call: Call, nth: number) => ReturnType<ScriptedReceiver['script']>>();

  beforeAll(async () => {
    db = await testDatabase('execdelivery');
    receiver = await new ScriptedReceiver().start();
    // Each job gets its own path, and its own script by how many times that path was called.
    receiver.script = (call) => {
      const path = call.path.split('?')[0]!;
      const nth = receiver.calls.filter((c) => c.path.split('?')[0] === path).length - 1;
      return scripts.get(path)?.(call, nth) ?? { status: 200 };
    };
    executor = startApp('executor', db.iso.env(executorEnv()), await freePort());
    await executor.ready();
    publisher = await FirePublisher.open(db.iso.topicPrefix);
    out = await Outputs.open(publisher.codecs, topicsOf(db.iso.topicPrefix));
  }, 120_000);

  afterAll(async () => {
    await executor?.stop();
    await out?.close();
    await publisher?.close();
    await receiver?.stop();
    await db?.close();
  });

  const callsTo = (path: string) => receiver.calls.filter((c) => c.path.split('?')[0] === path);
  const run = async (jobId: string) =>
    (
      await db.pool.query<{
        status: string;
        attempt: number;
        http_status: number | null;
        error: string | null;
        lease_owner: string;
      }>('SELECT status, attempt, http_status, error, lease_owner FROM job_runs WHERE job_id = $1', [jobId])
    ).rows;
  const finalRun = (jobId: string, status: string) =>
    eventually(
      `run of ${jobId} to be ${status}`,
      async () => {
        const rows = await run(jobId);
        return rows.length === 1 && rows[0]!.status === status ? rows[0]! : undefined;
      },
      45_000,
    );
  /** The run's started_at and finished_at as epoch ms (what a FireResult's Avro timestamps hold). */
  const ledgerTimes = async (jobId: string) => {
    const { rows } = await db.pool.query<{ started_at: string; finished_at: string }>(
      `SELECT floor(extract(epoch FROM started_at) * 1000)::bigint::text AS started_at,
              floor(extract(epoch FROM finished_at) * 1000)::bigint::text AS finished_at
         FROM job_runs WHERE job_id = $1`,
      [jobId],
    );
    return { startedAt: Number(rows[0]!.started_at), finishedAt: Number(rows[0]!.finished_at) };
  };
  const timesOf = (r: FireResult) => ({
    startedAt: r.startedAt.getTime(),
    finishedAt: r.finishedAt.getTime(),
  });
  const job = async (jobId: string, target: Target, policies = quickRetry()): Promise<FireEvent> => {
    await insertJob(db.pool, jobId, target, policies);
    return fireOf(jobId, target);
  };

  it(
    'runs a fire published three times once: one call, one SUCCEEDED run',
    async () => {
      const fire = await job('once-1', webhook(receiver.url('/once-1')));
      await publisher.publish(fire, fire);
      await finalRun('once-1', 'SUCCEEDED');
      await publisher.publish(fire); // a late re-publish, e.g. the scheduler's outbox relay
      const results = await eventually('three results (one per delivery)', async () => {
        const r = await out.resultsFor('once-1');
        return r.length >= 3 ? r : undefined;
      });
      expect(results.every((r) => r.outcome === 'SUCCEEDED' && r.attempt === 1 && r.httpStatus === 200)).toBe(
        true,
      );
      expect(callsTo('/once-1')).toHaveLength(1);
      expect(callsTo('/once-1')[0]!.headers['webhook-id']).toBe('once-1:1');
      // The attempt's result, first published and re-published, carries the ledger's times.
      const ledger = await ledgerTimes('once-1');
      expect(results.map(timesOf)).toEqual(results.map(() => ledger));
      expect(results.map((r) => r.durationMs)).toEqual(
        results.map(() => ledger.finishedAt - ledger.startedAt),
      );
      expect(await run('once-1')).toMatchObject([{ status: 'SUCCEEDED', attempt: 1 }]);
    },
    T,
  );

  it(
    'retries a webhook that fails twice, through the retry tiers, then succeeds on attempt 3',
    async () => {
      scripts.set('/flaky-1', (_c, nth) => ({ status: nth < 2 ? 503 : 200 }));
      const fire = await job(
        'flaky-1',
        webhook(receiver.url('/flaky-1')),
        quickRetry({ maxAttempts: 5, initialBackoffMs: 400, multiplier: 4 }),
      );
      await publisher.publish(fire);
      const done = await finalRun('flaky-1', 'SUCCEEDED');
      expect(done).toMatchObject({ attempt: 3, http_status: 200 });
      const calls = callsTo('/flaky-1');
      expect(calls.map((c) => c.headers['tickwork-attempt'])).toEqual(['1', '2', '3']);
      expect(new Set(calls.map((c) => c.headers['webhook-id']))).toEqual(new Set(['flaky-1:1']));

      // Each retry went through a tier topic with its attempt and not-before, and was not called early.
      const retries = out.retriesFor('flaky-1');
      expect(retries.map((m) => m.headers['tickwork-attempt'])).toEqual(['2', '3']);
      const notBefore = retries.map((m) => Number(m.headers['tickwork-not-before']));
      expect(calls[1]!.at).toBeGreaterThanOrEqual(notBefore[0]!);
      expect(calls[2]!.at).toBeGreaterThanOrEqual(notBefore[1]!);
      // Full jitter: each delay lies within its growing cap (400 ms, then 1600 ms) after the failure.
      const delays = [notBefore[0]! - calls[0]!.at, notBefore[1]! - calls[1]!.at];
      expect(delays[0]).toBeLessThanOrEqual(400 + 200);
      expect(delays[1]).toBeLessThanOrEqual(1_600 + 200);
      expect(calls[2]!.at - calls[1]!.at).toBeGreaterThanOrEqual(delays[1]! - 50);

      const results = await eventually('3 attempt results', async () => {
        const r = await out.resultsFor('flaky-1');
        return r.length >= 3 ? r : undefined;
      });
      expect(results.map((r) => [r.attempt, r.outcome, r.httpStatus])).toEqual([
        [1, 'RETRYING', 503],
        [2, 'RETRYING', 503],
        [3, 'SUCCEEDED', 200],
      ]);
      expect(out.dlqFor('flaky-1')).toHaveLength(0);
      // The ledger keeps the last attempt's times (one row per fire): its result carries exactly those.
      expect(timesOf(results[2]!)).toEqual(await ledgerTimes('flaky-1'));
    },
    T,
  );

  it(
    'dead-letters a webhook that always fails after max attempts, keeping the full fire',
    async () => {
      scripts.set('/down-1', () => ({ status: 500 }));
      const fire = await job(
        'down-1',
        webhook(receiver.url('/down-1')),
        quickRetry({ maxAttempts: 3, initialBackoffMs: 200, multiplier: 2 }),
      );
      await publisher.publish({ ...fire, payload: { order: 42, items: ['a', 'b'] } });
      const dead = await finalRun('down-1', 'DEAD_LETTERED');
      expect(dead).toMatchObject({ attempt: 3, http_status: 500 });
      expect(dead.error).toBe('RETRIES_EXHAUSTED: gave up after 3 attempts; last error: HTTP 500');
      expect(callsTo('/down-1')).toHaveLength(3);
      const [letter] = await eventually('the dead letter', () => {
        const d = out.dlqFor('down-1');
        return d.length > 0 ? d : undefined;
      });
      expect(letter!.headers).toMatchObject({
        'tickwork-dlq-reason': 'RETRIES_EXHAUSTED',
        'tickwork-attempt': '3',
        'tickwork-fire-id': 'down-1:1',
      });
      const replayable = await publisher.codecs.decodeFire(letter!.value);
      expect(replayable).toMatchObject({
        jobId: 'down-1',
        fenceToken: 1,
        attempt: 3,
        payload: { order: 42, items: ['a', 'b'] },
        target: fire.target,
      });
      const outcomes = await eventually('3 results', async () => {
        const r = await out.resultsFor('down-1');
        return r.length >= 3 ? r.map((x) => x.outcome) : undefined;
      });
      expect(outcomes).toEqual(['RETRYING', 'RETRYING', 'DEAD_LETTERED']);
    },
    T,
  );

  it(
    'dead-letters a 400 at once, with no retry',
    async () => {
      scripts.set('/bad-1', () => ({ status: 400 }));
      const fire = await job('bad-1', webhook(receiver.url('/bad-1')));
      await publisher.publish(fire);
      const dead = await finalRun('bad-1', 'DEAD_LETTERED');
      expect(dead).toMatchObject({ attempt: 1, http_status: 400, error: 'NON_RETRYABLE: HTTP 400' });
      await eventually('the dead letter', () => (out.dlqFor('bad-1').length > 0 ? true : undefined));
      expect(out.dlqFor('bad-1')[0]!.headers['tickwork-dlq-reason']).toBe('NON_RETRYABLE');
      expect(callsTo('/bad-1')).toHaveLength(1);
      expect(out.retriesFor('bad-1')).toHaveLength(0);
    },
    T,
  );

  it(
    'waits as long as a 429 Retry-After asks before the next attempt',
    async () => {
      scripts.set('/busy-1', (_c, nth) =>
        nth === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 },
      );
      const fire = await job(
        'busy-1',
        webhook(receiver.url('/busy-1')),
        quickRetry({ initialBackoffMs: 10 }),
      );
      await publisher.publish(fire);
      await finalRun('busy-1', 'SUCCEEDED');
      const calls = callsTo('/busy-1');
      expect(calls).toHaveLength(2);
      expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(2_000);
    },
    T,
  );

  it(
    'cuts a hanging webhook at its timeout and dead-letters it when attempts run out',
    async () => {
      scripts.set('/hang-1', () => 'hold');
      const fire = await job(
        'hang-1',
        webhook(receiver.url('/hang-1'), { timeoutMs: 500 }),
        quickRetry({ maxAttempts: 1 }),
      );
      const started = Date.now();
      await publisher.publish(fire);
      const dead = await finalRun('hang-1', 'DEAD_LETTERED');
      expect(dead.error).toMatch(
        /^RETRIES_EXHAUSTED: gave up after 1 attempt; last error: TIMEOUT: no complete answer within 500 ms/,
      );
      expect(Date.now() - started).toBeLessThan(15_000);
      receiver.release();
    },
    T,
  );

  it(
    'dead-letters undecodable input and a fire for a deleted job, and keeps the partition flowing',
    async () => {
      await publisher.publishRaw('poison-1', Buffer.from('not avro at all'));
      const orphan = fireOf('deleted-job-1', webhook(receiver.url('/deleted-job-1'))); // no job row
      const after = await job('poison-1', webhook(receiver.url('/after-poison'))); // same key, same partition, after the poison
      await publisher.publish(orphan, after);
      await finalRun('poison-1', 'SUCCEEDED');
      const poison = await eventually('the raw dead letter', () =>
        out.dlq.messages.find(
          (m) => m.key?.toString() === 'poison-1' && m.headers['tickwork-dlq-reason'] === 'UNDECODABLE',
        ),
      );
      expect(poison.value?.toString()).toBe('not avro at all');
      expect(poison.headers['tickwork-dlq-error']).toContain('Confluent wire format');
      expect(poison.headers['tickwork-source']).toMatch(
        new RegExp(`^${db.iso.topicPrefix.replace(/\./g, '\\.')}\\.fires/\\d+/\\d+$`),
      );
      const gone = await finalRun('deleted-job-1', 'DEAD_LETTERED');
      expect(gone.error).toBe('UNKNOWN_JOB: job deleted-job-1 no longer exists');
      expect(callsTo('/deleted-job-1')).toHaveLength(0);
      await eventually('the unknown-job dead letter', () =>
        out.dlqFor('deleted-job-1')[0]?.headers['tickwork-dlq-reason'] === 'UNKNOWN_JOB' ? true : undefined,
      );
    },
    T,
  );

  it(
    'refuses webhooks to loopback, private and metadata addresses not allow-listed, and does not follow redirects',
    async () => {
      const cases: [string, string][] = [
        ['ssrf-loop', `http://127.0.0.2:${receiver.port}/x`],
        ['ssrf-v6', `http://[::1]:${receiver.port}/x`],
        ['ssrf-private', 'http://10.20.30.40/x'],
        ['ssrf-meta', 'http://169.254.169.254/latest/meta-data/'],
      ];
      for (const [id, url] of cases) await publisher.publish(await job(id, webhook(url)));
      for (const [id] of cases) {
        const dead = await finalRun(id, 'DEAD_LETTERED');
        expect(dead.attempt).toBe(1);
        expect(dead.error).toMatch(
          /^DESTINATION_REFUSED: destination .* refused: .* is a (loopback|private|metadata) address/,
        );
      }
      scripts.set('/redirect-1', () => ({
        status: 302,
        headers: { location: 'http://169.254.169.254/latest/meta-data/' },
      }));
      await publisher.publish(await job('redirect-1', webhook(receiver.url('/redirect-1'))));
      const redirected = await finalRun('redirect-1', 'DEAD_LETTERED');
      expect(redirected).toMatchObject({ http_status: 302, attempt: 1 });
      expect(redirected.error).toContain('redirects are not followed');
      expect(callsTo('/redirect-1')).toHaveLength(1);
    },
    T,
  );

  it(
    'publishes a Kafka target with key and headers, and refuses Tickwork’s own topics',
    async () => {
      const sink = await KafkaSink.create(`${db.iso.topicPrefix}.sink`, 2);
      try {
        const target: Target = {
          type: 'kafka',
          topic: sink.topic,
          key: 'order-7',
          headers: { 'x-source': 'tickwork-test' },
        };
        await publisher.publish({ ...(await job('kafka-1', target)), payload: { total: 12.5 } });
        await finalRun('kafka-1', 'SUCCEEDED');
        const m = await eventually('the message on the sink', () =>
          sink.tap.messages.find((x) => x.headers['tickwork-fire-id'] === 'kafka-1:1'),
        );
        expect(m.key?.toString()).toBe('order-7');
        expect(JSON.parse(m.value!.toString())).toEqual({ total: 12.5 });
        expect(m.headers).toMatchObject({
          'x-source': 'tickwork-test',
          'tickwork-job-id': 'kafka-1',
          'tickwork-fence-token': '1',
          'tickwork-attempt': '1',
        });
        // The first attempt ran unleased (one insert of the finished run). A second delivery of
        // the same fire finds that run: it re-publishes the result and produces nothing.
        await publisher.publish({ ...(await fireOf('kafka-1', target)), payload: { total: 12.5 } });
        await eventually('the result of both deliveries', () => {
          const r = out.results.messages.filter((x) => x.key?.toString() === 'kafka-1');
          return r.length >= 2 ? r : undefined;
        });
        // The unleased record's result and the re-delivery's both carry the ledger's times.
        const ledger = await ledgerTimes('kafka-1');
        expect((await out.resultsFor('kafka-1')).map(timesOf)).toEqual([ledger, ledger]);
        expect(sink.tap.messages.filter((x) => x.headers['tickwork-fire-id'] === 'kafka-1:1')).toHaveLength(
          1,
        );
        expect(await run('kafka-1')).toEqual([
          expect.objectContaining({ status: 'SUCCEEDED', attempt: 1, lease_owner: expect.any(String) }),
        ]);

        const forge: Target = { type: 'kafka', topic: `${db.iso.topicPrefix}.fires`, key: null, headers: {} };
        await publisher.publish(await job('kafka-forge', forge));
        const refused = await finalRun('kafka-forge', 'DEAD_LETTERED');
        expect(refused.error).toMatch(/^DESTINATION_REFUSED: .*internal to Tickwork/);
      } finally {
        await sink.close();
      }
    },
    T,
  );

  it(
    'with no trace exporter, passes the trace a fire arrived with on to its calls, retries and results',
    async () => {
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      scripts.set('/traced-1', (_c, nth) => ({ status: nth < 1 ? 503 : 200 }));
      const fire = await job(
        'traced-1',
        webhook(receiver.url('/traced-1')),
        quickRetry({ initialBackoffMs: 200 }),
      );
      await publisher.publishWith({ traceparent, tracestate: 'vendor=1' }, fire);
      await finalRun('traced-1', 'SUCCEEDED');
      // The executor exports no spans here, so it adds none: every hop carries the same context.
      const calls = callsTo('/traced-1');
      expect(
        calls.map((c) => [c.headers['tickwork-attempt'], c.headers.traceparent, c.headers.tracestate]),
      ).toEqual([
        ['1', traceparent, 'vendor=1'],
        ['2', traceparent, 'vendor=1'],
      ]);
      expect(out.retriesFor('traced-1').map((m) => m.headers.traceparent)).toEqual([traceparent]);
      const results = await eventually('2 attempt results', async () => {
        const r = out.results.messages.filter((m) => m.key?.toString() === 'traced-1');
        return r.length >= 2 ? r : undefined;
      });
      expect(results.map((m) => m.headers.traceparent)).toEqual([traceparent, traceparent]);
    },
    T,
  );

  it('reports its slots and in-flight work on /health/ready', async () => {
    const res = await fetch(`${executor.url}/health/ready`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      status: string;
      slotsInUse: number;
      fires: { partitionsHeld: number };
    };
    expect(body).toMatchObject({
      status: 'ready',
      slotsInUse: expect.any(Number) as number,
      fires: { partitionsHeld: expect.any(Number) as number },
    });
  });
});
