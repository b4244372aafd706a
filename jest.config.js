// Two projects: `unit` (pure logic, no services) and `integration` (real Kafka, Redis,
// S3 and schema registry, started by test/setup/global-setup.ts when not given by env).
const common = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  // parse5-sax-parser ships ESM only; let ts-jest transpile it for the CommonJS test runtime.
  transform: {
    '^.+\\.[tj]s$': ['ts-jest', { tsconfig: { allowJs: true } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!parse5-sax-parser/)'],
  // A cache of this checkout's own: Jest's default (/tmp/jest_<uid>) is shared by every clone on
  // the machine, and a stale entry from another clone once failed ts-jest on lib/ sources.
  cacheDirectory: '<rootDir>/node_modules/.cache/jest',
};

module.exports = {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    // The embedded default end to end: the built CLI against loopback fixture sites; no services.
    {
      ...common,
      displayName: 'embedded',
      testMatch: ['<rootDir>/test/embedded/**/*.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/setup/integration-timeout.ts'],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts', '<rootDir>/test/e2e/**/*.test.ts'],
      globalSetup: '<rootDir>/test/setup/global-setup.ts',
      setupFilesAfterEnv: ['<rootDir>/test/setup/integration-timeout.ts'],
    },
  ],
};
