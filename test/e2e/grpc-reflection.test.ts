/**
 * gRPC server reflection as standard tools use it: a Python client (Debian's grpcio and
 * google.protobuf, test/support/reflection_client.py) that has no .proto files learns the API
 * from the real API process's reflection service (v1 and v1alpha), loads what it is given into a
 * fresh C++ DescriptorPool (which rejects any descriptor protoc would not write), and creates,
 * gets and lists a job through messages built from those descriptors.
 * Needs protoc, python3-grpcio, python3-protobuf and grpc-proto (test/run installs them when it can).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type AppProcess } from '../support/apps';
import { freePort, isolate, type Isolation } from '../support/env';

// Debian's interpreter, where python3-grpcio and python3-protobuf are (a pyenv python3 on PATH has neither).
const PYTHON = '/usr/bin/python3';
const CLIENT = join(__dirname, '..', 'support', 'reflection_client.py');
const COMMITTED_SET = join(__dirname, '..', '..', 'schemas', 'proto', 'tickwork.descriptor-set.binpb');
// The reflection-only caller the README shows newcomers.
const README_TOOL = join(__dirname, '..', '..', 'infra', 'grpc-reflect.py');
const TOKEN = 'tok-reflect-0123456789abcdef';
const TENANTS = JSON.stringify({
  tenants: { acme: {} },
  tokens: [
    {
      name: 'acme-user',
      sha256: createHash('sha256').update(TOKEN).digest('hex'),
      role: 'tenant',
      tenant: 'acme',
    },
  ],
});

const ADMIN_DEPENDENCIES = [
  'google/protobuf/empty.proto',
  'google/protobuf/field_mask.proto',
  'google/protobuf/struct.proto',
  'google/protobuf/timestamp.proto',
];

interface Seen {
  services: string[];
  by_filename: { name: string; dependency: string[] }[];
  by_filename_as_committed: boolean[];
  by_symbol: string[];
  by_method: string[];
  by_entry: string[];
  missing_file: { code?: number; message?: string };
  missing_symbol: { code?: number; message?: string };
  extension: { code?: number; message?: string };
  extension_numbers: { base_type_name: string; extension_number: number[] };
  descriptors: Record<string, unknown>;
  created: Record<string, unknown>;
  got: Record<string, unknown>;
  listed: { jobs?: Record<string, unknown>[] };
  protoc_got: string;
  health: { status?: string };
  v1alpha_services: string[];
  v1alpha_same_files: boolean;
  v1alpha_get: Record<string, unknown>;
}

describe('gRPC reflection with standard tools', () => {
  let iso: Isolation;
  let api: AppProcess;
  let grpcAddress: string;
  let workdir: string;

  beforeAll(async () => {
    iso = isolate('grpcreflect');
    const grpcPort = await freePort();
    grpcAddress = `127.0.0.1:${grpcPort}`;
    api = startApp(
      'api',
      iso.env({ TICKWORK_TENANTS: TENANTS, TICKWORK_GRPC_PORT: String(grpcPort) }),
      await freePort(),
    );
    await api.ready();
    workdir = mkdtempSync(join(tmpdir(), 'tickwork-reflection-'));
  }, 120_000);

  afterAll(async () => {
    await api?.stop();
    await iso?.dispose();
    if (workdir) rmSync(workdir, { recursive: true, force: true });
  });

  it('a Python grpcio client loads the reflected files into a DescriptorPool and calls the API through them', () => {
    const r = spawnSync(PYTHON, [CLIENT, grpcAddress, TOKEN, workdir, COMMITTED_SET], {
      encoding: 'utf8',
      timeout: 90_000,
    });
    if (r.error)
      throw new Error(`${PYTHON} did not run (apt-get install python3-grpcio): ${r.error.message}`);
    if (r.status !== 0) throw new Error(`reflection_client.py exited ${r.status}:\n${r.stderr}`);
    const seen = JSON.parse(r.stdout) as Seen;

    const services = [
      'grpc.health.v1.Health',
      'grpc.reflection.v1.ServerReflection',
      'grpc.reflection.v1alpha.ServerReflection',
      'tickwork.admin.v1.SchedulerAdmin',
    ];
    expect(seen.services).toEqual(services);
    expect(seen.v1alpha_services).toEqual(services);

    // The committed path, with its imports named and sent along.
    expect(seen.by_filename[0]).toEqual({
      name: 'tickwork/admin/v1/admin.proto',
      dependency: ADMIN_DEPENDENCIES,
    });
    expect(seen.by_filename.map((f) => f.name).sort()).toEqual(
      ['tickwork/admin/v1/admin.proto', ...ADMIN_DEPENDENCIES].sort(),
    );
    // Byte for byte what protoc wrote into the committed set (compared by Python's own parser).
    expect(seen.by_filename_as_committed).toEqual([true, true, true, true, true]);
    expect(seen.by_symbol.sort()).toEqual(seen.by_filename.map((f) => f.name).sort());
    expect(seen.by_method).toEqual(['tickwork/admin/v1/admin.proto']);
    expect(seen.by_entry).toEqual(['tickwork/admin/v1/admin.proto']);

    // Unknown names and extensions: NOT_FOUND in the stream, which goes on answering.
    expect(seen.missing_file).toMatchObject({ code: 5, message: expect.stringContaining('no/such.proto') });
    expect(seen.missing_symbol).toMatchObject({
      code: 5,
      message: expect.stringContaining('no.such.Symbol'),
    });
    expect(seen.extension).toMatchObject({ code: 5 });
    expect(seen.extension_numbers).toEqual({ base_type_name: 'tickwork.admin.v1.Job', extension_number: [] });

    // What protoc writes: map entries, proto3 optional (a synthetic oneof), comments.
    expect(seen.descriptors).toEqual({
      labels_entry: 'tickwork.admin.v1.Job.LabelsEntry',
      labels_entry_is_map_entry: true,
      struct_fields_entry: 'google.protobuf.Struct.FieldsEntry',
      max_fires_has_presence: true,
      max_fires_oneof: '_max_fires',
      get_job_comment_kept: true,
    });

    // RPCs through messages built from the reflected descriptors alone.
    const job = {
      job_id: 'reflected-1',
      tenant_id: 'acme',
      schedule: { interval: { every_ms: '3600000', max_fires: '3' } },
      payload: { report: 'daily', n: 2, tags: ['a', 'b'] },
      labels: { team: 'reflection' },
      status: 'JOB_STATUS_SCHEDULED',
    };
    expect(seen.created).toMatchObject(job);
    expect(seen.got).toMatchObject(job);
    expect(seen.listed.jobs?.map((j) => j.job_id)).toEqual(['reflected-1']);
    expect(seen.protoc_got).toContain('job_id: "reflected-1"');
    expect(seen.protoc_got).toMatch(/labels \{\s+key: "team"\s+value: "reflection"\s+\}/);
    expect(seen.protoc_got).toMatch(/max_fires: 3/);
    expect(seen.health).toEqual({ status: 'SERVING' });
    expect(seen.v1alpha_same_files).toBe(true);
    expect(seen.v1alpha_get).toMatchObject({ job_id: 'reflected-1', labels: { team: 'reflection' } });
  });

  it('the README commands work: infra/grpc-reflect.py lists the services and calls PreviewSchedule, CreateJob and GetJob', () => {
    const run = (args: string[], env: Record<string, string> = {}) => {
      const r = spawnSync(PYTHON, [README_TOOL, grpcAddress, ...args], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, ...env },
      });
      if (r.status !== 0) throw new Error(`grpc-reflect.py ${args[0]} exited ${r.status}:\n${r.stderr}`);
      return r.stdout;
    };
    expect(run(['list']).trim().split('\n')).toContain('tickwork.admin.v1.SchedulerAdmin');
    const preview = JSON.parse(
      run(
        [
          'call',
          'tickwork.admin.v1.SchedulerAdmin/PreviewSchedule',
          '{"schedule": {"cron": {"expression": "0 9 * * MON-FRI", "time_zone": "Europe/London"}}, "count": 5}',
        ],
        { TOKEN },
      ),
    ) as { fires?: { local_time: string }[] };
    expect(preview.fires).toHaveLength(5);
    expect(preview.fires?.[0]?.local_time).toMatch(/T09:00:00[+-]\d\d:\d\d$/);
    const created = JSON.parse(
      run(
        [
          'call',
          'tickwork.admin.v1.SchedulerAdmin/CreateJob',
          '{"job": {"job_id": "readme-1", "schedule": {"cron": {"expression": "0 9 * * MON-FRI"}}, ' +
            '"target": {"webhook": {"url": "https://example.com/hook"}}, "labels": {"team": "docs"}}}',
        ],
        { TOKEN },
      ),
    ) as Record<string, unknown>;
    expect(created).toMatchObject({ job_id: 'readme-1', status: 'JOB_STATUS_SCHEDULED' });
    const got = JSON.parse(
      run(['call', 'tickwork.admin.v1.SchedulerAdmin/GetJob', '{"job_id": "readme-1"}'], { TOKEN }),
    ) as Record<string, unknown>;
    expect(got).toMatchObject({ job_id: 'readme-1', labels: { team: 'docs' } });
  });
});
