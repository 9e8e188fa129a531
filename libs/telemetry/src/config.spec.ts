import { ConfigError } from '@tickwork/config';
import { loadTelemetryConfig, tracingConfigured } from './config';

describe('telemetry configuration', () => {
  it('traces only when the standard variables name an exporter', () => {
    expect(tracingConfigured({})).toBe(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(
      true,
    );
    expect(tracingConfigured({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(
      tracingConfigured({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }),
    ).toBe(false);
    expect(tracingConfigured({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).toBe(false);
  });

  it('writes JSON by default and pretty lines under npm start, unless told otherwise', () => {
    expect(loadTelemetryConfig({}).logFormat).toBe('json');
    expect(loadTelemetryConfig({ npm_lifecycle_event: 'start' }).logFormat).toBe('pretty');
    expect(loadTelemetryConfig({ npm_lifecycle_event: 'start', TICKWORK_LOG_FORMAT: 'json' }).logFormat).toBe(
      'json',
    );
    expect(loadTelemetryConfig({ npm_lifecycle_event: 'test' }).logFormat).toBe('json');
  });

  it('names every bad variable', () => {
    expect(() =>
      loadTelemetryConfig({
        TICKWORK_LOG_LEVEL: 'loud',
        TICKWORK_LOG_FORMAT: 'xml',
        TICKWORK_CLUSTER_SAMPLE_MS: '5',
      }),
    ).toThrow(ConfigError);
    try {
      loadTelemetryConfig({
        TICKWORK_LOG_LEVEL: 'loud',
        TICKWORK_LOG_FORMAT: 'xml',
        TICKWORK_CLUSTER_SAMPLE_MS: '5',
      });
    } catch (e) {
      const problems = (e as ConfigError).problems.join('\n');
      expect(problems).toMatch(/TICKWORK_LOG_LEVEL/);
      expect(problems).toMatch(/TICKWORK_LOG_FORMAT/);
      expect(problems).toMatch(/TICKWORK_CLUSTER_SAMPLE_MS/);
    }
  });

  it('reads tenant label settings', () => {
    const c = loadTelemetryConfig({
      TICKWORK_METRICS_TOP_TENANTS: '5',
      TICKWORK_METRICS_TENANTS: 'acme, globex',
    });
    expect(c.metricsTopTenants).toBe(5);
    expect(c.metricsTenants).toEqual(['acme', 'globex']);
  });
});
