/**
 * Checks the local stack itself (infra/stack up): the real Kafka broker and the Apicurio registry,
 * through the same client libraries the application uses. Needs the stack running.
 *
 * Env: KAFKA_BROKERS (default 127.0.0.1:9092),
 *      SCHEMA_REGISTRY_URL (default http://127.0.0.1:8081/apis/ccompat/v7).
 */
import { randomUUID } from 'node:crypto';
// eslint-disable-next-line no-restricted-imports
import { Admin, Consumer, ConfigResourceTypes, Kafka, LogEntry, logLevel, Producer } from 'kafkajs';
// eslint-disable-next-line no-restricted-imports
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';

const BROKERS = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');
const REGISTRY_URL = (process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7').replace(
  /\/+$/,
  '',
);
const RUN = `${Date.now().toString(36)}-${randomUUID().slice(0, 8)}`;
const name = (what: string): string => `stack-test.${what}.${RUN}`;

/** kafkajs logs some normal outcomes at ERROR (a rejoin during a rebalance, "topic exists"): drop those. */
function quietExpectedErrors(): (entry: LogEntry) => void {
  const expected = [/group is rebalancing/i, /Topic creation errors/, /already exists/i];
  return ({ namespace, level, log }) => {
    const text = `${log.message} ${String(log.error ?? '')}`;
    if (level === logLevel.ERROR && expected.some((re) => re.test(text))) return;
    console.error(`[kafkajs ${namespace}]`, JSON.stringify(log));
  };
}

const kafka = new Kafka({
  clientId: `stack-test-${RUN}`,
  brokers: BROKERS,
  connectionTimeout: 5_000,
  requestTimeout: 15_000,
  retry: { retries: 5, initialRetryTime: 200 },
  logLevel: logLevel.ERROR,
  logCreator: quietExpectedErrors,
});

/** Everything a test opens, closed in afterEach whatever happened. */
const opened: Array<{ disconnect(): Promise<void> }> = [];
function track<T extends { disconnect(): Promise<void> }>(client: T): T {
  opened.push(client);
  return client;
}
afterEach(async () => {
  const clients = opened.splice(0);
  await Promise.allSettled(clients.reverse().map((c) => c.disconnect()));
});

/** Resolves when check() is true; rejects with `what` after timeoutMs. Polls every 100 ms. */
async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function connectedAdmin(): Promise<Admin> {
  const admin = track(kafka.admin());
  await admin.connect();
  return admin;
}

/** Topics this run created, deleted in afterAll so repeated runs do not pile them up. */
const createdTopics: string[] = [];
afterAll(async () => {
  if (createdTopics.length === 0) return;
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: createdTopics, timeout: 10_000 });
  } finally {
    await admin.disconnect();
  }
});

async function createTopic(admin: Admin, topic: string, numPartitions: number): Promise<void> {
  const created = await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions, replicationFactor: 1 }],
  });
  expect(created).toBe(true);
  createdTopics.push(topic);
}

function consumer(groupId: string): Consumer {
  return track(
    kafka.consumer({
      groupId,
      sessionTimeout: 10_000,
      rebalanceTimeout: 10_000,
      heartbeatInterval: 500,
      maxWaitTimeInMs: 200,
    }),
  );
}

describe('Kafka broker (kafkajs)', () => {
  it('runs with the settings infra/stack promises', async () => {
    const admin = await connectedAdmin();
    const cluster = await admin.describeCluster();
    expect(cluster.brokers.length).toBe(1);
    const brokerId = String(cluster.brokers[0]!.nodeId);

    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.BROKER, name: brokerId }],
    });
    const entries = new Map(described.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
    expect(entries.get('auto.create.topics.enable')).toBe('false');
    expect(entries.get('num.partitions')).toBe('1');
    expect(entries.get('offsets.topic.replication.factor')).toBe('1');
    expect(entries.get('transaction.state.log.replication.factor')).toBe('1');
    expect(entries.get('transaction.state.log.min.isr')).toBe('1');
    expect(entries.get('group.initial.rebalance.delay.ms')).toBe('0');
  });

  it('creates a topic with configs and reads them back with describeConfigs', async () => {
    const admin = await connectedAdmin();
    const topic = name('compacted');
    const created = await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic,
          numPartitions: 3,
          replicationFactor: 1,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'min.compaction.lag.ms', value: '60000' },
          ],
        },
      ],
    });
    expect(created).toBe(true);
    createdTopics.push(topic);
    // Creating it again is a no-op that says so.
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }] })).toBe(
      false,
    );

    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: topic,
          configNames: ['cleanup.policy', 'min.compaction.lag.ms'],
        },
      ],
    });
    const entries = new Map(described.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
    expect(entries.get('cleanup.policy')).toBe('compact');
    expect(entries.get('min.compaction.lag.ms')).toBe('60000');

    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(metadata.topics[0]!.partitions).toHaveLength(3);
  });

  it('delivers from an idempotent producer (acks=-1) to a consumer group', async () => {
    const admin = await connectedAdmin();
    const topic = name('idempotent');
    await createTopic(admin, topic, 2);

    const producer: Producer = track(kafka.producer({ idempotent: true, maxInFlightRequests: 1 }));
    await producer.connect();
    const sent = Array.from({ length: 20 }, (_, i) => ({ key: `k${i % 4}`, value: `v${i}` }));
    const results = await producer.send({ topic, acks: -1, messages: sent });
    expect(results.every((r) => r.errorCode === 0)).toBe(true);

    const received: string[] = [];
    const c = consumer(name('group-idem'));
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({
      eachMessage: async ({ message }) => {
        received.push(message.value?.toString() ?? '');
      },
    });
    await waitFor('all 20 messages', () => received.length >= sent.length);
    expect([...received].sort()).toEqual(sent.map((m) => m.value).sort());

    // The group committed its offsets (it's a real group on a real coordinator).
    await c.stop();
    await waitFor('committed offsets', async () => {
      const offsets = await admin.fetchOffsets({ groupId: name('group-idem'), topics: [topic] });
      const committed = offsets[0]!.partitions.reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
      return committed === sent.length;
    });
  });

  it('splits partitions between two consumers of one group after a rebalance', async () => {
    const admin = await connectedAdmin();
    const topic = name('rebalance');
    const partitions = 4;
    await createTopic(admin, topic, partitions);
    const groupId = name('group-rebalance');

    type Member = { consumer: Consumer; assigned: number[]; generation: number; got: Set<number> };
    const members: Member[] = [];
    for (let i = 0; i < 2; i++) {
      const member: Member = { consumer: consumer(groupId), assigned: [], generation: 0, got: new Set() };
      member.consumer.on(member.consumer.events.GROUP_JOIN, (e) => {
        member.assigned = [...(e.payload.memberAssignment[topic] ?? [])].sort();
        member.generation++;
      });
      await member.consumer.connect();
      await member.consumer.subscribe({ topic, fromBeginning: true });
      await member.consumer.run({
        eachMessage: async ({ partition }) => {
          member.got.add(partition);
        },
      });
      members.push(member);
      // The first member owns everything before the second one joins.
      if (i === 0)
        await waitFor('first member to own all partitions', () => member.assigned.length === partitions);
    }
    const [a, b] = members as [Member, Member];

    await waitFor(
      'both members to hold a share of the partitions',
      () =>
        a.assigned.length > 0 &&
        b.assigned.length > 0 &&
        a.assigned.length + b.assigned.length === partitions &&
        new Set([...a.assigned, ...b.assigned]).size === partitions,
      30_000,
    );
    expect(a.generation).toBeGreaterThanOrEqual(2); // the first member really rebalanced

    const producer = track(kafka.producer({ idempotent: true, maxInFlightRequests: 1 }));
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: partitions * 3 }, (_, i) => ({
        partition: i % partitions,
        value: `m${i}`,
      })),
    });
    await waitFor('each member to consume from its own partitions', () => a.got.size > 0 && b.got.size > 0);
    expect([...a.got].every((p) => a.assigned.includes(p))).toBe(true);
    expect([...b.got].every((p) => b.assigned.includes(p))).toBe(true);
  });
});

describe('Schema registry (Apicurio, Confluent API)', () => {
  const registry = new SchemaRegistry({ host: REGISTRY_URL });
  const headers = { 'Content-Type': 'application/vnd.schemaregistry.v1+json' };
  const v1 = {
    type: 'record',
    name: 'StackProbe',
    namespace: 'dev.tickwork.test',
    fields: [
      { name: 'jobId', type: 'string' },
      { name: 'attempt', type: 'int' },
    ],
  };

  it('registers an Avro schema and round-trips a value through encode/decode', async () => {
    const subject = name('roundtrip') + '-value';
    const { id } = await registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(v1) },
      { subject },
    );
    expect(id).toBeGreaterThan(0);
    // Registering the same schema again returns the same id.
    const again = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v1) }, { subject });
    expect(again.id).toBe(id);
    expect(await registry.getLatestSchemaId(subject)).toBe(id);

    const encoded = await registry.encode(id, { jobId: 'job-1', attempt: 3 });
    expect(encoded.readUInt8(0)).toBe(0); // Confluent wire format: magic byte, then the schema id
    expect(encoded.readInt32BE(1)).toBe(id);
    // A fresh client (empty cache) has to fetch the schema by id from the server.
    const decoded = await new SchemaRegistry({ host: REGISTRY_URL }).decode(encoded);
    expect(decoded).toMatchObject({ jobId: 'job-1', attempt: 3 });
  });

  it('enforces BACKWARD compatibility set per subject', async () => {
    const subject = name('compat') + '-value';
    await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v1) }, { subject });

    const put = await fetch(`${REGISTRY_URL}/config/${encodeURIComponent(subject)}`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ compatibility: 'BACKWARD' }),
    });
    expect(put.status).toBe(200);
    const got = await fetch(`${REGISTRY_URL}/config/${encodeURIComponent(subject)}`);
    expect(got.status).toBe(200);
    expect(((await got.json()) as { compatibilityLevel?: string }).compatibilityLevel).toBe('BACKWARD');

    const addOptional = {
      ...v1,
      fields: [...v1.fields, { name: 'note', type: ['null', 'string'], default: null }],
    };
    const addRequired = { ...v1, fields: [...v1.fields, { name: 'owner', type: 'string' }] };
    const check = async (schema: object): Promise<boolean> => {
      const res = await fetch(
        `${REGISTRY_URL}/compatibility/subjects/${encodeURIComponent(subject)}/versions/latest`,
        {
          method: 'POST',
          headers,
          body: JSON.stringify({ schemaType: 'AVRO', schema: JSON.stringify(schema) }),
        },
      );
      expect(res.status).toBe(200);
      return ((await res.json()) as { is_compatible: boolean }).is_compatible;
    };
    expect(await check(addOptional)).toBe(true);
    expect(await check(addRequired)).toBe(false);

    await expect(
      registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(addRequired) }, { subject }),
    ).rejects.toThrow();
    const v2 = await registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(addOptional) },
      { subject },
    );
    expect(await registry.getLatestSchemaId(subject)).toBe(v2.id);
  });
});
