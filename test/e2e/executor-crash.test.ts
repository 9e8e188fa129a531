/**
 * Crash safety with real processes: two executors in one group, the receiver holding a call open.
 * kill -9 of the executor in the middle of a call: the other takes the run over once the lease
 * expires and completes it. SIGSTOP past the lease and SIGCONT: the stopped executor's late
 * outcome is fenced out. And retries parked on a tier survive rebalances of the retry group.
 */
import { startApp, type AppProcess } from '../support/apps';
import { testDatabase, type TestDatabase } from '../support/db';
import { policiesToWire, targetToWire } from '@tickwork/domain';
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
  type Reply,
} from './executor-harness';

describe('executor crash safety', () => {
  let db: TestDatabase;
  let receiver: ScriptedReceiver;
  let publisher: FirePublisher;
  let out: Outputs;
  let executors: AppProcess[] = [];
  const scripts = new Map<string, (call: Call, nth: number) => Reply>();

  const startExecutor = async (): Promise<AppProcess> => {
    const app = startApp('executor', db.iso.env(executorEnv()), await freePort());
    executors.push(app);
    await app.ready();
    return app;
  };
  const byName = (owner: string) => executors.find((e) => `executor-${e.port}` === owner)!;
  const runOf = async (jobId: string) =>
    (
      await db.pool.query<{
        status: string;
        lease_owner: string;
        http_status: number | null;
        attempt: number;
      }>('SELECT status, lease_owner, http_status, attempt FROM job_runs WHERE job_id = $1', [jobId])
    ).rows;
  const callsTo = (path: string) => receiver.calls.filter((c) => c.path === path);
  /** Waits like `eventually`, and on a timeout shows what the executors were doing. */
  const waitFor = <T>(
    what: string,
    check: () => Promise<T | undefined> | T | undefined,
    ms: number,
  ): Promise<T> =>
    eventually(what, check, ms).catch((e: Error) => {
      throw new Error(
        `${e.message}\n${executors.map((x) => `--- executor-${x.port} ---\n${x.tail(60)}`).join('\n')}`,
      );
    });

  beforeAll(async () => {
    db = await testDatabase('execcrash');
    receiver = await new ScriptedReceiver().start();
    receiver.script = (call) =>
      scripts.get(call.path)?.(call, callsTo(call.path).length - 1) ?? { status: 200 };
    await Promise.all([startExecutor(), startExecutor()]);
    publisher = await FirePublisher.open(db.iso.topicPrefix);
    out = await Outputs.open(publisher.codecs, topicsOf(db.iso.topicPrefix));
  }, 120_000);

  afterAll(async () => {
    for (const e of executors) e.signal('SIGCONT');
    await Promise.all(executors.map((e) => e.stop()));
    await out?.close();
    await publisher?.close();
    await receiver?.stop();
    await db?.close();
  });

  it('kill -9 in the middle of a call: another executor completes the fire after the lease expires', async () => {
    scripts.set('/crash-1', (_c, nth) => (nth === 0 ? 'hold' : { status: 200 }));
    const target = webhook(receiver.url('/crash-1'), { timeoutMs: 60_000 });
    await insertJob(db.pool, 'crash-1', target);
    await publisher.publish(fireOf('crash-1', target));

    await eventually(
      'the first call, held open',
      () => (callsTo('/crash-1').length === 1 ? true : undefined),
      30_000,
    );
    const [running] = await runOf('crash-1');
    expect(running!.status).toBe('RUNNING');
    const victim = byName(running!.lease_owner);
    const survivor = executors.find((e) => e !== victim && e.child.exitCode === null)!;
    await victim.kill();
    executors = executors.filter((e) => e !== victim);

    const done = await waitFor(
      'the survivor to complete the run',
      async () => {
        const rows = await runOf('crash-1');
        return rows[0]?.status === 'SUCCEEDED' ? rows : undefined;
      },
      60_000,
    );
    expect(done).toEqual([
      { status: 'SUCCEEDED', lease_owner: `executor-${survivor.port}`, http_status: 200, attempt: 1 },
    ]);
    // At least once toward the target, with the same webhook-id for the receiver to dedupe.
    const calls = callsTo('/crash-1');
    expect(calls).toHaveLength(2);
    expect(calls.map((c) => c.headers['webhook-id'])).toEqual(['crash-1:1', 'crash-1:1']);
    const outcomes = await eventually('the result', async () => {
      const r = (await out.resultsFor('crash-1')).map((x) => x.outcome);
      return r.length > 0 ? r : undefined;
    });
    expect(new Set(outcomes)).toEqual(new Set(['SUCCEEDED']));
    // Replace the victim for the next test.
    await startExecutor();
  }, 120_000);

  it('kill -9 while Kafka-target fires run unleased: each is recorded once, none is lost', async () => {
    const sink = await KafkaSink.create(`${db.iso.topicPrefix}.crash-sink`, 4);
    try {
      const n = 8_000;
      const target = sink.target();
      await db.pool.query(
        `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, target, payload, policies)
         SELECT 'ucrash-' || g, 'acme', 0, 'once', $1::jsonb, 'COMPLETED', $2::jsonb, '{"n":1}'::jsonb, $3::jsonb
           FROM generate_series(1, $4::int) AS g`,
        [
          JSON.stringify({ kind: 'once', at: new Date().toISOString() }),
          JSON.stringify(targetToWire(target)),
          JSON.stringify(policiesToWire(quickRetry())),
          n,
        ],
      );
      await publisher.publish(...Array.from({ length: n }, (_, i) => fireOf(`ucrash-${i + 1}`, target)));
      const byOwner = async () =>
        (
          await db.pool.query<{ lease_owner: string; runs: number }>(
            `SELECT lease_owner, count(*)::int AS runs FROM job_runs WHERE job_id LIKE 'ucrash-%'
              GROUP BY lease_owner ORDER BY runs DESC`,
          )
        ).rows;
      const busiest = await waitFor(
        'the first unleased runs recorded',
        async () => (((await byOwner())[0]?.runs ?? 0) >= 100 ? (await byOwner())[0] : undefined),
        60_000,
      );
      const victim = byName(busiest!.lease_owner);
      await victim.kill();
      executors = executors.filter((e) => e !== victim);
      const atKill = (await byOwner()).reduce((sum, r) => sum + r.runs, 0);
      // The kill landed while fires were still running, or this test proves nothing.
      expect(atKill).toBeLessThan(n);

      const counts = await waitFor(
        `all ${n} runs recorded by the survivor`,
        async () => {
          const { rows } = await db.pool.query<{ status: string; runs: number }>(
            `SELECT status, count(*)::int AS runs FROM job_runs WHERE job_id LIKE 'ucrash-%' GROUP BY status`,
          );
          const total = rows.reduce((sum, r) => sum + r.runs, 0);
          return total === n ? rows : undefined;
        },
        90_000,
      );
      expect(counts).toEqual([{ status: 'SUCCEEDED', runs: n }]);
      // Every fire reached its topic at least once (a produce the kill cut off before its run
      // was recorded is produced again: at-least-once, deduped downstream by tickwork-fire-id).
      const delivered = await waitFor(
        'every fire on the sink',
        () => {
          const d = sink.deliveries();
          return d.size >= n ? d : undefined;
        },
        60_000,
      );
      expect([...delivered.keys()].filter((id) => !/^ucrash-\d+:1$/.test(id))).toEqual([]);
    } finally {
      await sink.close();
    }
    await startExecutor();
  }, 240_000);

  it('SIGSTOP past the lease, SIGCONT: the stopped executor’s late outcome is rejected', async () => {
    scripts.set('/pause-1', (_c, nth) => (nth === 0 ? 'hold' : { status: 200 }));
    const target = webhook(receiver.url('/pause-1'), { timeoutMs: 60_000 });
    await insertJob(db.pool, 'pause-1', target);
    await publisher.publish(fireOf('pause-1', target));

    await eventually(
      'the first call, held open',
      () => (callsTo('/pause-1').length === 1 ? true : undefined),
      30_000,
    );
    const [running] = await runOf('pause-1');
    const frozen = byName(running!.lease_owner);
    const other = executors.find((e) => e !== frozen)!;
    frozen.signal('SIGSTOP');
    try {
      // The other executor gets the partition once the frozen one's session times out, then
      // takes the run over once its lease expires, and succeeds.
      await waitFor(
        'the other executor to succeed',
        async () => {
          const rows = await runOf('pause-1');
          return rows[0]?.status === 'SUCCEEDED' && rows[0].lease_owner === `executor-${other.port}`
            ? true
            : undefined;
        },
        60_000,
      );
      // The frozen call now gets an answer that would dead-letter the fire if it were recorded.
      receiver.release(400);
    } finally {
      frozen.signal('SIGCONT');
    }
    await waitFor(
      'the woken executor to find its lease gone',
      () => (frozen.output.some((l) => l.includes('lease lost for fire pause-1:1')) ? true : undefined),
      30_000,
    );
    expect(await runOf('pause-1')).toEqual([
      { status: 'SUCCEEDED', lease_owner: `executor-${other.port}`, http_status: 200, attempt: 1 },
    ]);
    const outcomes = await eventually('the result', async () => {
      const r = (await out.resultsFor('pause-1')).map((x) => x.outcome);
      return r.includes('SUCCEEDED') ? r : undefined;
    });
    expect(outcomes).not.toContain('DEAD_LETTERED');
    expect(out.dlqFor('pause-1')).toHaveLength(0);
    expect(callsTo('/pause-1')).toHaveLength(2);
  }, 120_000);

  it('retries parked on a retry tier fire once each, not early, across rebalances of the retry group', async () => {
    // Retry-After 10 s on the first call: every retry goes to the longest tier (4 s), waits out
    // the tier, is re-enqueued and waits again — while executors join and leave the group.
    const ids = Array.from({ length: 8 }, (_, i) => `rebal-${i}`);
    for (const id of ids) {
      scripts.set(`/${id}`, (_c, nth) =>
        nth === 0 ? { status: 503, headers: { 'retry-after': '10' } } : { status: 200 },
      );
      const target = webhook(receiver.url(`/${id}`));
      await insertJob(db.pool, id, target, quickRetry({ maxAttempts: 3, initialBackoffMs: 10 }));
      await publisher.publish(fireOf(id, target));
    }
    const logged = new Map(executors.map((e) => [e, e.output.length]));
    await eventually(
      'every first attempt',
      () => (ids.every((id) => callsTo(`/${id}`).length >= 1) ? true : undefined),
      30_000,
    );
    const joiner = await startExecutor(); // rebalance while the retries are parked
    const leaver = executors.find((e) => e !== joiner)!;
    await leaver.stop(); // and another one
    executors = executors.filter((e) => e !== leaver);

    for (const id of ids) {
      await waitFor(
        `${id} to succeed`,
        async () => ((await runOf(id))[0]?.status === 'SUCCEEDED' ? true : undefined),
        60_000,
      );
    }
    for (const id of ids) {
      const calls = callsTo(`/${id}`);
      expect(calls.map((c) => c.headers['tickwork-attempt'])).toEqual(['1', '2']);
      expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(10_000);
      // Held for the tier's 4 s at most at a time: re-enqueued on the tier before it was due.
      expect(out.retriesFor(id).length).toBeGreaterThanOrEqual(2);
      expect((await runOf(id))[0]).toMatchObject({ status: 'SUCCEEDED', attempt: 2 });
    }
    // Nobody lost its group membership by waiting: no executor was told since it is unknown to the coordinator.
    for (const e of executors) {
      const since = e.output.slice(logged.get(e) ?? 0);
      expect(since.filter((l) => /not aware of this member|crashed/.test(l))).toEqual([]);
    }
  }, 150_000);
});
