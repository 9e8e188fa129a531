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
import { medianRun } from './workloads';

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

const PALETTE = ['#4c78a8', '#f58518', '#e45756', '#72b7b2', '#54a24b', '#eeca3b', '#b279a2', '#ff9da6'];
/** One colour per system across every chart (its place in the results), legend only for those drawn. */
const colour = (all: string[], drawn: { system: string }[]) => {
  const shown = all.filter((s) => drawn.some((d) => d.system === s));
  return {
    field: 'system',
    type: 'nominal' as const,
    title: null,
    scale: { domain: shown, range: shown.map((s) => PALETTE[all.indexOf(s) % PALETTE.length]!) },
    legend: { orient: 'bottom' as const, columns: 2, labelLimit: 0 },
  };
};
const offeredRate = {
  field: 'target',
  type: 'ordinal' as const,
  title: 'offered rate (jobs due per second)',
  axis: { labelAngle: 0 },
};

function cdfSpec(
  title: string,
  rows: { system: string; latenessMs: number; fraction: number }[],
  systems: string[],
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
      color: colour(systems, rows),
    },
  };
}

export async function renderCharts(r: SuiteResults, dir: string, name: string): Promise<string[]> {
  const files: string[] = [];
  const systems = Object.keys(r.contenders);
  for (const size of ['small', 'large'] as const) {
    const runs = Object.entries(r.w2).map(([system, e]) => ({
      system,
      run: size === 'small' ? medianRun(e.small) : e.large,
    }));
    const rows = runs.flatMap(({ system, run }) =>
      (run?.lateness.cdf ?? []).map(([latenessMs, fraction]) => ({
        system,
        latenessMs: Math.max(1, latenessMs),
        fraction,
      })),
    );
    if (rows.length === 0) continue;
    const n = runs.find((x) => x.run)?.run?.size ?? 0;
    const file = `${name}-w2-herd-${size}.png`;
    await renderPng(
      cdfSpec(`W2 herd of ${n.toLocaleString('en')} jobs due at T0: lateness CDF`, rows, systems),
      join(dir, file),
    );
    files.push(file);
  }
  const steps = Object.entries(r.w3).flatMap(([system, s]) =>
    s.map((x) => ({
      system,
      target: x.targetPerSec,
      achieved: x.achievedPerSec,
      p99: Math.max(1, x.lateness.p99),
      keptUp: x.keptUp,
    })),
  );
  if (steps.length === 0) return files;
  const stepsFile = `${name}-w3-steps.png`;
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
        x: offeredRate,
        xOffset: { field: 'system' },
        y: { field: 'achieved', type: 'quantitative', title: 'executions per second' },
        color: colour(systems, steps),
        opacity: { condition: { test: 'datum.keptUp', value: 1 }, value: 0.3 },
      },
    },
    join(dir, stepsFile),
  );
  files.push(stepsFile);
  const p99File = `${name}-w3-p99.png`;
  await renderPng(
    {
      ...base,
      title: {
        text: 'W3 sustained rate: p99 lateness per step',
        subtitle: 'log scale; a step is kept up only under the dashed line (1 s)',
      },
      layer: [
        {
          data: { values: steps },
          mark: { type: 'line', point: { size: 80 } },
          encoding: {
            x: offeredRate,
            y: { field: 'p99', type: 'quantitative', scale: { type: 'log' }, title: 'p99 lateness (ms)' },
            color: colour(systems, steps),
          },
        },
        {
          data: { values: [{ limit: 1000 }] },
          mark: { type: 'rule', strokeDash: [6, 4], color: 'black' },
          encoding: { y: { field: 'limit', type: 'quantitative' } },
        },
      ],
    },
    join(dir, p99File),
  );
  files.push(p99File);
  return files;
}
