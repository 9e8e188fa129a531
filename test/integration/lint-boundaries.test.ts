/**
 * The import boundaries in eslint.config.mjs can fail: ESLint's Node API lints a small fixture
 * tree (libs/ and apps/ in a temp dir) with the repository's own boundary rules, and each
 * forbidden import is rejected by the rule meant for it while an allowed one passes. ESLint runs
 * in a child Node process: it loads its config as an ES module, which jest's module system cannot.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const REPO = path.resolve(__dirname, '../..');

interface LintedFile {
  readonly file: string;
  readonly messages: readonly { ruleId: string | null; message: string }[];
}

interface LintRun {
  readonly results: readonly LintedFile[];
  readonly debts: readonly { lib: string; imports: string; why: string }[];
  readonly realConfigRules: readonly string[];
}

/** Lints every .ts file under `root` with the boundary rules built for `root`. */
function lintFixtures(root: string): LintRun {
  const script = `
    import { pathToFileURL } from 'node:url';
    import { ESLint } from 'eslint';
    import tseslint from 'typescript-eslint';
    const [repo, root] = process.argv.slice(1);
    const cfg = await import(pathToFileURL(repo + '/eslint.config.mjs').href);
    const eslint = new ESLint({
      cwd: root,
      overrideConfigFile: true,
      overrideConfig: [
        { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } },
        ...cfg.boundaryConfigs(root),
      ],
    });
    const results = (await eslint.lintFiles(['**/*.ts'])).map((r) => ({
      file: r.filePath.slice(root.length + 1),
      messages: r.messages.map(({ ruleId, message }) => ({ ruleId, message })),
    }));
    const realConfigRules = [...new Set(cfg.default.flatMap((c) => Object.keys(c.rules ?? {})))];
    process.stdout.write(JSON.stringify({ results, debts: cfg.BOUNDARY_DEBTS, realConfigRules }));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, REPO, root], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 90_000,
  });
  return JSON.parse(out) as LintRun;
}

const FIXTURES: Record<string, string> = {
  // import-x looks for the package a file belongs to.
  'package.json': JSON.stringify({ name: 'lint-fixtures', private: true }),
  'tsconfig.json': JSON.stringify({
    compilerOptions: {
      baseUrl: '.',
      paths: Object.fromEntries(
        ['domain', 'store', 'scheduling', 'messaging', 'jobs'].map((l) => [
          `@tickwork/${l}`,
          [`libs/${l}/src`],
        ]),
      ),
    },
  }),
  'libs/domain/src/index.ts': 'export const domain = 1;\n',
  'libs/messaging/src/index.ts': "import { Kafka } from 'kafkajs';\nexport const bus = Kafka;\n",
  'libs/store/src/index.ts':
    "import { Pool } from 'pg';\nexport { fireRepository } from './repositories/fire.repository';\nexport const pool = Pool;\n",
  'libs/store/src/repositories/fire.repository.ts': 'export const fireRepository = 1;\n',
  'libs/jobs/src/index.ts': 'export const jobs = 1;\n',
  'apps/scheduler/src/scheduler.service.ts': 'export const service = 1;\n',
  // Allowed: the lib's own files relatively, a lib in its row through the index.
  'libs/scheduling/src/allowed.ts':
    "import { domain } from '@tickwork/domain';\nimport { bus } from '@tickwork/messaging';\nimport { b } from './sub/b';\nexport const ok = [domain, bus, b];\n",
  'libs/scheduling/src/sub/b.ts': "import { domain } from '@tickwork/domain';\nexport const b = domain;\n",
  'libs/scheduling/src/imports-pg.ts': "import { Pool } from 'pg';\nexport const p = Pool;\n",
  'libs/scheduling/src/imports-kafkajs.ts': "import { Kafka } from 'kafkajs';\nexport const k = Kafka;\n",
  'libs/scheduling/src/imports-nest.ts':
    "import { Injectable } from '@nestjs/common';\nexport const i = Injectable;\n",
  'libs/runtime/src/imports-nest.ts':
    "import { Controller } from '@nestjs/common';\nexport const c = Controller;\n",
  'libs/scheduling/src/relative-lib.ts':
    "import { fireRepository } from '../../store/src/repositories/fire.repository';\nexport const r = fireRepository;\n",
  'libs/scheduling/src/relative-lib-index.ts':
    "import { pool } from '../../store/src';\nexport const r = pool;\n",
  'libs/scheduling/src/relative-app.ts':
    "import { service } from '../../../apps/scheduler/src/scheduler.service';\nexport const s = service;\n",
  'libs/scheduling/src/outside-row.ts': "import { jobs } from '@tickwork/jobs';\nexport const j = jobs;\n",
  'libs/scheduling/src/deep-import.ts':
    "import { fireRepository } from '@tickwork/store/repositories/fire.repository';\nexport const d = fireRepository;\n",
  'libs/scheduling/src/cycle-a.ts': "import { b } from './cycle-b';\nexport const a = (): number => b();\n",
  'libs/scheduling/src/cycle-b.ts': "import { a } from './cycle-a';\nexport const b = (): number => a();\n",
  'libs/domain/src/imports-store.ts': "import { pool } from '@tickwork/store';\nexport const p = pool;\n",
  // libs/jobs owns its store ports: the store is outside its row, with no debt to excuse it.
  'libs/jobs/src/imports-store.ts': "import { pool } from '@tickwork/store';\nexport const p = pool;\n",
  'libs/scheduling/src/imports-store.ts': "import { pool } from '@tickwork/store';\nexport const p = pool;\n",
  'libs/domain/src/imports-node.ts':
    "import { readFileSync } from 'node:fs';\nexport const r = readFileSync;\n",
};

describe('lint boundaries', () => {
  let root: string;
  let run: LintRun;
  const rulesOf = (file: string) => {
    const linted = run.results.find((r) => r.file === file);
    if (!linted) throw new Error(`${file} was not linted`);
    return linted.messages.map((m) => m.ruleId);
  };

  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'tickwork-lint-'));
    for (const [file, text] of Object.entries(FIXTURES)) {
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      writeFileSync(path.join(root, file), text);
    }
    run = lintFixtures(root);
  });

  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('passes what the table allows: own files relatively, libs in the row through their index', () => {
    expect(run.results.find((r) => r.file === 'libs/scheduling/src/allowed.ts')?.messages).toEqual([]);
    expect(rulesOf('libs/scheduling/src/sub/b.ts')).toEqual([]);
    // The drivers' owners may use them.
    expect(rulesOf('libs/store/src/index.ts')).toEqual([]);
    expect(rulesOf('libs/messaging/src/index.ts')).toEqual([]);
  });

  it('rejects pg and kafkajs outside the lib that owns them', () => {
    expect(rulesOf('libs/scheduling/src/imports-pg.ts')).toEqual(['no-restricted-imports']);
    expect(rulesOf('libs/scheduling/src/imports-kafkajs.ts')).toEqual(['no-restricted-imports']);
  });

  it('rejects Nest in a lib other than runtime (the apps wire the framework)', () => {
    expect(rulesOf('libs/scheduling/src/imports-nest.ts')).toEqual(['no-restricted-imports']);
    expect(rulesOf('libs/runtime/src/imports-nest.ts')).toEqual([]);
  });

  it('rejects a relative import into another lib, deep or at its index, and into an app', () => {
    expect(rulesOf('libs/scheduling/src/relative-lib.ts')).toContain('tickwork/no-relative-cross-boundary');
    expect(rulesOf('libs/scheduling/src/relative-lib-index.ts')).toEqual([
      'tickwork/no-relative-cross-boundary',
    ]);
    expect(rulesOf('libs/scheduling/src/relative-app.ts')).toContain('tickwork/no-relative-cross-boundary');
  });

  it('rejects a lib outside the row, a deep import through the alias, and anything but pure code in the domain', () => {
    expect(rulesOf('libs/scheduling/src/outside-row.ts')).toEqual(['no-restricted-imports']);
    expect(rulesOf('libs/scheduling/src/deep-import.ts')).toContain('no-restricted-imports');
    expect(rulesOf('libs/domain/src/imports-store.ts')).toEqual(['no-restricted-imports']);
    expect(rulesOf('libs/jobs/src/imports-store.ts')).toEqual(['no-restricted-imports']);
    expect(rulesOf('libs/scheduling/src/imports-store.ts')).toEqual(['no-restricted-imports']);
    expect(rulesOf('libs/domain/src/imports-node.ts')).toEqual(['no-restricted-imports']);
  });

  it('rejects an import cycle', () => {
    expect(rulesOf('libs/scheduling/src/cycle-a.ts')).toEqual(['import-x/no-cycle']);
    expect(rulesOf('libs/scheduling/src/cycle-b.ts')).toEqual(['import-x/no-cycle']);
  });

  it('runs these rules in the repository config', () => {
    expect(run.realConfigRules).toEqual(
      expect.arrayContaining([
        'tickwork/no-relative-cross-boundary',
        'import-x/no-cycle',
        'no-restricted-imports',
      ]),
    );
  });

  it('keeps no boundary debt: every use case owns its ports, and no lib is exempt from its row', () => {
    // A debt entry would exempt a lib from its row; issue 28 paid the last two (jobs and
    // scheduling importing the store). A new one must name its issue and be paid the same way.
    expect(run.debts).toEqual([]);
  });
});
