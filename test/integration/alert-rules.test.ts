/**
 * The Prometheus side of observability, checked by Prometheus's own tool: the alert rules parse
 * (`promtool check rules`), behave as their unit tests say (`promtool test rules`), the scrape
 * configs are valid, and every metric the rules and the Grafana dashboard query is one the apps
 * export (the telemetry lib's catalog), so a renamed metric cannot leave a silent alert behind.
 * Needs promtool (Debian's `prometheus` package; test/run installs it when it can).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { LATENESS_BUCKETS_SECONDS, METRIC_CATALOG } from '@tickwork/telemetry';

const ROOT = join(__dirname, '..', '..');
const PROMETHEUS_DIR = join(ROOT, 'infra', 'observability', 'prometheus');
const DASHBOARD = join(ROOT, 'infra', 'observability', 'grafana', 'dashboards', 'tickwork.json');

/** Runs promtool in the rules directory; fails the test with promtool's own words. */
function promtool(...args: string[]): string {
  const r = spawnSync('promtool', args, { cwd: PROMETHEUS_DIR, encoding: 'utf8' });
  if (r.error) throw new Error(`promtool is not installed (apt-get install prometheus): ${r.error.message}`);
  const output = `${r.stdout}${r.stderr}`;
  if (r.status !== 0) throw new Error(`promtool ${args.join(' ')} exited ${r.status}:\n${output}`);
  return output;
}

interface RuleFile {
  groups: {
    name: string;
    rules: {
      alert?: string;
      record?: string;
      expr: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    }[];
  }[];
}
const rules = parse(readFileSync(join(PROMETHEUS_DIR, 'alerts.yml'), 'utf8')) as RuleFile;
const allRules = rules.groups.flatMap((g) => g.rules);

interface Dashboard {
  panels: {
    id: number;
    type: string;
    title: string;
    datasource?: { uid?: string };
    targets?: { expr: string }[];
  }[];
}
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;

/** Metrics the apps export besides Tickwork's catalog: Prometheus's own and the runtime instrumentation's. */
const EXTERNAL = new Set(['up', 'nodejs_eventloop_delay_p99_seconds', 'v8js_memory_heap_used_bytes']);
const known = new Set([
  ...METRIC_CATALOG,
  ...EXTERNAL,
  ...allRules.flatMap((r) => (r.record ? [r.record] : [])),
]);

/** The metric names a PromQL expression selects (functions, keywords and label names excluded). */
function metricsIn(expr: string): string[] {
  const withoutStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\{[^}]*\}/g, '{}');
  const withoutGrouping = withoutStrings.replace(
    /\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g,
    '',
  );
  return [...withoutGrouping.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)]
    .map((m) => m[1]!)
    .filter((n) => /_|:/.test(n) && !/^\$/.test(n) && !['__rate_interval'].includes(n));
}

describe('alert rules and dashboard', () => {
  it('pass promtool check rules', () => {
    expect(promtool('check', 'rules', 'alerts.yml')).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('pass their promtool unit tests (alerts.test.yml)', () => {
    expect(promtool('test', 'rules', 'alerts.test.yml')).toMatch(/SUCCESS/);
  });

  it('load in both Prometheus configs (compose and local)', () => {
    expect(promtool('check', 'config', 'prometheus.yml')).toMatch(/SUCCESS: prometheus.yml is valid/);
    expect(promtool('check', 'config', 'prometheus.local.yml')).toMatch(
      /SUCCESS: prometheus.local.yml is valid/,
    );
  });

  it('cover what on-call needs: lateness burn, backlog, dead letters, outbox age, unowned shards, fire SLOs and dead jobs', () => {
    const alerts = allRules.flatMap((r) => (r.alert ? [r.alert] : []));
    expect(alerts).toEqual(
      expect.arrayContaining([
        'TickworkFireLatenessBudgetBurnFast',
        'TickworkFireLatenessBudgetBurnSlow',
        'TickworkDueBacklogGrowing',
        'TickworkDueJobsNotClaimed',
        'TickworkDeadLettersGrowing',
        'TickworkOutboxStuck',
        'TickworkShardUnowned',
        'TickworkNoSchedulerUp',
        'TickworkJobNotSucceeding',
        'TickworkOccurrencesMissed',
        'TickworkFiresLate',
      ]),
    );
    for (const r of allRules.filter((x) => x.alert)) {
      expect({ alert: r.alert, severity: r.labels?.severity }).toEqual({
        alert: r.alert,
        severity: expect.stringMatching(/^(page|ticket|warning)$/),
      });
      expect(r.annotations?.summary).toBeTruthy();
    }
  });

  it('query only metrics the apps export, and SLO bucket bounds the histograms have', () => {
    const used = [
      ...allRules.map((r) => r.expr),
      ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
    ];
    const unknown = [...new Set(used.flatMap(metricsIn))].filter((m) => !known.has(m));
    expect(unknown).toEqual([]);
    expect(used.flatMap(metricsIn).length).toBeGreaterThan(30);
    const bounds = allRules.flatMap((r) =>
      [...r.expr.matchAll(/le=~"(\d+(?:\.\d+)?)/g)].map((m) => Number(m[1])),
    );
    expect(bounds.length).toBeGreaterThan(0);
    for (const b of bounds) expect(LATENESS_BUCKETS_SECONDS).toContain(b);
  });

  it('has a dashboard whose panels all query the provisioned Prometheus', () => {
    const graphs = dashboard.panels.filter((p) => p.type !== 'row');
    expect(graphs.length).toBeGreaterThan(20);
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    for (const p of graphs) {
      expect({ title: p.title, uid: p.datasource?.uid }).toEqual({ title: p.title, uid: 'prometheus' });
      expect(p.targets?.length).toBeGreaterThan(0);
    }
    const titles = graphs.map((p) => p.title).join('\n');
    for (const topic of [
      /lateness p50 \/ p99/i,
      /throughput|per second/i,
      /backlog/i,
      /lag/i,
      /dead/i,
      /owned/i,
    ])
      expect(titles).toMatch(topic);
  });
});
