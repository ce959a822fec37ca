// @swc/jest transpiles our TypeScript and the ESM-only @nestjs/* packages to CommonJS
// (Jest on Node 20 cannot require(esm)); see docs/adr/0002-toolchain.md.
const swcOptions = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
    keepClassNames: true,
  },
  module: { type: 'commonjs' },
  sourceMaps: 'inline',
};
module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  transform: { '^.+\\.(t|j)s$': ['@swc/jest', swcOptions] },
  // temporal-polyfill is ESM-only too (the schedule calendar, ADR 0034).
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|temporal-polyfill|temporal-utils)/)'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
};
