/**
 * docker-compose.yml cannot run here (no Docker), so this keeps it consistent by reading it:
 * services, ports, and the same Kafka/registry versions and broker settings as infra/stack.
 * Needs no running service.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const ROOT = join(__dirname, '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

type Service = {
  image?: string;
  build?: { context?: string; dockerfile?: string };
  command?: string[];
  ports?: string[];
  environment?: Record<string, string | number | boolean | null>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
};
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const service = (name: string): Service => {
  const s = services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};
const env = (name: string): Record<string, string> =>
  Object.fromEntries(Object.entries(service(name).environment ?? {}).map(([k, v]) => [k, String(v ?? '')]));

function pomProperty(path: string, property: string): string {
  const match = new RegExp(`<${property.replace(/\./g, '\\.')}>([^<]+)</`).exec(read(path));
  if (!match?.[1]) throw new Error(`${path} has no <${property}>`);
  return match[1].trim();
}
const KAFKA_VERSION = pomProperty('infra/kafka/pom.xml', 'kafka.version');
const REGISTRY_VERSION = pomProperty('infra/registry/pom.xml', 'registry.version');

/**
 * The broker settings infra/stack writes (the heredoc in write_kafka_config) for its one-broker
 * stack: node 1, internal topics at RF 1 / min ISR 1 (what $n, $rf and $isr are with one node).
 */
function stackBrokerSettings(): Map<string, string> {
  const script = read('infra/stack');
  const body = /cat >"\$dir\/server\.properties" <<EOF\n([\s\S]*?)\nEOF\n/.exec(script)?.[1];
  if (!body) throw new Error('could not find the server.properties heredoc in infra/stack');
  const oneNode: Record<string, string> = { $n: '1', $rf: '1', $isr: '1' };
  const settings = new Map<string, string>();
  for (const line of body.split('\n')) {
    const m = /^([a-z0-9.]+)=(.*)$/.exec(line.trim().replace(/\$(n|rf|isr)\b/g, (v) => oneNode[v]!));
    if (m?.[1] !== undefined && m[2] !== undefined) settings.set(m[1], m[2]);
  }
  return settings;
}
/** Where a local process and a container legitimately differ (addresses, paths, tuning). */
const LOCAL_ONLY = new Set([
  'controller.quorum.voters',
  'listeners',
  'advertised.listeners',
  'listener.security.protocol.map',
  'inter.broker.listener.name',
  'log.dirs',
  'num.network.threads',
  'num.io.threads',
  'num.recovery.threads.per.data.dir',
  'log.retention.hours',
  'log.segment.bytes',
]);
/** The apache/kafka image turns KAFKA_FOO_BAR into foo.bar. */
const envName = (property: string): string => `KAFKA_${property.toUpperCase().replace(/\./g, '_')}`;

describe('docker-compose.yml', () => {
  it('has the infrastructure, the three apps, Prometheus and Grafana', () => {
    expect(Object.keys(services).sort()).toEqual(
      ['api', 'executor', 'grafana', 'kafka', 'postgres', 'prometheus', 'registry', 'scheduler'].sort(),
    );
  });

  it('runs Prometheus on the config in infra/observability, scraping each app on the port it listens on', () => {
    const prometheus = service('prometheus');
    expect(prometheus.ports).toEqual(['127.0.0.1:9090:9090']);
    expect(prometheus.volumes).toContain('./infra/observability/prometheus:/etc/prometheus:ro');
    expect(prometheus.command).toContain('--config.file=/etc/prometheus/prometheus.yml');
    const config = parse(read('infra/observability/prometheus/prometheus.yml')) as {
      rule_files: string[];
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    expect(config.rule_files).toEqual(['alerts.yml']);
    expect(existsSync(join(ROOT, 'infra/observability/prometheus/alerts.yml'))).toBe(true);
    const targets = Object.fromEntries(
      config.scrape_configs.map((c) => [c.job_name, c.static_configs.flatMap((s) => s.targets)]),
    );
    const port = {
      api: 'TICKWORK_API_PORT',
      scheduler: 'TICKWORK_SCHEDULER_PORT',
      executor: 'TICKWORK_EXECUTOR_PORT',
    };
    for (const app of ['api', 'scheduler', 'executor'] as const) {
      expect(targets[`tickwork-${app}`]).toEqual([`${app}:${env(app)[port[app]]}`]);
      // Reachable from the Prometheus container, not only on the app container's loopback.
      expect(env(app).TICKWORK_API_HOST).toBe('0.0.0.0');
    }
  });

  it('runs Grafana with the Prometheus data source and the Tickwork dashboard provisioned', () => {
    const grafana = service('grafana');
    expect(grafana.ports).toEqual(['127.0.0.1:3030:3000']);
    expect(grafana.volumes).toEqual(
      expect.arrayContaining([
        './infra/observability/grafana/provisioning:/etc/grafana/provisioning:ro',
        './infra/observability/grafana/dashboards:/var/lib/grafana/dashboards:ro',
      ]),
    );
    const datasources = parse(
      read('infra/observability/grafana/provisioning/datasources/prometheus.yml'),
    ) as {
      datasources: { uid: string; type: string; url: string }[];
    };
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ uid: 'prometheus', type: 'prometheus', url: 'http://prometheus:9090' }),
    ]);
    const providers = parse(read('infra/observability/grafana/provisioning/dashboards/tickwork.yml')) as {
      providers: { options: { path: string } }[];
    };
    expect(providers.providers[0]?.options.path).toBe('/var/lib/grafana/dashboards');
    const dashboard = JSON.parse(read('infra/observability/grafana/dashboards/tickwork.json')) as {
      uid: string;
      panels: { datasource?: { uid?: string } }[];
    };
    expect(dashboard.uid).toBe('tickwork-overview');
    expect(
      dashboard.panels.filter((p) => p.datasource).every((p) => p.datasource?.uid === 'prometheus'),
    ).toBe(true);
    expect(env('grafana').GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe(
      '/var/lib/grafana/dashboards/tickwork.json',
    );
  });

  it('runs the same Kafka version as infra/stack, in KRaft mode, with the same broker settings', () => {
    expect(service('kafka').image).toBe(`apache/kafka:${KAFKA_VERSION}`);
    expect(service('kafka').ports).toContain('127.0.0.1:9092:9092');
    const kafka = env('kafka');
    expect(kafka.KAFKA_PROCESS_ROLES).toBe('broker,controller');
    expect(kafka.CLUSTER_ID).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/); // a Kafka Uuid

    const settings = stackBrokerSettings();
    for (const required of [
      'offsets.topic.replication.factor',
      'transaction.state.log.replication.factor',
      'transaction.state.log.min.isr',
      'group.initial.rebalance.delay.ms',
      'auto.create.topics.enable',
      'num.partitions',
    ]) {
      expect(settings.has(required)).toBe(true);
    }
    expect(settings.get('auto.create.topics.enable')).toBe('false');
    expect(settings.get('group.initial.rebalance.delay.ms')).toBe('0');
    for (const [property, value] of settings) {
      if (LOCAL_ONLY.has(property)) continue;
      expect({ property, value: kafka[envName(property)] }).toEqual({ property, value });
    }
  });

  it('advertises the broker address the apps use, and 127.0.0.1:9092 to the host', () => {
    const advertised = env('kafka').KAFKA_ADVERTISED_LISTENERS ?? '';
    for (const app of ['api', 'scheduler', 'executor']) {
      expect(advertised).toContain(`://${env(app).KAFKA_BROKERS}`);
    }
    expect(advertised).toContain('://127.0.0.1:9092');
  });

  it('runs the same Apicurio Registry version on PostgreSQL, published on 8081', () => {
    const registry = service('registry');
    expect(registry.image).toBe(`apicurio/apicurio-registry:${REGISTRY_VERSION}`);
    expect(registry.ports).toContain('127.0.0.1:8081:8080');
    const e = env('registry');
    expect(e.APICURIO_STORAGE_KIND).toBe('sql');
    expect(e.APICURIO_STORAGE_SQL_KIND).toBe('postgresql');
    expect(e.APICURIO_DATASOURCE_URL).toBe('jdbc:postgresql://postgres:5432/tickwork_registry');
    // infra/stack uses the same database name and storage kind.
    const stack = read('infra/stack');
    expect(stack).toContain('REGISTRY_DB="${REGISTRY_DB:-tickwork_registry}"');
    expect(stack).toContain('APICURIO_STORAGE_SQL_KIND=postgresql');
  });

  it('runs PostgreSQL 15 with the databases infra/stack creates', () => {
    expect(service('postgres').image).toBe('postgres:15');
    expect(env('postgres').POSTGRES_DB).toBe('tickwork');
    const init = service('postgres').volumes?.find((v) => v.includes('docker-entrypoint-initdb.d'));
    expect(init).toBeDefined();
    const initFile = init!.split(':')[0]!;
    expect(existsSync(join(ROOT, initFile))).toBe(true);
    const sql = read(initFile);
    expect(sql).toMatch(/CREATE DATABASE tickwork_test/);
    expect(sql).toMatch(/CREATE DATABASE tickwork_registry/);
  });

  it.each(['api', 'scheduler', 'executor'])(
    'builds %s from infra/Dockerfile and points it at the stack',
    (app) => {
      const s = service(app);
      expect(s.build).toEqual({ context: '.', dockerfile: 'infra/Dockerfile' });
      // The executor gets a bigger young generation, as infra/start gives it (docs/executor.md).
      const flags = app === 'executor' ? ['--max-semi-space-size=32'] : [];
      expect(s.command).toEqual(['node', ...flags, `dist/apps/${app}/src/main.js`]);
      expect(existsSync(join(ROOT, 'apps', app, 'src', 'main.ts'))).toBe(true);
      const e = env(app);
      expect(e.KAFKA_BROKERS).toBe('kafka:19092');
      expect(e.SCHEMA_REGISTRY_URL).toBe('http://registry:8080/apis/ccompat/v7');
      expect(e.DATABASE_URL).toBe('postgres://postgres@postgres:5432/tickwork');
      expect(Object.keys(s.depends_on ?? {}).sort()).toEqual(['kafka', 'postgres', 'registry']);
    },
  );

  it('publishes the REST API on 3000', () => {
    expect(service('api').ports).toEqual(['127.0.0.1:3000:3000']);
    expect(env('api').TICKWORK_API_PORT).toBe('3000');
  });

  it('has a Dockerfile that installs with npm ci and builds on Node 20', () => {
    const dockerfile = read('infra/Dockerfile');
    expect(dockerfile).toMatch(/^FROM node:20\b/m);
    expect(dockerfile).toMatch(/npm ci\b/);
    expect(dockerfile).toMatch(/npm run build\b/);
  });
});
