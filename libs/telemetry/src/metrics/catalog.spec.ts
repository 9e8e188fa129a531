import { METRIC_CATALOG, METRIC_SPECS, METRICS } from './index';
import { prometheusSeries } from './spec';

describe('the metric declarations', () => {
  it('declare each metric once, with help, and buckets for every histogram', () => {
    const names = METRIC_SPECS.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    for (const s of METRIC_SPECS) {
      expect({ name: s.name, help: s.help.length > 10 }).toEqual({ name: s.name, help: true });
      if (s.kind === 'histogram')
        expect({ name: s.name, buckets: s.buckets?.length }).not.toEqual({
          name: s.name,
          buckets: undefined,
        });
    }
  });

  it('name Prometheus series by kind and unit', () => {
    expect(prometheusSeries({ name: 'tickwork.fires.claimed', kind: 'counter', help: 'x' })).toEqual([
      'tickwork_fires_claimed_total',
    ]);
    expect(
      prometheusSeries({ name: 'tickwork.target.duration_seconds', kind: 'histogram', unit: 's', help: 'x' }),
    ).toEqual([
      'tickwork_target_duration_seconds_bucket',
      'tickwork_target_duration_seconds_sum',
      'tickwork_target_duration_seconds_count',
    ]);
    expect(prometheusSeries({ name: 'tickwork.job.interval', kind: 'gauge', unit: 's', help: 'x' })).toEqual([
      'tickwork_job_interval_seconds',
    ]);
  });

  it('list every declared metric in the catalog and the name map', () => {
    expect(METRIC_CATALOG).toEqual(METRIC_SPECS.flatMap(prometheusSeries));
    expect(Object.values(METRICS).sort()).toEqual(METRIC_SPECS.map((s) => s.name).sort());
    expect(METRIC_CATALOG).toContain('tickwork_fire_start_lateness_seconds_bucket');
  });
});
