/** Per-test isolation: each test gets its own database and topic prefix on the shared stack. */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Client } from 'pg';

export const STACK = {
  kafkaBrokers: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092',
  registryUrl: process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7',
  adminDatabaseUrl: process.env.TEST_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
};

export interface Isolation {
  readonly id: string;
  readonly databaseUrl: string;
  readonly topicPrefix: string;
  /** Environment for an app process of this test. */
  env(extra?: Record<string, string>): Record<string, string>;
  /** Drops the test database unless the test failed and KEEP_TEST_DB is set. */
  dispose(): Promise<void>;
}

/** A fresh database name and topic prefix; the apps create and migrate the database themselves. */
export function isolate(label: string): Isolation {
  const id = `${label
    .replace(/[^a-z0-9]/gi, '')
    .toLowerCase()
    .slice(0, 20)}_${randomBytes(4).toString('hex')}`;
  const dbName = `tickwork_test_${id}`;
  const url = new URL(STACK.adminDatabaseUrl);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  const topicPrefix = `test.${id}`;
  return {
    id,
    databaseUrl,
    topicPrefix,
    env: (extra = {}) => ({
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: STACK.kafkaBrokers,
      SCHEMA_REGISTRY_URL: STACK.registryUrl,
      TICKWORK_TOPIC_PREFIX: topicPrefix,
      TICKWORK_SHARDS: '4',
      TICKWORK_FIRES_PARTITIONS: '4',
      ...extra,
    }),
    dispose: async () => {
      if (process.env.KEEP_TEST_DB) return;
      const admin = new Client({ connectionString: STACK.adminDatabaseUrl });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}

/** A TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      lastError = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${(lastError as Error).message})` : ''}`,
  );
}
