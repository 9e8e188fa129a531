/**
 * A client generated from the OpenAPI document the running API serves, by tools we did not write:
 * openapi-typescript generates the types from /v1/openapi.json, tsc type-checks the scenario that
 * uses them with openapi-fetch, and the scenario then runs against the API (every response also
 * validated against the document).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startApp, type AppProcess } from '../support/apps';
import { freePort, isolate, type Isolation } from '../support/env';
import { OpenApiContract } from '../support/openapi';

const CLIENT_DIR = join(__dirname, 'openapi-client');
const TOKEN = 'tok-openapi-client-0123456789abcdef';
const TENANTS = JSON.stringify({
  tokens: [
    {
      name: 'openapi-client',
      sha256: createHash('sha256').update(TOKEN).digest('hex'),
      role: 'tenant',
      tenant: 'acme',
    },
  ],
});

/**
 * Runs a node script, failing with its output when it does not exit 0. Asynchronously: a blocked
 * event loop would miss the API closing idle keep-alive sockets, and the next request would fail.
 */
async function run(args: string[]): Promise<string> {
  try {
    const r = await promisify(execFile)(process.execPath, args, { cwd: join(__dirname, '..', '..') });
    return `${r.stdout}${r.stderr}`;
  } catch (e) {
    const err = e as Error & { stdout?: string; stderr?: string };
    throw new Error(`node ${args.join(' ')} failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
}

describe('a client generated from the served OpenAPI document (openapi-typescript + openapi-fetch)', () => {
  let iso: Isolation;
  let api: AppProcess;
  let contract: OpenApiContract;

  beforeAll(async () => {
    iso = isolate('oaclient');
    api = startApp(
      'api',
      iso.env({ TICKWORK_TENANTS: TENANTS, TICKWORK_GRPC_PORT: String(await freePort()) }),
      await freePort(),
    );
    await api.ready();
    contract = await OpenApiContract.served(api.url);
  }, 120_000);

  afterAll(async () => {
    await api?.stop();
    await iso?.dispose();
  });

  // Generating and type-checking take tens of seconds on a loaded machine: a bound of its own.
  it('is generated from /v1/openapi.json, type-checks, and creates, reads, lists by page, patches, pauses and deletes jobs', async () => {
    expect(await run([join(CLIENT_DIR, 'generate.mjs'), `${api.url}/v1/openapi.json`])).toContain(
      '/v1/openapi.json',
    );
    await run([require.resolve('typescript/bin/tsc'), '-p', join(CLIENT_DIR, 'tsconfig.json')]);

    // Imported only now: it imports the types just generated.
    const { runScenario, tickworkClient } = await import('./openapi-client/scenario');
    const r = await runScenario(tickworkClient(api.url, TOKEN, contract.fetch(api.url)), 'gen');

    expect(r.created.map((j) => [j.job_id, j.tenant_id, j.status, j.etag])).toEqual([
      ['gen-1', 'acme', 'SCHEDULED', 'v1'],
      ['gen-2', 'acme', 'SCHEDULED', 'v1'],
      ['gen-3', 'acme', 'SCHEDULED', 'v1'],
    ]);
    // Defaults filled in by the server, as the document says.
    expect(r.created[0]!.schedule).toEqual({
      kind: 'cron',
      expression: '0 9 * * MON-FRI',
      time_zone: 'Europe/London',
      dst_gap: 'AUTO',
      dst_repeat: 'AUTO',
    });
    expect(r.created[0]!.target).toMatchObject({ type: 'webhook', method: 'POST', timeout_ms: 10_000 });
    expect(r.created[0]!.policies).toMatchObject({ misfire: 'SKIP', retry: { max_attempts: 3 } });
    expect(r.got).toEqual({
      job: expect.objectContaining({ job_id: 'gen-1', last_run: null }),
      etag: '"v1"',
    });
    expect(r.pages).toEqual([['gen-1', 'gen-2'], ['gen-3']]);
    expect(r.patched).toMatchObject({ labels: { suite: 'gen', patched: 'yes' }, etag: 'v2' });
    expect(r.stale).toEqual({
      status: 412,
      error: { error: 'FAILED_PRECONDITION', message: expect.any(String) },
    });
    expect(r.paused.status).toBe('PAUSED');
    expect(r.deletedStatus).toBe(204);
    expect(r.afterDelete).toEqual({
      status: 404,
      error: { error: 'NOT_FOUND', message: expect.any(String) },
    });
    expect(r.invalid.status).toBe(400);
    expect(r.invalid.error?.error).toBe('INVALID_ARGUMENT');
    expect(r.invalid.error?.violations?.map((v) => v.field).sort()).toEqual([
      'schedule.expression',
      'schedule.time_zone',
    ]);
    // Every call above went through the document check: the operations it exercised.
    expect([...contract.seen.keys()].sort()).toEqual(
      expect.arrayContaining([
        'CreateJob 201',
        'CreateJob 400',
        'GetJob 200',
        'GetJob 404',
        'ListJobs 200',
        'UpdateJob 200',
        'UpdateJob 412',
        'PauseJob 200',
        'DeleteJob 204',
      ]),
    );
  }, 300_000);
});
