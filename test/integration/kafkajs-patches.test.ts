/**
 * The kafkajs patches take effect in the apps' runtime: in a fresh Node process running the built
 * messaging lib (as the apps do; jest's module registry has no require.cache to stand modules in),
 * importing the lib patches nothing, and createKafkaBus installs every patch before kafkajs loads.
 * A process that loads kafkajs first is reported honestly: its stand-ins did not take effect.
 * Needs `npm run build` (npm test builds first).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { KAFKAJS_VERSION } from '@tickwork/messaging';

const REPO = path.resolve(__dirname, '../..');
const MESSAGING = path.join(REPO, 'dist/libs/messaging/src');

interface Probe {
  readonly reportAtImport: unknown;
  readonly report: { kafkajsVersion: string; applied: Record<string, boolean> };
  readonly patches: readonly string[];
  readonly standIns: Record<string, boolean>;
  readonly logged: readonly string[];
}

/** Runs the built lib in a child process; `loadKafkajsFirst` requires kafkajs before the lib. */
function probe(loadKafkajsFirst: boolean): Probe {
  const script = `
    if (${loadKafkajsFirst}) require('kafkajs');
    const m = require(${JSON.stringify(MESSAGING)});
    const reportAtImport = m.kafkajsPatchReport() ?? null;
    const logged = [];
    m.createKafkaBus({ brokers: ['127.0.0.1:1'], clientId: 'patch-probe', ssl: false, sasl: null },
      (level, message) => logged.push(level + ' ' + message));
    m.createKafkaBus({ brokers: ['127.0.0.1:1'], clientId: 'patch-probe-2', ssl: false, sasl: null },
      (level, message) => logged.push(level + ' ' + message));
    const k = ${JSON.stringify(MESSAGING)} + '/kafkajs/';
    const standIns = {
      'request-framing': require('kafkajs/src/protocol/request') === require(k + 'request-framing').frameRequest,
      'record-decoding': require('kafkajs/src/protocol/recordBatch/record/v0/decoder') === require(k + 'record-decoder').decodeRecord,
    };
    process.stdout.write(JSON.stringify({ reportAtImport, report: m.kafkajsPatchReport(), patches: m.KAFKAJS_PATCHES, standIns, logged }));
  `;
  return JSON.parse(
    execFileSync(process.execPath, ['-e', script], { cwd: REPO, encoding: 'utf8', timeout: 60_000 }),
  ) as Probe;
}

describe('kafkajs patches', () => {
  it('are written against the kafkajs release package.json pins, and that release is installed', () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(pkg.dependencies['kafkajs']).toBe(KAFKAJS_VERSION);
    const installed = JSON.parse(
      readFileSync(path.join(REPO, 'node_modules/kafkajs/package.json'), 'utf8'),
    ) as {
      version: string;
    };
    expect(installed.version).toBe(KAFKAJS_VERSION);
  });

  it('are installed by createKafkaBus, not on import, and every one takes effect', () => {
    const p = probe(false);
    expect(p.reportAtImport).toBeNull();
    expect(p.patches.length).toBeGreaterThanOrEqual(9);
    const missed = p.patches.filter((name) => p.report.applied[name] !== true);
    expect(missed).toEqual([]);
    expect(p.standIns).toEqual({ 'request-framing': true, 'record-decoding': true });
    // Logged once per process, however many buses it opens.
    expect(p.logged).toEqual([
      `info kafkajs ${p.report.kafkajsVersion}: all ${p.patches.length} patches took effect`,
    ]);
  });

  it('reports the stand-ins that could not take effect when kafkajs was loaded first', () => {
    const p = probe(true);
    expect(p.report.applied['request-framing']).toBe(false);
    expect(p.report.applied['partition-grouping']).toBe(false);
    expect(p.standIns['request-framing']).toBe(false);
    expect(p.logged).toHaveLength(1);
    expect(p.logged[0]).toMatch(/^warn kafkajs .*request-framing, partition-grouping did not take effect/);
  });
});
