/**
 * The Kubernetes manifests under infra/k8s: every document validates against the Kubernetes API's
 * JSON schemas (core API from the npm package kubernetes-models, the KEDA and Prometheus-operator
 * CRDs from @kubernetes-models/keda and /prometheus-operator; offline, through
 * infra/k8s/validate.mjs, which operators run too), and the manifests agree with the code: probe
 * paths are routes of the app the container runs, ports are the ports the app is told to listen
 * on, every variable is one the code reads, the ConfigMap passes Tickwork's own config validation,
 * grace periods cover the drain, and the autoscaler watches the executor group's real topic.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { ConfigError, loadApiListenConfig, loadConfig, loadTenants } from '@tickwork/config';

const ROOT = join(__dirname, '..', '..');
const K8S = join(ROOT, 'infra', 'k8s');
const run = promisify(execFile);

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Result {
  file: string;
  index: number;
  kind?: string;
  name?: string;
  errors: string[];
}

async function validate(files: string[] = []): Promise<{ code: number; results: Result[] }> {
  try {
    const { stdout } = await run('node', [join(K8S, 'validate.mjs'), '--json', ...files], { cwd: ROOT });
    return { code: 0, results: JSON.parse(stdout) as Result[] };
  } catch (e) {
    const err = e as { code: number; stdout: string };
    return { code: err.code, results: JSON.parse(err.stdout) as Result[] };
  }
}

const kustomization = parseAllDocuments(readFileSync(join(K8S, 'kustomization.yaml'), 'utf8'))[0]!.toJS() as {
  resources: string[];
};
const docs: Obj[] = kustomization.resources.flatMap((f) =>
  parseAllDocuments(readFileSync(join(K8S, f), 'utf8')).map((d) => d.toJS() as Obj),
);
const all = (kind: string) => docs.filter((d) => d.kind === kind);
const one = (kind: string, name: string): Obj => {
  const found = docs.find((d) => d.kind === kind && d.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in infra/k8s`);
  return found;
};
const configMap = one('ConfigMap', 'tickwork-config').data as Record<string, string>;
const secretData = (name: string) => one('Secret', name).stringData as Record<string, string>;

/** A container's environment as the pod sees it: envFrom ConfigMaps/Secrets, then env values. */
function containerEnv(c: Obj): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, one('ConfigMap', from.configMapRef.name).data);
    if (from.secretRef) Object.assign(env, secretData(from.secretRef.name));
  }
  // A field reference (the pod's name) as Kubernetes fills it in: a Deployment pod's name.
  for (const e of c.env ?? [])
    env[e.name] = e.value ?? (e.valueFrom?.fieldRef ? 'tickwork-executor-7d9f8b6c5d-x2k4q' : '');
  return env;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))
    .map((f) => join(dir, f));
}

/** HTTP GET routes an app serves: its own controllers plus the shared MetricsController it mounts. */
function routesOf(app: string): Set<string> {
  const routes = new Set<string>();
  const files = [
    ...sourceFiles(join(ROOT, 'apps', app, 'src')),
    join(ROOT, 'libs/runtime/src/metrics-controller.ts'),
  ];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    // Each controller's prefix applies to the @Get routes after it, up to the next controller.
    for (const part of text.split(/(?=@Controller\()/)) {
      const prefix = /^@Controller\((?:'([^']*)')?\)/.exec(part);
      if (!prefix) continue;
      for (const m of part.matchAll(/@Get\((?:'([^']*)')?\)/g))
        routes.add(`/${[prefix[1], m[1]].filter(Boolean).join('/')}`);
    }
  }
  return routes;
}

/** Every environment variable name the code refers to (a quoted literal, or `env.NAME`). */
const knownVariables = new Set(
  [...sourceFiles(join(ROOT, 'libs')), ...sourceFiles(join(ROOT, 'apps'))].flatMap((f) =>
    [...readFileSync(f, 'utf8').matchAll(/(?:['"`]|\benv\.)([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b/g)].map(
      (m) => m[1]!,
    ),
  ),
);
// Read by the OpenTelemetry SDK itself (docs/observability.md), not by Tickwork's code.
const sdkVariables = /^OTEL_/;

const deployments = all('Deployment');
const appOf = (d: Obj) =>
  /dist\/apps\/([a-z]+)\/src\/main\.js/.exec(d.spec.template.spec.containers[0].command.join(' '))![1]!;

describe('Kubernetes manifests (infra/k8s)', () => {
  it('lists every manifest file in kustomization.yaml', () => {
    const files = readdirSync(K8S).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });

  it('validates every document against the Kubernetes and CRD schemas', async () => {
    const { code, results } = await validate();
    expect(results.filter((r) => r.errors.length > 0)).toEqual([]);
    expect(code).toBe(0);
    const kinds = results.map((r) => r.kind).sort();
    for (const kind of [
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      'ScaledObject',
      'Secret',
      'Service',
      'ServiceMonitor',
    ])
      expect(kinds).toContain(kind);
    expect(
      results
        .filter((r) => r.kind === 'Deployment')
        .map((r) => r.name)
        .sort(),
    ).toEqual(['tickwork-api', 'tickwork-executor', 'tickwork-scheduler']);
  });

  it('the validator refuses broken documents and names the bad path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tickwork-k8s-'));
    try {
      const file = join(dir, 'broken.yaml');
      writeFileSync(
        file,
        [
          'apiVersion: apps/v1',
          'kind: Deployment',
          'metadata: { name: x }',
          'spec:',
          '  selector: { matchLabels: { a: b } }',
          '  template:',
          '    metadata: { labels: { a: b } }',
          '    spec:',
          "      containers: [{ name: x, image: y, ports: [{ containerPort: 'http' }] }]",
          '---',
          'apiVersion: keda.sh/v1alpha1',
          'kind: ScaledObject',
          'metadata: { name: x }',
          'spec:',
          '  scaleTargetRef: { name: x }',
          '  triggers: [{ type: kafka, metadata: { lagThreshold: 5 } }]',
          '---',
          'apiVersion: monitoring.coreos.com/v1',
          'kind: ServiceMonitor',
          'metadata: { name: x }',
          'spec: { selector: {}, endpoints: { port: http } }',
          '---',
          'apiVersion: v1',
          'kind: Service',
          'metadata: { name: x }',
          "spec: { ports: [{ port: '80' }] }",
        ].join('\n'),
      );
      const { code, results } = await validate([file]);
      expect(code).toBe(1);
      expect(results.map((r) => [r.kind, r.errors.join('; ')])).toEqual([
        [
          'Deployment',
          expect.stringContaining('/spec/template/spec/containers/0/ports/0/containerPort must be integer'),
        ],
        ['ScaledObject', expect.stringContaining('/spec/triggers/0/metadata/lagThreshold must be string')],
        ['ServiceMonitor', expect.stringContaining('/spec/endpoints must be array')],
        ['Service', expect.stringContaining('/spec/ports/0/port must be integer')],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the ConfigMap and Secrets pass Tickwork’s own config validation', () => {
    const env = {
      ...configMap,
      ...secretData('tickwork-database'),
      ...secretData('tickwork-webhook-signing'),
    };
    const config = loadConfig(env);
    expect(config.topicReplicationFactor).toBe(3);
    expect(config.topicMinInsyncReplicas).toBe(2);
    expect(config.api.host).toBe('0.0.0.0');
    for (const d of deployments) {
      const podEnv = containerEnv(d.spec.template.spec.containers[0]);
      expect(() => loadConfig(podEnv)).not.toThrow();
    }
    expect(() =>
      loadApiListenConfig(containerEnv(one('Deployment', 'tickwork-api').spec.template.spec.containers[0])),
    ).not.toThrow();
  });

  it('the shipped tenants Secret is a placeholder the API refuses until real token hashes are in it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tickwork-k8s-'));
    try {
      const file = join(dir, 'tenants.yaml');
      writeFileSync(file, secretData('tickwork-tenants')['tenants.yaml']!);
      expect(() => loadTenants({ TICKWORK_TENANTS_FILE: file, TICKWORK_AUTH: 'required' })).toThrow(
        ConfigError,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const api = one('Deployment', 'tickwork-api').spec.template.spec;
    const mount = api.containers[0].volumeMounts.find((m: Obj) => m.name === 'tenants');
    expect(api.volumes.find((v: Obj) => v.name === 'tenants').secret.secretName).toBe('tickwork-tenants');
    expect(containerEnv(api.containers[0]).TICKWORK_TENANTS_FILE).toBe(`${mount.mountPath}/tenants.yaml`);
  });

  it('every variable set in the manifests is one the code reads', () => {
    const names = new Set<string>(Object.keys(configMap));
    for (const s of ['tickwork-database', 'tickwork-webhook-signing'])
      for (const k of Object.keys(secretData(s))) names.add(k);
    for (const d of deployments)
      for (const e of d.spec.template.spec.containers[0].env ?? []) names.add(e.name);
    const unknown = [...names].filter((n) => !knownVariables.has(n) && !sdkVariables.test(n));
    expect(unknown).toEqual([]);
  });

  it.each(deployments.map((d) => [d.metadata.name as string, d]))(
    '%s: probes hit the app’s routes on the port it listens on; selectors match; grace covers the shutdown',
    (_name, d: Obj) => {
      const app = appOf(d);
      const pod = d.spec.template.spec;
      const [c] = pod.containers;
      const env = containerEnv(c);
      const config = loadConfig(env);
      const routes = routesOf(app);
      const listenPort = {
        api: config.api.port,
        scheduler: config.http.schedulerPort,
        executor: config.http.executorPort,
      }[app];
      expect(listenPort).toBeDefined();
      const ports = new Map<string, number>(c.ports.map((p: Obj) => [p.name, p.containerPort]));
      expect(ports.get('http')).toBe(listenPort);
      if (app === 'api') expect(ports.get('grpc')).toBe(loadApiListenConfig(env).grpc.port);
      for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
        const get = c[probe]?.httpGet;
        expect(get).toBeDefined();
        expect(routes).toContain(get.path);
        expect(ports.has(get.port)).toBe(true);
      }
      expect(c.livenessProbe.httpGet.path).toBe('/health/live');
      expect(c.readinessProbe.httpGet.path).toBe('/health/ready');
      expect(routes).toContain('/metrics');
      expect(env.TICKWORK_API_HOST).toBe('0.0.0.0');
      for (const [k, v] of Object.entries(d.spec.selector.matchLabels))
        expect(d.spec.template.metadata.labels[k]).toBe(v);
      expect(c.resources.requests.cpu).toBeDefined();
      expect(c.resources.requests.memory).toBeDefined();
      expect(c.resources.limits.memory).toBeDefined();
      // The grace period covers what the app does after SIGTERM, with a margin of 15 s.
      const preStopS = Number(c.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
      const shutdownS = {
        api: loadApiListenConfig(env).defaultDeadlineMs / 1000,
        scheduler: 0,
        executor: config.executor.drainMs / 1000,
      }[app]!;
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(
        preStopS + shutdownS + (app === 'api' ? 5 : 15),
      );
      // A PodDisruptionBudget selects exactly this Deployment's pods.
      const pdb = all('PodDisruptionBudget').filter((p) =>
        Object.entries(p.spec.selector.matchLabels as Record<string, string>).every(
          ([k, v]) => d.spec.template.metadata.labels[k] === v,
        ),
      );
      expect(pdb).toHaveLength(1);
      // A Service with the same http port name, which the ServiceMonitor scrapes.
      const svc = all('Service').find((s) =>
        Object.entries(s.spec.selector as Record<string, string>).every(
          ([k, v]) => d.spec.template.metadata.labels[k] === v,
        ),
      );
      expect(svc?.spec.ports.map((p: Obj) => p.targetPort)).toContain('http');
    },
  );

  it('executors use their pod name as static member name', () => {
    const c = one('Deployment', 'tickwork-executor').spec.template.spec.containers[0];
    const member = c.env.find((e: Obj) => e.name === 'TICKWORK_EXECUTOR_MEMBER_NAME');
    expect(member.valueFrom.fieldRef.fieldPath).toBe('metadata.name');
  });

  it('the ServiceMonitor scrapes /metrics on the http port of every Tickwork Service', () => {
    const [sm] = all('ServiceMonitor');
    const selector = sm!.spec.selector.matchLabels as Record<string, string>;
    const services = all('Service').filter((s) =>
      Object.entries(selector).every(([k, v]) => s.metadata.labels[k] === v),
    );
    expect(services.map((s) => s.metadata.name).sort()).toEqual([
      'tickwork-api',
      'tickwork-executor',
      'tickwork-scheduler',
    ]);
    for (const s of services)
      expect(s.spec.ports.map((p: Obj) => p.name)).toContain(sm!.spec.endpoints[0].port);
    expect(sm!.spec.endpoints[0].path).toBe('/metrics');
  });

  it('KEDA scales the executor Deployment on the lag of the executor group on the fires topic', () => {
    const config = loadConfig({ ...configMap, ...secretData('tickwork-database') });
    const [so] = all('ScaledObject');
    expect(so!.spec.scaleTargetRef).toEqual(
      expect.objectContaining({ kind: 'Deployment', name: 'tickwork-executor' }),
    );
    const [trigger, ...others] = so!.spec.triggers as Obj[];
    expect(others).toEqual([]);
    expect(trigger!.type).toBe('kafka');
    expect(trigger!.metadata.bootstrapServers).toBe(configMap.KAFKA_BROKERS);
    expect(trigger!.metadata.consumerGroup).toBe(config.executor.groupId);
    expect(trigger!.metadata.consumerGroup).toBe('tickwork.executor');
    expect(trigger!.metadata.topic).toBe(config.topics.fires);
    expect(so!.spec.maxReplicaCount).toBeLessThanOrEqual(config.firesPartitions);
    expect(so!.spec.minReplicaCount).toBeGreaterThanOrEqual(2);
  });
});
