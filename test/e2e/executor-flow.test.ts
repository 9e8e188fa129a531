/**
 * No head-of-line blocking across jobs, with real processes: a real executor, Kafka, the registry,
 * PostgreSQL and a local HTTP receiver. One job's webhook takes 10 s; other jobs' fires on the
 * same fires partition are still called on time. kill -9 while the slow call is in flight, after
 * the later fires are done: the committed offset never passed the slow fire, so the restarted
 * executor delivers it, and no fire is lost. And a partition with a stuck call and a backlog stops
 * fetching at its memory bound (TICKWORK_EXECUTOR_HELD_BYTES) instead of reading the backlog in.
 */
import { shardOf, type Target } from '@tickwork/domain';
import type { TopicAdmin } from '@tickwork/messaging';
import { policiesToWire, targetToWire } from '@tickwork/domain';
import { startApp, type AppProcess } from '../support/apps';
import { testDatabase, type TestDatabase } from '../support/db';
import { eventually, freePort } from '../support/env';
import { testKafkaBus } from '../support/kafka';
import {
  executorEnv,
  fireOf,
  FirePublisher,
  insertJob,
  quickRetry,
  ScriptedReceiver,
  webhook,
  type Call,
  type Reply,
} from './executor-harness';

/** The fires topic's partitions in tests (TICKWORK_FIRES_PARTITIONS in isolate()). */
const FIRES_PARTITIONS = 4;
/** How late another job's call may be: on time here is tens of ms; the margin is for a loaded 2-core box. */
const ON_TIME_MS = 1_500;

/** `n` job ids of this prefix whose fires go to `partition` (the fires topic is keyed by job id). */
function jobsOnPartition(prefix: string, partition: number, n: number): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < n; i++) {
    const id = `${prefix}-${i}`;
    if (shardOf(id, FIRES_PARTITIONS) === partition) ids.push(id);
  }
  return ids;
}

describe('executor flow: no head-of-line blocking across jobs', () => {
  let db: TestDatabase;
  let receiver: ScriptedReceiver;
  let publisher: FirePublisher;
  let admin: TopicAdmin;
  let executor: AppProcess | undefined;
  const scripts = new Map<string, (call: Call, nth: number) => Reply>();

  const pathOf = (call: Call) => call.path.split('?')[0]!;
  const callsTo = (path: string) => receiver.calls.filter((c) => pathOf(c) === path);
  const callsOf = (jobId: string) => receiver.calls.filter((c) => c.headers['tickwork-job-id'] === jobId);
  const startExecutor = async (extra: Record<string, string> = {}): Promise<AppProcess> => {
    executor = startApp('executor', db.iso.env(executorEnv(extra)), await freePort());
    await executor.ready();
    return executor;
  };
  const runsOf = async (jobIds: string[]) =>
    (
      await db.pool.query<{ job_id: string; fence_token: string; status: string }>(
        'SELECT job_id, fence_token, status FROM job_runs WHERE job_id = ANY($1)',
        [jobIds],
      )
    ).rows;
  /** Waits like `eventually`; on a timeout shows what the executor was doing. */
  const waitFor = <T>(what: string, check: () => Promise<T | undefined> | T | undefined, ms = 30_000) =>
    eventually(what, check, ms).catch((e: Error) => {
      throw new Error(`${e.message}\n--- executor ---\n${executor?.tail(40) ?? ''}`);
    });
  const firesPartition = async (partition: number) =>
    (await admin.groupLag(`${db.iso.topicPrefix}.executor`, `${db.iso.topicPrefix}.fires`)).find(
      (p) => p.partition === partition,
    )!;
  const insertJobs = async (jobIds: string[], target: Target) =>
    db.pool.query(
      `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, target, payload, policies)
       SELECT id, 'acme', 0, 'once', $2::jsonb, 'COMPLETED', $3::jsonb, '{"n":1}'::jsonb, $4::jsonb
         FROM unnest($1::text[]) AS id`,
      [
        jobIds,
        JSON.stringify({ kind: 'once', at: new Date().toISOString() }),
        JSON.stringify(targetToWire(target)),
        JSON.stringify(policiesToWire(quickRetry())),
      ],
    );

  beforeAll(async () => {
    db = await testDatabase('execflow');
    receiver = await new ScriptedReceiver().start();
    receiver.script = (call) =>
      scripts.get(pathOf(call))?.(call, callsTo(pathOf(call)).length - 1) ?? { status: 200 };
    const bus = testKafkaBus('tickwork-test');
    admin = await bus.admin();
    await startExecutor();
    publisher = await FirePublisher.open(db.iso.topicPrefix);
  }, 120_000);

  afterEach(async () => {
    receiver.release(200);
    await executor?.stop();
    executor = undefined;
  });

  afterAll(async () => {
    await publisher?.close();
    await admin?.disconnect();
    await receiver?.stop();
    await db?.close();
  });

  it('calls other jobs on the same partition on time while one job’s webhook takes 10 s', async () => {
    executor ??= await startExecutor();
    const [slow, ...others] = jobsOnPartition('hol', 0, 11);
    scripts.set('/slow', () => ({ status: 200, delayMs: 10_000 }));
    const slowTarget = webhook(receiver.url('/slow'), { timeoutMs: 30_000 });
    const fastTarget = webhook(receiver.url('/fast'));
    await insertJob(db.pool, slow!, slowTarget);
    await insertJobs(others, fastTarget);

    await publisher.publish(fireOf(slow!, slowTarget));
    await waitFor('the slow call to start', () => (callsOf(slow!).length === 1 ? true : undefined));
    const slowStarted = Date.now();
    // Three rounds of the other jobs' fires, each due when published, while the slow call runs.
    for (let round = 1; round <= 3; round++) {
      await publisher.publish(...others.map((id) => fireOf(id, fastTarget, { fenceToken: round })));
      await new Promise((r) => setTimeout(r, 1_000));
    }
    const calls = await waitFor('every other fire to be called', () => {
      const c = callsTo('/fast');
      return c.length >= others.length * 3 ? c : undefined;
    });
    expect(calls).toHaveLength(others.length * 3);
    const lateness = calls.map((c) => c.at - Date.parse(c.headers['tickwork-scheduled-for'] as string));
    expect(Math.max(...lateness)).toBeLessThan(ON_TIME_MS);
    // All of them came while the slow call was still running (it answers after 10 s).
    expect(Math.max(...calls.map((c) => c.at)) - slowStarted).toBeLessThan(10_000);
    expect(new Set(calls.map((c) => c.headers['webhook-id'])).size).toBe(others.length * 3);

    // The slow fire itself completes, called once.
    await waitFor(
      'the slow run to succeed',
      async () => ((await runsOf([slow!]))[0]?.status === 'SUCCEEDED' ? true : undefined),
      30_000,
    );
    expect(callsOf(slow!)).toHaveLength(1);
  }, 120_000);

  it('kill -9 during a slow call after later fires are done: the slow fire is delivered after restart, none lost', async () => {
    executor ??= await startExecutor();
    const partition = 2;
    const [first, slow, ...others] = jobsOnPartition('crash', partition, 12);
    scripts.set('/stuck', (_c, nth) => (nth === 0 ? 'hold' : { status: 200 }));
    const slowTarget = webhook(receiver.url('/stuck'), { timeoutMs: 60_000 });
    const fastTarget = webhook(receiver.url('/after'));
    await insertJob(db.pool, slow!, slowTarget);
    await insertJobs([first!, ...others], fastTarget);

    // A first fire, done and committed: the partition's commit point is then the slow fire's offset.
    await publisher.publish(fireOf(first!, fastTarget));
    const slowOffset = await waitFor('the first fire to be committed', async () => {
      const p = await firesPartition(partition);
      return p.committed !== '-1' && p.committed === p.end ? p.end : undefined;
    });
    await publisher.publish(fireOf(slow!, slowTarget));
    await waitFor('the slow call to start', () => (callsOf(slow!).length === 1 ? true : undefined));
    await publisher.publish(...others.map((id) => fireOf(id, fastTarget)));
    await waitFor('the later fires to succeed', async () => {
      const runs = await runsOf(others);
      return runs.length === others.length && runs.every((r) => r.status === 'SUCCEEDED') ? true : undefined;
    });
    // Past the commit interval (1 s): what is committed stops at the slow fire, the oldest unfinished.
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await firesPartition(partition)).committed).toBe(slowOffset);

    await executor.kill();
    await startExecutor();
    // The restarted executor reads from the slow fire again: it waits out the dead one's lease
    // (3 s here) and calls again, with the same webhook-id.
    await waitFor(
      'the slow run to succeed after the restart',
      async () => ((await runsOf([slow!]))[0]?.status === 'SUCCEEDED' ? true : undefined),
      60_000,
    );
    expect(callsOf(slow!).map((c) => c.headers['webhook-id'])).toEqual([`${slow}:1`, `${slow}:1`]);
    // No fire lost, none called twice: each later fire was called once and its run stands.
    for (const id of [first!, ...others]) expect(callsOf(id)).toHaveLength(1);
    const runs = await runsOf([first!, slow!, ...others]);
    expect(runs.map((r) => r.status)).toEqual(runs.map(() => 'SUCCEEDED'));
    expect(runs).toHaveLength(others.length + 2);
    await waitFor('the commit to pass the slow fire', async () =>
      BigInt((await firesPartition(partition)).committed) > BigInt(slowOffset) ? true : undefined,
    );
  }, 180_000);

  it('stops fetching a partition with a stuck call and a backlog at its memory bound', async () => {
    await executor?.stop();
    // A small bound, so a backlog of 2,000 fires passes it many times over: a done fire behind
    // the stuck one holds ~100 bytes of it, so about 330 of them fill it.
    const heldBytes = 32 * 1024;
    await startExecutor({
      TICKWORK_EXECUTOR_FETCH_BYTES: '16384',
      TICKWORK_EXECUTOR_HELD_BYTES: String(heldBytes),
    });
    const partition = 1;
    const [stuck, ...backlog] = jobsOnPartition('bound', partition, 2_001);
    scripts.set('/held', (_c, nth) => (nth === 0 ? 'hold' : { status: 200 }));
    const stuckTarget = webhook(receiver.url('/held'), { timeoutMs: 120_000 });
    const target = webhook(receiver.url('/backlog'));
    await insertJob(db.pool, stuck!, stuckTarget);
    await insertJobs(backlog, target);

    await publisher.publish(fireOf(stuck!, stuckTarget));
    await waitFor('the stuck call to start', () => (callsOf(stuck!).length === 1 ? true : undefined));
    // In small sends, as a scheduler's relay would under a steady load: a fetch returns at least
    // one whole record batch, so the bound can be passed by at most about one fetch.
    for (let i = 0; i < backlog.length; i += 20)
      await publisher.publish(...backlog.slice(i, i + 20).map((id) => fireOf(id, target)));
    const status = async () =>
      (
        (await (await fetch(`${executor!.url}/health/ready`)).json()) as {
          fires: { partitionsPaused: number; maxPartitionHeldBytes: number; held: number; running: number };
        }
      ).fires;
    // Paused with only the stuck call running: everything else it holds is done and waits for
    // the stuck one, so nothing frees up until that answers.
    const paused = await waitFor('the partition to stop at its bound', async () => {
      const s = await status();
      return s.partitionsPaused === 1 && s.running === 1 && s.maxPartitionHeldBytes >= heldBytes
        ? s
        : undefined;
    });
    const deliveredAtBound = callsTo('/backlog').length;
    // It stays there: what it holds is the bound and at most about a fetch more, and the rest
    // of the backlog waits in Kafka.
    await new Promise((r) => setTimeout(r, 3_000));
    const later = await status();
    expect(later).toMatchObject({ partitionsPaused: 1, held: paused.held });
    expect(later.maxPartitionHeldBytes).toBeLessThan(2 * heldBytes);
    expect(callsTo('/backlog')).toHaveLength(deliveredAtBound);
    expect(deliveredAtBound).toBeGreaterThan(0);
    expect(deliveredAtBound).toBeLessThan(backlog.length / 2);

    // Once the stuck call answers, the partition goes on and the whole backlog is delivered.
    receiver.release(200);
    await waitFor(
      'the backlog to be delivered',
      () => (callsTo('/backlog').length >= backlog.length ? true : undefined),
      60_000,
    );
    await waitFor('the partition to be resumed', async () =>
      (await status()).partitionsPaused === 0 ? true : undefined,
    );
    expect(new Set(callsTo('/backlog').map((c) => c.headers['webhook-id'])).size).toBe(backlog.length);
  }, 180_000);
});
