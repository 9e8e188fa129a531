/** The `tickwork` CLI against a real API: every command, tables and --json, and errors with exit codes. */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type AppProcess } from '../support/apps';
import { freePort, isolate, type Isolation } from '../support/env';

// The same build output the other apps start from (TICKWORK_TEST_DIST, as in support/apps).
const CLI = join(
  process.env.TICKWORK_TEST_DIST ?? join(__dirname, '..', '..', 'dist'),
  'apps',
  'cli',
  'src',
  'main.js',
);
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const TOKEN = 'tok-cli-acme-0123456789abcdef';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('tickwork CLI', () => {
  let iso: Isolation;
  let api: AppProcess;
  let server: string;
  let dir: string;

  const tickwork = (args: string[], env: Record<string, string> = {}): Promise<Run> =>
    new Promise((done) => {
      execFile(
        process.execPath,
        [CLI, '--timeout', '30000', ...args],
        {
          env: { PATH: process.env.PATH ?? '', TICKWORK_SERVER: server, TICKWORK_TOKEN: TOKEN, ...env },
          timeout: 60_000,
        },
        (err, stdout, stderr) =>
          done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  beforeAll(async () => {
    iso = isolate('cli');
    const grpcPort = await freePort();
    server = `127.0.0.1:${grpcPort}`;
    const tenants = JSON.stringify({
      tokens: [{ name: 'cli-user', sha256: sha(TOKEN), role: 'tenant', tenant: 'acme' }],
    });
    api = startApp(
      'api',
      iso.env({ TICKWORK_TENANTS: tenants, TICKWORK_GRPC_PORT: String(grpcPort) }),
      await freePort(),
    );
    await api.ready();
    dir = mkdtempSync(join(tmpdir(), 'tickwork-cli-'));
  }, 120_000);

  afterAll(async () => {
    await api?.stop();
    await iso?.dispose();
  });

  it('creates a job from YAML, shows it as a table and as JSON, lists, pauses, resumes, triggers, and deletes it', async () => {
    const file = join(dir, 'job.yaml');
    writeFileSync(
      file,
      [
        'job_id: cli-report',
        'schedule: { kind: cron, expression: "0 9 * * MON-FRI", time_zone: Europe/London }',
        'target: { type: webhook, url: "https://example.com/hook" }',
        'payload: { report: nightly }',
        'labels: { team: data }',
      ].join('\n'),
    );
    const created = await tickwork(['create', '-f', file]);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/^job_id\s+cli-report$/m);
    expect(created.stdout).toMatch(/^status\s+SCHEDULED$/m);
    expect(created.stdout).toMatch(/^schedule\s+cron "0 9 \* \* MON-FRI" Europe\/London$/m);

    const json = await tickwork(['--json', 'get', 'cli-report']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      job_id: 'cli-report',
      tenant_id: 'acme',
      payload: { report: 'nightly' },
      labels: { team: 'data' },
      etag: 'v1',
    });

    const list = await tickwork(['list', '--label', 'team=data']);
    expect(list.stdout.split('\n')[0]).toMatch(/^JOB_ID\s+TENANT\s+STATUS\s+SCHEDULE\s+NEXT_RUN_AT\s+FIRES$/);
    expect(list.stdout).toMatch(/^cli-report\s+acme\s+SCHEDULED\s+/m);

    expect((await tickwork(['pause', 'cli-report'])).stdout).toMatch(/^status\s+PAUSED$/m);
    expect((await tickwork(['resume', 'cli-report'])).stdout).toMatch(/^status\s+SCHEDULED$/m);
    expect((await tickwork(['trigger', 'cli-report'])).stdout).toMatch(
      /^triggered: fire cli-report:1 \(fence token 1\)/,
    );
    const occurrences = await tickwork(['occurrences', 'cli-report']);
    // Fired under version 3 (created, paused, resumed).
    expect(occurrences.stdout).toMatch(/FIRED\s+1\s+v3\s+fence 1 MANUAL/);
    expect((await tickwork(['--json', 'runs', 'cli-report'])).stdout).toContain('"runs": []');
    expect((await tickwork(['--json', 'dlq', 'list'])).stdout).toContain('"dead_letters": []');

    const update = join(dir, 'update.yaml');
    writeFileSync(update, 'labels: { team: platform }\n');
    expect((await tickwork(['update', 'cli-report', '-f', update, '--etag', 'v3'])).stdout).toMatch(
      /^labels\s+team=platform$/m,
    );

    expect(await tickwork(['delete', 'cli-report'])).toMatchObject({
      code: 0,
      stdout: 'deleted cli-report\n',
    });
    const gone = await tickwork(['get', 'cli-report']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^tickwork: NOT_FOUND: job cli-report not found/);
  });

  it('says who the token is, shows lateness, and refuses the cluster view to a tenant', async () => {
    const me = await tickwork(['whoami']);
    expect(me.code).toBe(0);
    expect(me.stdout).toMatch(/^actor\s+cli-user$/m);
    expect(me.stdout).toMatch(/^tenant\s+acme$/m);
    const late = await tickwork(['lateness', '-w', 'day']);
    expect(late.code).toBe(0);
    expect(late.stdout).toMatch(/^last day: fired \d+, skipped \d+, retried \d+, dead-lettered \d+/);
    // The header and 24 hourly buckets.
    expect(late.stdout.split('\n').filter((l) => /^\d{4}-\d\d-\d\dT/.test(l))).toHaveLength(24);
    const cluster = await tickwork(['cluster']);
    expect(cluster.code).toBe(1);
    expect(cluster.stderr).toContain('PERMISSION_DENIED');
  });

  it('previews a cron schedule across a DST change', async () => {
    const r = await tickwork([
      'preview',
      '--cron',
      '30 1 * * *',
      '--tz',
      'Europe/London',
      '--from',
      '2026-03-28T00:00:00Z',
      '-n',
      '2',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').slice(1, 3)).toEqual([
      '1  2026-03-28T01:30:00.000Z  2026-03-28T01:30:00+00:00 Europe/London',
      '2  2026-03-29T01:30:00.000Z  2026-03-29T02:30:00+01:00 Europe/London',
    ]);
  });

  it('prints every bad field and exits 2 on INVALID_ARGUMENT; exits 1 without a valid token', async () => {
    const file = join(dir, 'bad.json');
    writeFileSync(
      file,
      JSON.stringify({
        schedule: { kind: 'cron', expression: '0 9 * *', time_zone: 'Mars/Olympus' },
        target: { type: 'webhook', url: 'ftp://x' },
      }),
    );
    const bad = await tickwork(['create', '-f', file]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^ {2}job\.schedule\.cron\.time_zone: unknown IANA time zone/m);
    expect(bad.stderr).toMatch(/^ {2}job\.target\.webhook\.url: /m);

    const anonymous = await tickwork(['list'], { TICKWORK_TOKEN: '' });
    expect(anonymous.code).toBe(1);
    expect(anonymous.stderr).toMatch(/UNAUTHENTICATED/);
  });

  it('update --dry-run prints the diff of the next occurrences and changes nothing', async () => {
    const file = join(dir, 'yearly.yaml');
    writeFileSync(
      file,
      [
        'job_id: cli-yearly',
        'schedule: { kind: cron, expression: "0 0 1 1 *", time_zone: UTC }',
        'target: { type: webhook, url: "https://example.com/hook" }',
      ].join('\n'),
    );
    expect((await tickwork(['create', '-f', file])).code).toBe(0);
    const edit = join(dir, 'yearly-edit.yaml');
    writeFileSync(edit, 'schedule: { kind: cron, expression: "0 0 1 7 *", time_zone: UTC }\n');
    const dry = await tickwork(['update', 'cli-yearly', '-f', edit, '--dry-run', '-n', '3']);
    expect(dry).toMatchObject({ code: 0, stderr: '' });
    expect(dry.stdout).toMatch(
      /^dry run: nothing was changed\. cli-yearly is at version 1; this update would make it version 2\.$/m,
    );
    expect(dry.stdout).toMatch(/^the timing changes: the schedule restarts now/m);
    expect(dry.stdout).toMatch(/^\+ \d{4}-07-01T00:00:00\.000Z$/m);
    expect(dry.stdout).toMatch(/^- \d{4}-01-01T00:00:00\.000Z$/m);
    expect(dry.stdout).toMatch(/^\d+ appear, \d+ disappear, 0 move$/m);
    const json = JSON.parse(
      (await tickwork(['--json', 'update', 'cli-yearly', '-f', edit, '--dry-run'])).stdout,
    );
    expect(json.edit_preview).toMatchObject({ current_version: 1, count: 10, replanned: true });
    const bad = await tickwork(['update', 'cli-yearly', '-f', edit, '--dry-run', '-n', '0']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--count/);
    // Nothing changed.
    expect(JSON.parse((await tickwork(['--json', 'get', 'cli-yearly'])).stdout)).toMatchObject({
      version: 1,
      schedule: { cron: { expression: '0 0 1 1 *' } },
    });
  });

  it('makes a token and the tenants-file entry that authenticates it', async () => {
    const r = await tickwork(['--json', 'token', 'ci', '--tenant', 'acme']);
    const { token, entry } = JSON.parse(r.stdout) as {
      token: string;
      entry: { sha256: string; tenant: string; role: string };
    };
    expect(entry).toMatchObject({ sha256: sha(token), tenant: 'acme', role: 'tenant' });
  });
});
