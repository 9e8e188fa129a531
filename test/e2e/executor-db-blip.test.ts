/**
 * A database blip while webhook calls are in flight (issue 24, defect 2), with real processes:
 * two executors, a receiver that holds every call 1.5 s, and the test's own database made
 * unreachable for 6 s (connections refused with a FATAL error and every session terminated, as a
 * restarting server does) just after the calls arrived. Each occurrence must get exactly one call
 * per `webhook-id`, its run must end SUCCEEDED, and everything must be recorded within seconds of
 * the database coming back: no executor waits out its own lease, none calls a target twice.
 */
import { Client } from 'pg';
import { startApp, type AppProcess } from '../support/apps';
import { testDatabase, type TestDatabase } from '../support/db';
import { policiesToWire, targetToWire } from '@tickwork/domain';
import { eventually, freePort, STACK } from '../support/env';
import { testKafkaBus } from '../support/kafka';
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

const HOLD_MS = 1_500;
const BLIP_MS = 6_000;
/** How soon after the database is back every run must be recorded (retries back off to 2 s; loaded box). */
const RECOVERY_BOUND_MS = 8_000;
const LEASE_30S = {
  TICKWORK_RUN_LEASE_MS: '30000',
  TICKWORK_RUN_HEARTBEAT_MS: '2000',
  // The purge and readiness use the same pool: they must ride the blip out quietly.
  TICKWORK_RUN_PURGE_INTERVAL: '1s',
};

/** How many messages a (fresh) topic holds: the sum of its partitions' end offsets. */
async function sinkLength(topic: string): Promise<number> {
  const admin = await testKafkaBus('tickwork-test').admin();
  try {
    return (await admin.groupLag('no-such-group', topic)).reduce((sum, p) => sum + Number(p.end), 0);
  } finally {
    await admin.disconnect();
  }
}

/** Makes one database refuse connections and ends its sessions, then lets them back in. */
class DatabaseBlip {
  private admin: Client | undefined;
  downAt = 0;
  upAt = 0;

  constructor(private readonly dbName: string) {}

  async down(): Promise<void> {
    const admin = new Client({ connectionString: STACK.adminDatabaseUrl });
    await admin.connect();
    this.admin = admin;
    const name = `"${this.dbName.replace(/"/g, '""')}"`;
    await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
    await admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [this.dbName],
    );
    this.downAt = Date.now();
  }

  async up(): Promise<void> {
    if (!this.admin) return;
    await this.admin.query(`ALTER DATABASE "${this.dbName.replace(/"/g, '""')}" WITH ALLOW_CONNECTIONS true`);
    this.upAt = Date.now();
    await this.admin.end();
    this.admin = undefined;
  }
}

describe('executor through a database blip', () => {
  let db: TestDatabase;
  let receiver: ScriptedReceiver;
  let publisher: FirePublisher;
  let out: Outputs;
  let executors: AppProcess[] = [];
  let blip: DatabaseBlip | undefined;

  beforeAll(async () => {
    db = await testDatabase('execdbblip');
    receiver = await new ScriptedReceiver().start();
    receiver.script = () => ({ status: 200, delayMs: HOLD_MS });
    // The executors provision the topics the publisher and the result reader need.
    await startExecutors(LEASE_30S);
    publisher = await FirePublisher.open(db.iso.topicPrefix);
    out = await Outputs.open(publisher.codecs, topicsOf(db.iso.topicPrefix));
  }, 120_000);

  afterAll(async () => {
    await blip?.up().catch(() => undefined);
    await Promise.all(executors.map((e) => e.stop()));
    await out?.close();
    await publisher?.close();
    await receiver?.stop();
    await db?.close();
  });

  const startExecutors = async (env: Record<string, string>): Promise<AppProcess[]> => {
    await Promise.all(executors.map((e) => e.stop()));
    executors = await Promise.all(
      [0, 1].map(async () => startApp('executor', db.iso.env(executorEnv(env)), await freePort())),
    );
    await Promise.all(executors.map((e) => e.ready()));
    return executors;
  };
  const tails = () => executors.map((x) => `--- executor-${x.port} ---\n${x.tail(40)}`).join('\n');
  const idOf = (c: Call) => String(c.headers['webhook-id']);

  /**
   * Publishes `inFlight` fires, waits until the receiver holds all their calls, takes the database
   * down, publishes `duringBlip` more (their leases are taken while it is down), and brings it
   * back after BLIP_MS. Then every fire must have one call and a SUCCEEDED run, recorded soon.
   */
  const throughABlip = async (label: string, inFlight: number, duringBlip: number) => {
    const jobIds = Array.from({ length: inFlight + duringBlip }, (_, i) => `${label}-${i + 1}`);
    const target = webhook(receiver.url(`/${label}`), { timeoutMs: 10_000 });
    for (const id of jobIds) await insertJob(db.pool, id, target);
    const fires = jobIds.map((id) => fireOf(id, target));
    const mine = () => receiver.calls.filter((c) => c.path === `/${label}`);
    const logLines = () => executors.reduce((n, e) => n + e.output.length, 0);

    await publisher.publish(...fires.slice(0, inFlight));
    await eventually(
      `${inFlight} calls held by the receiver`,
      () => (mine().length >= inFlight ? true : undefined),
      30_000,
      20,
    );
    blip = new DatabaseBlip(new URL(db.iso.databaseUrl).pathname.slice(1));
    await blip.down();
    const linesBefore = logLines();
    await publisher.publish(...fires.slice(inFlight));
    // The blip itself is the scenario: the database stays down for BLIP_MS whatever happens.
    await new Promise((r) => setTimeout(r, BLIP_MS));
    const linesDuring = logLines() - linesBefore;
    await blip.up();
    const { downAt, upAt } = blip;
    blip = undefined;

    const runs = await eventually(
      `all ${jobIds.length} runs SUCCEEDED`,
      async () => {
        const { rows } = await db.pool.query<{ job_id: string; status: string; finished_at: Date | null }>(
          `SELECT job_id, status, finished_at FROM job_runs WHERE job_id LIKE $1`,
          [`${label}-%`],
        );
        return rows.length === jobIds.length && rows.every((r) => r.status === 'SUCCEEDED')
          ? rows
          : undefined;
      },
      60_000,
      200,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${tails()}`);
    });

    // The blip hit calls in flight: most of the first wave was answered while it was down.
    const answeredDuring = mine().filter((c) => c.at + HOLD_MS > downAt && c.at + HOLD_MS < upAt).length;
    expect(answeredDuring).toBeGreaterThanOrEqual(inFlight / 2);

    // Exactly one call per occurrence.
    const perId = new Map<string, number>();
    for (const c of mine()) perId.set(idOf(c), (perId.get(idOf(c)) ?? 0) + 1);
    const twice = [...perId].filter(([, n]) => n > 1);
    expect({ duplicates: twice, missing: jobIds.filter((id) => !perId.has(`${id}:1`)) }).toEqual({
      duplicates: [],
      missing: [],
    });

    // No executor waited out a lease: everything was recorded soon after the database was back.
    // (The fires published during the blip still make their 1.5 s call after it.)
    const lastOf = (ids: readonly string[]) =>
      Math.max(...runs.filter((r) => ids.includes(r.job_id)).map((r) => r.finished_at!.getTime())) - upAt;
    const answersHeldMs = lastOf(jobIds.slice(0, inFlight));
    const recoveryMs = lastOf(jobIds);
    expect(answersHeldMs).toBeLessThan(RECOVERY_BOUND_MS);
    expect(recoveryMs).toBeLessThan(RECOVERY_BOUND_MS);

    // Each attempt's result is published (at least once).
    await eventually(
      'a SUCCEEDED result for every fire',
      async () => {
        const all = await Promise.all(
          out.results.messages.map((m) => publisher.codecs.decodeResult(m.value)),
        );
        const done = new Set(all.filter((r) => r.outcome === 'SUCCEEDED').map((r) => r.jobId));
        return jobIds.every((id) => done.has(id)) ? true : undefined;
      },
      30_000,
    );

    // Nobody crashed, and the blip did not make the executors log a storm.
    for (const e of executors) expect(e.child.exitCode).toBeNull();
    expect(linesDuring).toBeLessThan(60);
    return { answersHeldMs, recoveryMs, answeredDuring, linesDuring };
  };

  it('a 6 s blip with the default 30 s lease: one call per webhook-id, no wait for the own lease', async () => {
    const figures = await throughABlip('blip30', 40, 20);
    process.stdout.write(`db blip, 30 s lease: ${JSON.stringify(figures)}\n`);
  }, 180_000);

  it('a 6 s blip longer than a 3 s lease: the outcome is still recorded by the caller, not called again', async () => {
    await startExecutors({
      TICKWORK_RUN_LEASE_MS: '3000',
      TICKWORK_RUN_HEARTBEAT_MS: '500',
      TICKWORK_RUN_PURGE_INTERVAL: '1s',
    });
    const figures = await throughABlip('blip3', 40, 20);
    process.stdout.write(`db blip, 3 s lease: ${JSON.stringify(figures)}\n`);
  }, 180_000);

  it("Kafka targets' first attempts through a blip: each fire produced once, each run recorded once", async () => {
    const sink = await KafkaSink.create(`${db.iso.topicPrefix}.blip-sink`, 4);
    try {
      const n = 6_000;
      const target = sink.target();
      await db.pool.query(
        `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, target, payload, policies)
         SELECT 'kblip-' || g, 'acme', 0, 'once', $1::jsonb, 'COMPLETED', $2::jsonb, '{"n":1}'::jsonb, $3::jsonb
           FROM generate_series(1, $4::int) AS g`,
        [
          JSON.stringify({ kind: 'once', at: new Date().toISOString() }),
          JSON.stringify(targetToWire(target)),
          JSON.stringify(policiesToWire(quickRetry())),
          n,
        ],
      );
      const recorded = async () =>
        (
          await db.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM job_runs WHERE job_id LIKE 'kblip-%' AND status = 'SUCCEEDED'`,
          )
        ).rows[0]!.n;
      await publisher.publish(...Array.from({ length: n }, (_, i) => fireOf(`kblip-${i + 1}`, target)));
      await eventually(
        'the first runs recorded',
        async () => ((await recorded()) >= 200 ? true : undefined),
        60_000,
        20,
      );
      blip = new DatabaseBlip(new URL(db.iso.databaseUrl).pathname.slice(1));
      await blip.down();
      const producedAtDown = sink.deliveries().size;
      await new Promise((r) => setTimeout(r, BLIP_MS));
      await blip.up();
      blip = undefined;
      // The blip landed while fires were still running, or this test proves nothing.
      expect(producedAtDown).toBeLessThan(n);

      await eventually(
        `all ${n} runs recorded`,
        async () => ((await recorded()) === n ? true : undefined),
        90_000,
        200,
      ).catch((e: Error) => {
        throw new Error(`${e.message}\n${tails()}`);
      });
      await eventually(
        'every fire on the sink',
        () => {
          const d = sink.deliveries();
          return d.size >= n ? d : undefined;
        },
        60_000,
      );
      // Count only once the tap has read everything on the sink (a second copy may come last).
      const onSink = await sinkLength(sink.topic);
      await eventually(
        'the tap to read the whole sink',
        () => (sink.tap.messages.length >= onSink ? true : undefined),
        30_000,
      );
      const twice = [...sink.deliveries()].filter(([, c]) => c > 1).map(([id]) => id);
      expect({ producedTwice: twice.length, sample: twice.slice(0, 5) }).toEqual({
        producedTwice: 0,
        sample: [],
      });
      process.stdout.write(`db blip, Kafka targets: ${JSON.stringify({ n, producedAtDown })}\n`);
    } finally {
      await sink.close();
    }
  }, 240_000);
});
