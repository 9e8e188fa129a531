/**
 * Schedule commands on Kafka, end to end: a producer that knows nothing of Tickwork's code (plain
 * kafkajs + the Confluent serializer, the schema looked up in the registry by subject) publishes
 * Avro commands of every type; the real scheduler applies them; the effects are read through the
 * gRPC API. Poison of every kind lands in <prefix>.commands.rejected with its original bytes and a
 * reason, while the good commands behind it on the same partition are applied.
 */
import { createHash, randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
// eslint-disable-next-line no-restricted-imports -- the test plays an outside producer, not Tickwork code
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
// eslint-disable-next-line no-restricted-imports -- the test plays an outside producer, not Tickwork code
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { Client as Pg } from 'pg';
import { AdminTestClient, type Msg } from '../support/admin-client';
import { startApp, type AppProcess } from '../support/apps';
import { eventually, freePort, isolate, STACK, type Isolation } from '../support/env';
import { TopicTap } from '../support/kafka';

const NS = 'io.tickwork.v1';
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const TOKEN = 'tok-acme-commands-0123456789';
const TENANTS = JSON.stringify({
  tokens: [{ name: 'acme-user', sha256: sha(TOKEN), role: 'tenant', tenant: 'acme' }],
});

/** A ScheduleCommand as avsc wants it: unions of records wrapped in their full name. */
function command(
  type: string,
  jobId: string,
  opts: { tenant?: string; job?: Msg | null; commandId?: string } = {},
): Msg {
  return {
    command_id: opts.commandId ?? randomUUID(),
    type,
    tenant_id: opts.tenant ?? 'acme',
    job_id: jobId,
    job: opts.job ?? null,
    issued_at: Date.now(),
    expected_version: null,
  };
}

function cronJob(
  opts: { expression?: string; zone?: string; labels?: Record<string, string>; payload?: string } = {},
): Msg {
  return {
    schedule: {
      [`${NS}.CronSchedule`]: {
        expression: opts.expression ?? '0 9 * * MON-FRI',
        time_zone: opts.zone ?? 'Europe/London',
        dst_gap: 'AUTO',
        dst_repeat: 'AUTO',
        start_at: null,
        end_at: null,
        max_fires: null,
      },
    },
    target: {
      [`${NS}.WebhookTarget`]: {
        url: 'https://example.com/hook',
        method: 'POST',
        headers: {},
        timeout_ms: 5000,
        success_status_min: 200,
        success_status_max: 299,
      },
    },
    payload: opts.payload ?? JSON.stringify({ hello: 'world' }),
    policies: null,
    labels: opts.labels ?? {},
  };
}

describe('schedule commands on Kafka', () => {
  let iso: Isolation;
  let apps: AppProcess[] = [];
  let grpc: AdminTestClient;
  let db: Pg;
  let registry: SchemaRegistry;
  let producer: Producer;
  let schemaId: number;
  let topic: string;

  beforeAll(async () => {
    iso = isolate('grpccommands');
    topic = `${iso.topicPrefix}.commands`;
    const grpcPort = await freePort();
    const env = iso.env({
      TICKWORK_TENANTS: TENANTS,
      TICKWORK_GRPC_PORT: String(grpcPort),
      TICKWORK_MAX_PAYLOAD_BYTES: '4096',
    });
    const api = startApp('api', env, await freePort());
    await api.ready();
    const scheduler = startApp('scheduler', env, await freePort());
    apps = [api, scheduler];
    await scheduler.ready();
    grpc = new AdminTestClient(`127.0.0.1:${grpcPort}`, TOKEN);
    db = new Pg({ connectionString: iso.databaseUrl });
    await db.connect();

    // The outside producer: it only knows the topic, the subject and the schema in the registry.
    registry = new SchemaRegistry({ host: STACK.registryUrl });
    schemaId = await registry.getLatestSchemaId(`${topic}-value`);
    const kafka = new Kafka({
      clientId: 'outside-producer',
      brokers: STACK.kafkaBrokers.split(','),
      logLevel: logLevel.NOTHING,
    });
    producer = kafka.producer();
    await producer.connect();
  }, 120_000);

  afterAll(async () => {
    await producer?.disconnect();
    grpc?.close();
    await Promise.all(apps.map((a) => a.stop()));
    await db?.end();
    await iso?.dispose();
  });

  const publish = async (key: string, values: Buffer[]) => {
    await producer.send({ topic, messages: values.map((value) => ({ key, value })) });
  };
  const encode = (c: Msg) => registry.encode(schemaId, c);
  const getJob = (jobId: string) => grpc.call('GetJob', { job_id: jobId });
  const jobIs = (jobId: string, check: (j: Msg) => boolean) =>
    eventually(`job ${jobId} to change`, async () => {
      const r = await getJob(jobId);
      return r.ok && check(r.res) ? r.res : undefined;
    });

  it('the ScheduleCommand schema is registered under <topic>-value with compatibility BACKWARD', async () => {
    const res = await fetch(`${STACK.registryUrl}/config/${encodeURIComponent(`${topic}-value`)}`);
    expect(res.status).toBe(200);
    expect(
      ((await res.json()) as { compatibilityLevel?: string; compatibility?: string }).compatibilityLevel ??
        '',
    ).toBe('BACKWARD');
    const schema = (await registry.getSchema(schemaId)) as unknown as { name?: string };
    expect(schema.name).toBe(`${NS}.ScheduleCommand`);
  });

  it('applies UPSERT, PAUSE, RESUME, TRIGGER and DELETE, visible through the gRPC API, and applies a command id once', async () => {
    const jobId = `cmd-${randomUUID().slice(0, 8)}`;
    await publish(jobId, [await encode(command('UPSERT', jobId, { job: cronJob({ labels: { v: '1' } }) }))]);
    const created = await jobIs(jobId, () => true);
    expect(created).toMatchObject({
      job_id: jobId,
      tenant_id: 'acme',
      status: 'JOB_STATUS_SCHEDULED',
      labels: { v: '1' },
    });
    expect(created.schedule).toMatchObject({
      cron: { expression: '0 9 * * MON-FRI', time_zone: 'Europe/London' },
    });

    await publish(jobId, [await encode(command('PAUSE', jobId))]);
    await jobIs(jobId, (j) => j.status === 'JOB_STATUS_PAUSED');
    await publish(jobId, [await encode(command('RESUME', jobId))]);
    await jobIs(jobId, (j) => j.status === 'JOB_STATUS_SCHEDULED');

    await publish(jobId, [
      await encode(
        command('UPSERT', jobId, { job: cronJob({ expression: '0 10 * * *', labels: { v: '2' } }) }),
      ),
    ]);
    const replaced = await jobIs(jobId, (j) => (j.labels as Msg | undefined)?.v === '2');
    expect(replaced.version).toBeGreaterThan(created.version as number);
    expect(replaced.schedule).toMatchObject({ cron: { expression: '0 10 * * *' } });

    // The same TRIGGER delivered twice is applied once; a PAUSE behind it tells us both were read.
    const trigger = await encode(command('TRIGGER', jobId, { commandId: `trigger-${jobId}` }));
    await publish(jobId, [trigger, trigger, await encode(command('PAUSE', jobId))]);
    await jobIs(jobId, (j) => j.status === 'JOB_STATUS_PAUSED');
    const occurrences = ((await grpc.ok('ListOccurrences', { job_id: jobId })).occurrences as Msg[]).filter(
      (o) => o.trigger === 'FIRE_TRIGGER_MANUAL',
    );
    expect(occurrences).toHaveLength(1);
    const applied = await db.query(
      `SELECT 1 FROM applied_commands WHERE tenant_id = 'acme' AND command_id = $1`,
      [`trigger-${jobId}`],
    );
    expect(applied.rowCount).toBe(1);

    await publish(jobId, [await encode(command('DELETE', jobId))]);
    await eventually('the job to be deleted', async () => {
      const r = await getJob(jobId);
      return !r.ok && r.code === status.NOT_FOUND ? true : undefined;
    });
    const audit = await db.query<{ action: string }>(
      `SELECT action FROM audit_events WHERE job_id = $1 AND via = 'kafka' AND outcome = 'OK' ORDER BY id`,
      [jobId],
    );
    expect(audit.rows.map((r) => r.action)).toEqual([
      'UpsertJob',
      'PauseJob',
      'ResumeJob',
      'UpsertJob',
      'TriggerJob',
      'PauseJob',
      'DeleteJob',
    ]);
  });

  it('sends poison of every kind to commands.rejected with its bytes and reason, and applies the good commands behind it on the same partition', async () => {
    const jobId = `poison-${randomUUID().slice(0, 8)}`;
    // Arrange other tenants' and other shapes' schemas, as a confused producer might.
    const other = await registry.register(
      {
        type: SchemaType.AVRO,
        schema: JSON.stringify({
          type: 'record',
          name: 'Other',
          namespace: 'com.example',
          fields: [{ name: 'x', type: 'int' }],
        }),
      },
      { subject: `${iso.topicPrefix}.other-value` },
    );
    const lacking = await registry.register(
      {
        type: SchemaType.AVRO,
        schema: JSON.stringify({
          type: 'record',
          name: 'ScheduleCommand',
          namespace: NS,
          fields: [
            { name: 'command_id', type: 'string' },
            { name: 'type', type: 'string' },
            { name: 'job_id', type: 'string' },
          ],
        }),
      },
      { subject: `${iso.topicPrefix}.lacking-value` },
    );
    const unknownSchema = Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0]), Buffer.from('junk')]);

    const poison: [string, Buffer, string | RegExp][] = [
      ['UNDECODABLE', Buffer.from(JSON.stringify({ type: 'PAUSE', job_id: jobId })), /wire format/],
      ['UNKNOWN_SCHEMA', unknownSchema, /not known/],
      ['SCHEMA_MISMATCH', await registry.encode(other.id, { x: 1 }), /cannot be read as/],
      [
        'SCHEMA_MISMATCH',
        await registry.encode(lacking.id, { command_id: randomUUID(), type: 'PAUSE', job_id: jobId }),
        /tenant_id|cannot be read/,
      ],
      ['INVALID_COMMAND', await encode(command('UPSERT', jobId, { job: null })), /job is required/],
      [
        'INVALID_JOB',
        await encode(command('UPSERT', jobId, { job: cronJob({ expression: '61 * * * *' }) })),
        /job\.schedule\.expression/,
      ],
      [
        'INVALID_JOB',
        await encode(command('UPSERT', jobId, { job: cronJob({ zone: 'Mars/Olympus' }) })),
        /job\.schedule\.time_zone/,
      ],
      [
        'OVERSIZED',
        await encode(
          command('UPSERT', jobId, {
            job: cronJob({ payload: JSON.stringify({ blob: 'x'.repeat(80_000) }) }),
          }),
        ),
        /limited to/,
      ],
      ['CROSS_TENANT', await encode(command('PAUSE', jobId, { tenant: 'globex' })), /another tenant/],
      ['KEY_MISMATCH', await encode(command('PAUSE', `${jobId}-elsewhere`)), /must equal job_id/],
      ['UNKNOWN_TYPE', await encode(command('UNKNOWN', jobId)), /not one this version applies/],
    ];
    const rejected = await TopicTap.open(`${iso.topicPrefix}.commands.rejected`);
    try {
      // The job exists first (so the cross-tenant command has a victim), then the poison, then good commands.
      await publish(jobId, [await encode(command('UPSERT', jobId, { job: cronJob() }))]);
      await jobIs(jobId, () => true);
      for (const [, bytes] of poison) await publish(jobId, [bytes]);
      await publish(jobId, [
        await encode(command('PAUSE', jobId)),
        await encode(command('UPSERT', jobId, { job: cronJob({ labels: { after: 'poison' } }) })),
      ]);

      const after = await jobIs(jobId, (j) => (j.labels as Msg | undefined)?.after === 'poison');
      expect(after.status).toBe('JOB_STATUS_PAUSED');

      const mine = await eventually('every poison message on the rejected topic', () => {
        const got = rejected.messages.filter((m) => m.headers['tickwork-source']?.startsWith(`${topic}/`));
        return got.length >= poison.length ? got : undefined;
      });
      expect(mine.map((m) => m.headers['tickwork-reject-code'])).toEqual(poison.map(([code]) => code));
      mine.forEach((m, i) => {
        const [code, bytes, reason] = poison[i]!;
        expect({ code, value: m.value?.equals(bytes) }).toEqual({ code, value: true });
        expect(m.headers['tickwork-reject-reason']).toMatch(reason);
      });
    } finally {
      await rejected.close();
    }
  });

  it('refuses an instant outside 1970..9999 (the year-0 poison of issue 24) with INVALID_JOB naming the field', async () => {
    const jobId = `instant-${randomUUID().slice(0, 8)}`;
    const withSchedule = (schedule: Msg): Msg => ({ ...cronJob(), schedule });
    const interval = (bounds: Msg): Msg => ({
      [`${NS}.IntervalSchedule`]: {
        every_ms: 60_000,
        anchor: null,
        start_at: null,
        end_at: null,
        max_fires: null,
        ...bounds,
      },
    });
    const poison: [string, Buffer, RegExp][] = [
      [
        'INVALID_JOB',
        await encode(
          command('UPSERT', jobId, {
            job: withSchedule({ [`${NS}.OnceSchedule`]: { at: -62_167_219_200_000 } }),
          }),
        ),
        /job\.schedule\.at: must be within 1970-01-01T00:00:00Z to 9999-12-31T23:59:59\.999Z; got 0000-01-01/,
      ],
      [
        'INVALID_JOB',
        await encode(
          command('UPSERT', jobId, { job: withSchedule(interval({ end_at: 253_402_300_800_000 })) }),
        ),
        /job\.schedule\.end_at: must be within/,
      ],
      [
        'INVALID_COMMAND',
        await encode(
          command('UPSERT', jobId, {
            job: withSchedule({ [`${NS}.OnceSchedule`]: { at: 8_640_000_000_000_001 } }),
          }),
        ),
        /schedule\.at: 8640000000000001 ms is not an instant within/,
      ],
    ];
    const rejected = await TopicTap.open(`${iso.topicPrefix}.commands.rejected`);
    try {
      for (const [, bytes] of poison) await publish(jobId, [bytes]);
      await publish(jobId, [
        await encode(command('UPSERT', jobId, { job: cronJob({ labels: { after: 'instants' } }) })),
      ]);
      await jobIs(jobId, (j) => (j.labels as Msg | undefined)?.after === 'instants');
      const mine = await eventually('the refused instants on the rejected topic', () => {
        const got = rejected.messages.filter((m) => m.key?.toString() === jobId);
        return got.length >= poison.length ? got : undefined;
      });
      expect(mine.map((m) => m.headers['tickwork-reject-code'])).toEqual(poison.map(([code]) => code));
      mine.forEach((m, i) => expect(m.headers['tickwork-reject-reason']).toMatch(poison[i]![2]));
    } finally {
      await rejected.close();
    }
  });

  it('applies an UPSERT with an RruleSchedule (the union branch appended last), and rejects a bad rule naming the field', async () => {
    const jobId = `cmd-rrule-${randomUUID().slice(0, 8)}`;
    const rruleJob = (rule: string): Msg => ({
      ...cronJob(),
      schedule: {
        [`${NS}.RruleSchedule`]: {
          rule,
          dtstart: '2026-01-01T00:00:00',
          time_zone: 'Europe/London',
          exdates: ['2026-12-25T17:00:00'],
          dst_gap: 'AUTO',
          dst_repeat: 'AUTO',
          start_at: null,
          end_at: null,
          max_fires: null,
        },
      },
    });
    await publish(jobId, [
      await encode(
        command('UPSERT', jobId, { job: rruleJob('FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0') }),
      ),
    ]);
    const created = await jobIs(jobId, () => true);
    expect(created.schedule).toMatchObject({
      rrule: {
        rule: 'FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0',
        dtstart: '2026-01-01T00:00:00',
        time_zone: 'Europe/London',
        exdates: ['2026-12-25T17:00:00'],
      },
    });
    const badId = `cmd-rrule-bad-${randomUUID().slice(0, 8)}`;
    await publish(badId, [
      await encode(command('UPSERT', badId, { job: rruleJob('FREQ=YEARLY;BYWEEKNO=1') })),
    ]);
    const rejected = await eventually('the rejected rrule command', async () => {
      const r = await db.query<{ reason: string }>(
        "SELECT reason FROM applied_commands WHERE job_id = $1 AND outcome <> 'APPLIED'",
        [badId],
      );
      return r.rows[0];
    });
    expect(rejected.reason).toContain('schedule.rule');
  });

  // Last: its refused command goes to commands.rejected, which the poison test reads whole.
  it('carries the fire SLO policies (tolerance_ms, slo_metrics) in an UPSERT, and refuses a bad tolerance naming it', async () => {
    // Unions of null and one type are plain values (the registry client's Avro: wrapUnions auto).
    const policies = (tolerance: number) => ({
      misfire: 'FIRE_ONCE',
      catch_up_window_ms: null,
      overlap: 'ALLOW',
      jitter_ms: 0,
      tolerance_ms: tolerance,
      slo_metrics: true,
      retry: null,
    });
    const jobId = `cmd-slo-${randomUUID().slice(0, 8)}`;
    await publish(jobId, [
      await encode(command('UPSERT', jobId, { job: { ...cronJob(), policies: policies(2_500) } })),
    ]);
    const created = await jobIs(jobId, () => true);
    expect(created.policies).toMatchObject({ tolerance_ms: 2_500, slo_metrics: true });
    // A command without the new fields (the previous schema's shape) still means "the default".
    const plain = `cmd-slo-plain-${randomUUID().slice(0, 8)}`;
    await publish(plain, [await encode(command('UPSERT', plain, { job: cronJob() }))]);
    const defaulted = await jobIs(plain, () => true);
    expect((defaulted.policies as Msg | undefined)?.tolerance_ms).toBeUndefined();
    expect((defaulted.policies as Msg | undefined)?.slo_metrics).toBeFalsy();

    const bad = `cmd-slo-bad-${randomUUID().slice(0, 8)}`;
    await publish(bad, [
      await encode(command('UPSERT', bad, { job: { ...cronJob(), policies: policies(-1) } })),
    ]);
    const refused = await eventually('the bad tolerance to be refused', async () => {
      const { rows } = await db.query<{ outcome: string; reason: string | null }>(
        `SELECT outcome, reason FROM applied_commands WHERE tenant_id = 'acme' AND job_id = $1`,
        [bad],
      );
      return rows[0];
    });
    expect(refused).toMatchObject({
      outcome: 'INVALID_JOB',
      reason: expect.stringMatching(/policies\.tolerance_ms/),
    });
    expect((await getJob(bad)).ok).toBe(false);
  });
});
