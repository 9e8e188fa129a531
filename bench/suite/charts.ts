/**
 * PNG charts: Vega-Lite specs compiled to Vega, rendered to SVG headless (no canvas), then to PNG
 * by resvg with the system's fonts (DejaVu Sans on this box).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import * as vega from 'vega';
import * as vl from 'vega-lite';
import type { SuiteResults } from './report';
import type { HerdResult } from './workloads';

async function renderPng(spec: vl.TopLevelSpec, file: string): Promise<void> {
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  const svg = await view.toSVG(2);
  view.finalize();
  const png = new Resvg(svg, {
    background: 'white',
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
  })
    .render()
    .asPng();
  writeFileSync(file, png);
}

const base = {
  $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
  width: 640,
  height: 320,
  config: { font: 'DejaVu Sans' },
} as const;

/** The run whose drain time is the median of the measured ones (the one the table quotes). */
function medianRun(runs: HerdResult[]): HerdResult | undefined {
  const m = runs.filter((r) => !r.warmup).sort((a, b) => (a.drainMs || Infinity) - (b.drainMs || Infinity));
  return m[Math.floor((m.length - 1) / 2)];
}

function cdfSpec(
  title: string,
  rows: { system: string; latenessMs: number; fraction: number }[],
): vl.TopLevelSpec {
  return {
    ...base,
    title: {
      text: title,
      subtitle: 'fraction of the herd started within x ms of T0 (log scale); further left is better',
    },
    data: { values: rows },
    mark: { type: 'line', point: true, interpolate: 'linear' },
    encoding: {
      x: {
        field: 'latenessMs',
        type: 'quantitative',
        scale: { type: 'log' },
        title: 'lateness (ms, handler start − T0)',
      },
      y: { field: 'fraction', type: 'quantitative', title: 'fraction executed', axis: { format: '%' } },
      color: {
        field: 'system',
        type: 'nominal',
        title: null,
        legend: { orient: 'bottom', columns: 2, labelLimit: 0 },
      },
    },
  };
}

export async function renderCharts(r: SuiteResults, dir: string, name: string): Promise<string[]> {
  const files: string[] = [];
  for (const size of ['small', 'large'] as const) {
    const rows = Object.entries(r.w2).flatMap(([system, e]) => {
      const run = size === 'small' ? medianRun(e.small) : e.large;
      return (run?.lateness.cdf ?? []).map(([latenessMs, fraction]) => ({
        system,
        latenessMs: Math.max(1, latenessMs),
        fraction,
      }));
    });
    if (rows.length === 0) continue;
    const n =
      size === 'small'
        ? r.w2[Object.keys(r.w2)[0]!]!.small[0]?.size
        : Object.values(r.w2).find((e) => e.large)?.large?.size;
    const file = `${name}-w2-herd-${size === 'small' ? 'small' : 'large'}.png`;
    await renderPng(
      cdfSpec(`W2 herd of ${n?.toLocaleString('en')} jobs due at T0: lateness CDF`, rows),
      join(dir, file),
    );
    files.push(file);
  }
  const steps = Object.entries(r.w3).flatMap(([system, s]) =>
    s.map((x) => ({
      system,
      target: x.targetPerSec,
      achieved: x.achievedPerSec,
      p99: x.lateness.p99,
      keptUp: x.keptUp,
    })),
  );
  if (steps.length) {
    const file = `${name}-w3-steps.png`;
    await renderPng(
      {
        ...base,
        title: {
          text: 'W3 sustained rate: executions/s achieved per step',
          subtitle:
            'faded bar = fell behind (missing work or p99 ≥ 1 s); steps after the first miss are not run',
        },
        data: { values: steps },
        mark: { type: 'bar' },
        encoding: {
          x: { field: 'target', type: 'ordinal', title: 'offered rate (jobs due per second)' },
          xOffset: { field: 'system' },
          y: { field: 'achieved', type: 'quantitative', title: 'executions per second' },
          color: {
            field: 'system',
            type: 'nominal',
            title: null,
            legend: { orient: 'bottom', columns: 2, labelLimit: 0 },
          },
          opacity: { condition: { test: 'datum.keptUp', value: 1 }, value: 0.3 },
        },
      },
      join(dir, file),
    );
    files.push(file);
  }
  return files;
}
