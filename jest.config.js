/** Jest projects: unit (pure, no I/O), integration and e2e (real Kafka, PostgreSQL, registry). */
const moduleNameMapper = {
  '^@tickwork/(domain|config|store|messaging|scheduling|execution|jobs|runtime)$': '<rootDir>/libs/$1/src',
};
const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json', isolatedModules: true }],
};
const common = { rootDir: __dirname, testEnvironment: 'node', moduleNameMapper, transform };

module.exports = {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/apps/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      testTimeout: 60_000,
    },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'], testTimeout: 120_000 },
  ],
};
