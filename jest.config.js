/** Jest projects: unit (pure, no I/O), integration and e2e (real Kafka, PostgreSQL, registry). */
const moduleNameMapper = {
  '^@tickwork/(domain|config|store|messaging|scheduling|execution|jobs|runtime|telemetry)$':
    '<rootDir>/libs/$1/src',
};
const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }],
};
const common = { rootDir: __dirname, testEnvironment: 'node', moduleNameMapper, transform };

module.exports = {
  // A global option (projects cannot set it): e2e tests start processes and wait on real services.
  testTimeout: 120_000,
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/libs/**/*.spec.ts',
        '<rootDir>/apps/**/*.spec.ts',
        // The fault suite's oracle (its scenarios run with npm run test:faults, not jest).
        '<rootDir>/test/faults/**/*.spec.ts',
      ],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
    },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
    // A 3-broker Kafka cluster of its own and broker failures (~6 minutes): `npm run test:cluster`
    // only, so npm test (and CI) leave it out.
    ...(process.env.TICKWORK_CLUSTER_TESTS
      ? [{ ...common, displayName: 'cluster', testMatch: ['<rootDir>/test/cluster/**/*.test.ts'] }]
      : []),
  ],
};
