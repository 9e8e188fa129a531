// Lint: typed rules for async safety, and the architecture's import boundaries (see docs/architecture.md).
import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

/**
 * The architecture in one table: which `@tickwork/*` libs each lib may import (through its index,
 * never a relative path). Apps are composition roots and may import every lib; no lib imports an
 * app. Dependencies point inward, towards the pure domain; the table has no cycle.
 */
export const LIB_IMPORTS = {
  domain: [],
  config: [],
  telemetry: ['config'],
  messaging: ['domain', 'config'],
  store: ['domain', 'config', 'telemetry'],
  scheduling: ['domain', 'messaging', 'telemetry'],
  execution: ['domain', 'messaging', 'telemetry'],
  jobs: ['domain', 'config'],
  // Opens the database and the Kafka bus for the apps: an adapter-wiring lib, so it sees both.
  runtime: ['config', 'messaging', 'telemetry', 'store'],
};

/**
 * Known violations of the table, kept explicit until the refactor that removes them lands: none
 * today (issue 28 paid the last). test/integration/lint-boundaries.test.ts fails while any is listed,
 * so a new one is a reviewed change to that test too. Entries: { lib, imports, why }.
 */
export const BOUNDARY_DEBTS = [];

const LIBS = Object.keys(LIB_IMPORTS);
const DRIVERS = {
  pg: { owner: 'store', group: ['pg', 'pg/*', 'pg-*'], message: 'Only libs/store talks to PostgreSQL.' },
  kafkajs: {
    owner: 'messaging',
    group: ['kafkajs', 'kafkajs/*', '@kafkajs/*'],
    message: 'Only libs/messaging talks to Kafka: use @tickwork/messaging.',
  },
};
const DEEP_IMPORT = {
  group: ['@tickwork/*/*', '**/libs/*/src/**', '**/apps/*/src/**'],
  message: 'Import a lib through its index (@tickwork/x).',
};

/** The lib or app (`libs/x`, `apps/x`) a file belongs to under `root`, or null elsewhere. */
function boundaryOf(root, file) {
  const parts = path.relative(root, file).split(path.sep);
  return parts.length > 2 && (parts[0] === 'libs' || parts[0] === 'apps') ? `${parts[0]}/${parts[1]}` : null;
}

/**
 * A relative import stays inside its own lib or app: another lib is reached as `@tickwork/x`
 * (which the table above governs), an app never. Path patterns cannot tell `../../store/src`
 * from a sibling folder, so this resolves the path.
 */
const noRelativeCrossBoundary = {
  meta: {
    type: 'problem',
    docs: { description: 'A relative import may not leave its lib or app.' },
    schema: [{ type: 'object', properties: { root: { type: 'string' } }, additionalProperties: false }],
    messages: {
      toLib: "'{{spec}}' leaves {{from}} for {{to}}: import it as @tickwork/{{lib}}.",
      toApp: "'{{spec}}' leaves {{from}} for {{to}}: only an app's own files import it.",
      outside: "'{{spec}}' leaves {{from}} for {{to}}: a lib or app imports only its own files relatively.",
    },
  },
  create(context) {
    const root = context.options[0]?.root ?? context.cwd;
    const file = context.physicalFilename;
    const from = boundaryOf(root, file);
    if (!from) return {};
    const check = (node) => {
      const spec = node?.type === 'Literal' && typeof node.value === 'string' ? node.value : null;
      if (!spec || !spec.startsWith('.')) return;
      const to = boundaryOf(root, path.resolve(path.dirname(file), spec));
      if (to === from) return;
      const where = to ?? path.relative(root, path.resolve(path.dirname(file), spec));
      const isLib = to?.startsWith('libs/');
      context.report({
        node,
        messageId: isLib ? 'toLib' : to ? 'toApp' : 'outside',
        data: { spec, from, to: where, lib: isLib ? to.slice('libs/'.length) : '' },
      });
    };
    return {
      ImportDeclaration: (n) => check(n.source),
      ExportAllDeclaration: (n) => check(n.source),
      ExportNamedDeclaration: (n) => check(n.source),
      ImportExpression: (n) => check(n.source),
      TSExternalModuleReference: (n) => check(n.expression),
      CallExpression: (n) => {
        if (n.callee.type === 'Identifier' && n.callee.name === 'require') check(n.arguments[0]);
      },
    };
  },
};

/** The restricted imports of one lib: drivers it does not own, libs outside its row, deep imports. */
function libRestrictions(lib) {
  const allowed = new Set([
    ...LIB_IMPORTS[lib],
    ...BOUNDARY_DEBTS.filter((d) => d.lib === lib).map((d) => d.imports),
  ]);
  const forbidden = LIBS.filter((l) => !allowed.has(l));
  const row = LIB_IMPORTS[lib].map((l) => `@tickwork/${l}`).join(', ') || 'no other lib';
  const patterns = [
    DEEP_IMPORT,
    ...Object.values(DRIVERS)
      .filter((d) => d.owner !== lib)
      .map(({ group, message }) => ({ group, message })),
    {
      group: forbidden.map((l) => `@tickwork/${l}`),
      message: `libs/${lib} may import ${row} (LIB_IMPORTS in eslint.config.mjs); its own files relatively.`,
    },
  ];
  if (lib !== 'domain' && lib !== 'runtime')
    patterns.push({
      group: ['@nestjs/*'],
      message:
        'Nest is wired by the apps (its shared pieces live in libs/runtime): other libs stay free of it.',
    });
  if (lib === 'domain')
    patterns.push({
      group: ['@nestjs/*', 'undici', 'node:*', '@opentelemetry/*', 'pino', 'yaml'],
      message: 'libs/domain is pure TypeScript: no framework, driver, client or I/O.',
    });
  return patterns;
}

/**
 * The boundary rules for a tree rooted at `root` (this repository, or a fixture tree in a test):
 * per-lib import lists, drivers only in their owning lib, no relative import across libs or into
 * an app, and no import cycle.
 */
export function boundaryConfigs(root) {
  const code = (dir) => [`${dir}/**/*.ts`, `${dir}/**/*.tsx`];
  return [
    {
      files: [...code('libs'), ...code('apps')],
      plugins: {
        'import-x': importX,
        tickwork: { rules: { 'no-relative-cross-boundary': noRelativeCrossBoundary } },
      },
      settings: {
        // Parse imported .ts files too (the cycle check follows them), resolving tsconfig paths.
        'import-x/extensions': ['.ts', '.tsx', '.js'],
        'import-x/external-module-folders': ['node_modules', 'node_modules/@types'],
        'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
        'import-x/resolver-next': [
          createTypeScriptImportResolver({ project: path.join(root, 'tsconfig.json') }),
        ],
      },
      rules: {
        'tickwork/no-relative-cross-boundary': ['error', { root }],
        'import-x/no-cycle': ['error', { ignoreExternal: true }],
      },
    },
    ...LIBS.map((lib) => ({
      files: code(`libs/${lib}`),
      rules: { 'no-restricted-imports': ['error', { patterns: libRestrictions(lib) }] },
    })),
    {
      // Apps wire libs together and reach PostgreSQL and Kafka only through them.
      files: code('apps'),
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              DEEP_IMPORT,
              ...Object.values(DRIVERS).map(({ group, message }) => ({ group, message })),
            ],
          },
        ],
      },
    },
  ];
}

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.stack/**',
      'infra/.cache/**',
      'bench/results/**',
      'test/e2e/openapi-client/generated/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  ...boundaryConfigs(import.meta.dirname),
  {
    // Tests and benchmarks drive the real Kafka and PostgreSQL, so they may use the drivers (kafkajs
    // behind a commented eslint-disable: most should go through @tickwork/messaging), but reach libs
    // only through their index.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'kafkajs', message: 'Use @tickwork/messaging.' },
            { name: '@kafkajs/confluent-schema-registry', message: 'Use @tickwork/messaging.' },
          ],
          patterns: [
            { group: ['@tickwork/*/*', '**/libs/*/src/**'], message: 'Import a lib through its index.' },
          ],
        },
      ],
    },
  },
);
