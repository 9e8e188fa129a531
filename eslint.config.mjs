// Lint: typed rules for async safety, and import boundaries so dependencies point inward.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
  {
    // The domain is pure: no framework, driver or client library.
    files: ['libs/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@nestjs/*', 'kafkajs', 'pg', 'undici', '@tickwork/*', '@kafkajs/*'],
              message: 'libs/domain is pure TypeScript.',
            },
          ],
        },
      ],
    },
  },
  {
    // Only the store touches pg, only messaging touches kafkajs; nobody deep-imports another lib.
    files: [
      'apps/**/*.ts',
      'libs/config/**/*.ts',
      'libs/scheduling/**/*.ts',
      'libs/execution/**/*.ts',
      'libs/jobs/**/*.ts',
      'libs/runtime/**/*.ts',
      'libs/telemetry/**/*.ts',
      'test/**/*.ts',
      'bench/**/*.ts',
    ],
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
