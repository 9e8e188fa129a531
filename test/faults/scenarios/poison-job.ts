/**
 * Scenario 6 (issue 24, defect 6): one tenant ("mallory") creates bad jobs of every kind the suite
 * can make, through every interface, all on the same shard as other tenants' jobs:
 *
 * - a `once` at 0000-01-01T00:00:00Z over REST, over gRPC (seconds −62167219200) and as a Kafka
 *   schedule command (timestamp-millis −62167219200000);
 * - an interval anchored in year 0, over REST;
 * - the same year-0 `once` written straight into the jobs table, as a row stored by an earlier
 *   version would be (the shape the API stored for it before validation: schedule.at and
 *   next_run_at in year 0).
 *
 * Each interface may refuse its job (the fix) or accept it; either way the other tenants' fires on
 * that shard must stay on time. Bound: none of them lost, and their p99 lateness within 0.5 s of
 * the p99 of the fires on the shards of the other claim lanes over the same period (the poison must not be
 * contagious; comparing with the same period keeps the box's own load out of the verdict).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
// eslint-disable-next-line no-restricted-imports -- mallory plays an outside producer, not Tickwork code
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
// eslint-disable-next-line no-restricted-imports -- mallory plays an outside producer, not Tickwork code
import { Kafka, logLevel } from 'kafkajs';
import { shardOf } from '@tickwork/domain';
import { credentials, loadPackageDefinition, Metadata, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { quantile, type Verdict } from '../harness/oracle';
import { ROOT } from '../harness/private-stack';
import { runScenario, scheduledIn, seconds, type Run, type Scenario } from '../harness/scenario';
import { sleep, waitUpTo } from '../harness/wait';

const TOKEN = 'tok-faults-mallory-0123456789abcdef';
const TENANTS = JSON.stringify({
  tokens: [
    {
      name: 'mallory',
      sha256: createHash('sha256').update(TOKEN).digest('hex'),
      role: 'tenant',
      tenant: 'mallory',
    },
  ],
});
const YEAR_ZERO_ISO = '0000-01-01T00:00:00Z';
const YEAR_ZERO_MS = Date.parse(YEAR_ZERO_ISO); // -62167219200000
/** The poisoned shard's fires may be this much later (p99) than other lanes' shards' in the same period. */
const P99_MARGIN_MS = 500;

/** A job id of `tag` that lands on `shard`. */
function idOnShard(run: Run, tag: string, shard: number): string {
  for (let n = 0; ; n++) {
    const id = `${run.workload.spec.prefix}-poison-${tag}-${n}`;
    if (shardOf(id, run.d.config.shardCount) === shard) return id;
  }
}

type Unary = (
  req: unknown,
  md: Metadata,
  opts: { deadline: Date },
  cb: (err: ServiceError | null, res: unknown) => void,
) => void;

/** tickwork.admin.v1.SchedulerAdmin/CreateJob as mallory; returns "OK" or the status and its details. */
function createJobOverGrpc(address: string, job: Record<string, unknown>): Promise<string> {
  const def = loadSync('tickwork/admin/v1/admin.proto', {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: false,
    oneofs: true,
    includeDirs: [join(ROOT, 'schemas', 'proto')],
  });
  const pkg = loadPackageDefinition(def) as unknown as {
    tickwork: {
      admin: { v1: { SchedulerAdmin: new (a: string, c: unknown) => { CreateJob: Unary; close(): void } } };
    };
  };
  const client = new pkg.tickwork.admin.v1.SchedulerAdmin(address, credentials.createInsecure());
  const md = new Metadata();
  md.set('authorization', `Bearer ${TOKEN}`);
  return new Promise((resolve) =>
    client.CreateJob({ job }, md, { deadline: new Date(Date.now() + 10_000) }, (err) => {
      client.close();
      resolve(err ? `${err.code} ${err.details.slice(0, 160)}` : 'OK');
    }),
  );
}

interface Attempt {
  readonly kind: string;
  readonly via: string;
  readonly jobId: string;
  /** What the interface answered. */
  readonly answer: string;
  /** Whether the job is in the store afterwards. */
  stored?: boolean;
}

export const poisonJob: Scenario = {
  name: 'poison-job',
  title: "one tenant's bad jobs (REST, gRPC, Kafka command, SQL) on the shard of another tenant's jobs",
  bound: `the other tenants' fires on that shard: none lost, p99 lateness ≤ the other claim lanes' shards' p99 + ${P99_MARGIN_MS} ms; nothing lost or early anywhere`,
  run: (ctx) => {
    const observeMs = ctx.short ? 20_000 : 40_000;
    return runScenario(
      ctx,
      {
        name: 'poison-job',
        title: poisonJob.title,
        deployment: { schedulers: 2, executors: 2, apiTenants: TENANTS },
        plannedMs: 10_000 + observeMs + 20_000,
      },
      async (run) => {
        const { d } = run;
        const shard = run.workload.jobs[0]!.shard;
        const hook = d.receiver.url();
        await sleep(run.baselineMs);
        const poisonedAt = run.fault(`mallory creates bad jobs on shard ${shard}`);
        const attempts: Attempt[] = [];

        // REST: a once in year 0.
        const rest = async (kind: string, jobId: string, schedule: Record<string, unknown>) => {
          const res = await fetch(`${d.api!.url}/v1/jobs`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
            body: JSON.stringify({ job_id: jobId, schedule, target: { type: 'webhook', url: hook } }),
          });
          const text = await res.text();
          attempts.push({ kind, via: 'REST', jobId, answer: `${res.status} ${text.slice(0, 160)}` });
        };
        await rest('once at year 0', idOnShard(run, 'rest', shard), { kind: 'once', at: YEAR_ZERO_ISO });
        // REST: an interval anchored in year 0 (its occurrences are now, the anchor is not).
        await rest('interval anchored at year 0', idOnShard(run, 'restiv', shard), {
          kind: 'interval',
          every_ms: 5_000,
          anchor: YEAR_ZERO_ISO,
        });

        // gRPC: the same instant as a protobuf Timestamp.
        const grpcId = idOnShard(run, 'grpc', shard);
        const grpcAnswer = await createJobOverGrpc(d.grpcAddress, {
          job_id: grpcId,
          schedule: { once: { at: { seconds: YEAR_ZERO_MS / 1000, nanos: 0 } } },
          target: { webhook: { url: hook, method: 'HTTP_METHOD_POST' } },
        });
        attempts.push({
          kind: 'once at year 0',
          via: 'gRPC',
          jobId: grpcId,
          answer: grpcAnswer,
        });

        // A Kafka schedule command, from a producer that knows only the topic and the registry.
        const topic = `${d.topicPrefix}.commands`;
        const kafkaId = idOnShard(run, 'kafka', shard);
        const kafka = new Kafka({
          clientId: 'mallory',
          brokers: [d.stack.kafka.brokers],
          logLevel: logLevel.NOTHING,
        });
        const producer = kafka.producer();
        try {
          const registry = new SchemaRegistry({ host: d.stack.registry.url });
          const schemaId = await registry.getLatestSchemaId(`${topic}-value`);
          const NS = 'io.tickwork.v1';
          const value = await registry.encode(schemaId, {
            command_id: randomUUID(),
            type: 'UPSERT',
            tenant_id: 'mallory',
            job_id: kafkaId,
            job: {
              schedule: { [`${NS}.OnceSchedule`]: { at: YEAR_ZERO_MS } },
              target: {
                [`${NS}.WebhookTarget`]: {
                  url: hook,
                  method: 'POST',
                  headers: {},
                  timeout_ms: 10_000,
                  success_status_min: 200,
                  success_status_max: 299,
                },
              },
              payload: '{}',
              policies: null,
              labels: {},
            },
            issued_at: Date.now(),
            expected_version: null,
          });
          await producer.connect();
          await producer.send({ topic, messages: [{ key: kafkaId, value }] });
          attempts.push({ kind: 'once at year 0', via: 'Kafka command', jobId: kafkaId, answer: 'produced' });
        } catch (e) {
          attempts.push({
            kind: 'once at year 0',
            via: 'Kafka command',
            jobId: kafkaId,
            answer: `could not produce: ${(e as Error).message}`,
          });
        } finally {
          await producer.disconnect().catch(() => undefined);
        }

        // SQL: the row an earlier version stored for the REST job above: schedule.at and next_run_at
        // in year 0 (1 BC to PostgreSQL), which PostgreSQL holds but not as the ISO text the claim sends.
        const sqlId = idOnShard(run, 'sql', shard);
        await d.pool.query(
          `INSERT INTO jobs (job_id, tenant_id, shard, schedule_kind, schedule, status, next_run_at, next_nominal_at, target, payload, policies)
           VALUES ($1, 'mallory', $2, 'once', $3::jsonb, 'SCHEDULED', '0001-01-01 00:00:00+00 BC', '0001-01-01 00:00:00+00 BC', $4::jsonb, '{}'::jsonb, '{}'::jsonb)`,
          [
            sqlId,
            shard,
            JSON.stringify({ kind: 'once', at: '0000-01-01T00:00:00.000Z' }),
            JSON.stringify({ type: 'webhook', url: hook, method: 'POST', headers: {}, timeout_ms: 10_000 }),
          ],
        );
        attempts.push({ kind: 'once at year 0', via: 'SQL (an old row)', jobId: sqlId, answer: 'inserted' });

        // Which of them are in the store (a Kafka command is applied asynchronously).
        await waitUpTo(
          async () => {
            const r = await d.pool.query<{ job_id: string }>(`SELECT job_id FROM jobs WHERE job_id = $1`, [
              kafkaId,
            ]);
            return r.rowCount ? true : undefined;
          },
          10_000,
          250,
        );
        const stored = await d.pool.query<{
          job_id: string;
          status: string;
          next_run_at: Date | null;
          schedule: unknown;
        }>(`SELECT job_id, status, next_run_at, schedule FROM jobs WHERE tenant_id = 'mallory'`);
        for (const a of attempts) a.stored = stored.rows.some((r) => r.job_id === a.jobId);
        for (const a of attempts)
          run.note(
            `poison ${a.kind} via ${a.via} (${a.jobId}): ${a.answer}; ${a.stored ? 'stored' : 'not stored'}`,
          );
        run.details.poisonStoredRows = stored.rows.map((r) => ({
          ...r,
          next_run_at: r.next_run_at?.toISOString() ?? null,
        }));
        await sleep(observeMs);
        run.endWindow();
        for (const a of attempts) run.excludedJobs.add(a.jobId);
        run.details.attempts = attempts;

        return ({ verdicts, to }) => {
          const others = verdicts.filter((v) => v.occ.tenantId !== 'mallory');
          const late = (vs: readonly Verdict[]) =>
            vs.map((v) => (v.firstArrival === undefined ? Infinity : v.firstArrival - v.scheduled));
          const sameShard = scheduledIn(
            others.filter((v) => v.occ.shard === shard),
            poisonedAt,
            to,
          );
          const lanes = d.config.scheduler.claimLanes;
          const sameLane = scheduledIn(
            others.filter((v) => v.occ.shard % lanes === shard % lanes),
            poisonedAt,
            to,
          );
          // The comparison: shards of the other claim lanes, which share nothing with the poison's.
          const elsewhere = scheduledIn(
            others.filter((v) => v.occ.shard % lanes !== shard % lanes),
            poisonedAt,
            to,
          );
          const lost = sameShard.filter((v) => v.missing).length;
          const p99 = quantile(late(sameShard), 0.99);
          const p99Elsewhere = quantile(late(elsewhere), 0.99);
          run.check(
            "other tenants' fires on the poisoned shard stay on time",
            `none lost, p99 lateness ≤ the p99 of the other claim lanes' shards + ${P99_MARGIN_MS} ms (fires due after the poison)`,
            `${sameShard.length} due, ${lost} lost, p99 ${Number.isFinite(p99) ? seconds(p99) : 'never'} (other lanes' shards: ${Number.isFinite(p99Elsewhere) ? seconds(p99Elsewhere) : 'never'})`,
            sameShard.length > 0 && lost === 0 && p99 <= p99Elsewhere + P99_MARGIN_MS,
          );
          const laneP99 = quantile(late(sameLane), 0.99);
          run.note(
            `shards of the same claim lane (shard mod ${lanes} = ${shard % lanes}): ${sameLane.length} due, ${sameLane.filter((v) => v.missing).length} lost, p99 ${Number.isFinite(laneP99) ? seconds(laneP99) : 'never'} (reported)`,
          );
          // What the schedulers logged about it.
          const fireLoopErrors = d.schedulers.map((s) => {
            try {
              return readFileSync(join(d.logDir, `${s.id}.log`), 'utf8')
                .split('\n')
                .filter((l) => /fire loop/.test(l)).length;
            } catch {
              return 0;
            }
          });
          run.note(`scheduler log lines about the fire loop failing: ${fireLoopErrors.join(', ')}`);
          run.details.shard = shard;
          run.details.sameShardP99Ms = Number.isFinite(p99) ? p99 : null;
        };
      },
    );
  },
};
