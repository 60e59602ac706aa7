/**
 * Jest runs in ESM mode (`node --experimental-vm-modules`) because Nest 12 packages are ESM-only; swc
 * compiles TypeScript (with decorator metadata for Nest's dependency injection).
 */
const swc = [
  '@swc/jest',
  {
    jsc: {
      target: 'es2022',
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      keepClassNames: true,
    },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  },
];

const common = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.(t|j)s$': swc },
  // Let swc handle CommonJS packages that require() ESM-only ones.
  transformIgnorePatterns: ['/node_modules/(?!(content-disposition|cookie|file-type)/)'],
  // Workspace packages resolve to their TypeScript sources, so tests never need a build of them.
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    '^@opentinker/env-sdk$': '<rootDir>/libs/env-sdk/src/index.ts',
    '^@opentinker/env-sdk/testing$': '<rootDir>/libs/env-sdk/src/testing/index.ts',
    '^@opentinker/tinker-wire$': '<rootDir>/libs/tinker-wire/src/index.ts',
    '^@opentinker/env-math$': '<rootDir>/environments/math/src/index.ts',
    '^@opentinker/client$': '<rootDir>/libs/client/src/index.ts',
    '^@opentinker/engine$': '<rootDir>/libs/engine/src/index.ts',
    '^@opentinker/engine/cli$': '<rootDir>/libs/engine/src/cli/model.command.ts',
    '^@opentinker/engine/native$': '<rootDir>/libs/engine/src/native/addon.ts',
    '^@opentinker/engine/models$': '<rootDir>/libs/engine/src/models.ts',
    '^@opentinker/engine/settings$': '<rootDir>/libs/engine/src/settings.ts',
    // The dashboard imports the client's SSE parser as the server serves it (/assets/sse-parser.mjs).
    '^\\./sse-parser\\.mjs$': '<rootDir>/libs/client/src/sse-parser.ts',
  },
  rootDir: __dirname,
};

module.exports = {
  testTimeout: 30_000,
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/src/**/*.spec.ts',
        '<rootDir>/test/docs/**/*.spec.ts',
        '<rootDir>/test/contracts/**/*.spec.ts',
        '<rootDir>/test/lint/**/*.spec.ts',
        '<rootDir>/libs/*/src/**/*.spec.ts',
        '<rootDir>/environments/*/src/**/*.spec.ts',
      ],
    },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
    { ...common, displayName: 'security', testMatch: ['<rootDir>/test/security/**/*.security-spec.ts'] },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.int-spec.ts'] },
  ],
};
