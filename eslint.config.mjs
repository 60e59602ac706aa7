// ESLint for the whole repository (`npm run lint`): typescript-eslint's recommended rules without type
// information, plus four type-aware rules on the sources of src/ and libs/*/src (below). The whole
// type-aware set (recommendedTypeChecked) took 39 s of CPU against 12 s on the 2-core development
// machine and its 1,800 findings were almost all `no-unsafe-*` on JSON typed `any`, so it is not used.
// The four rules cost what building their program costs: `eslint . --no-cache` took 39–41 s of CPU with
// them against 17–19 s without (alternating, same run, load 5 from other work), and `tsc` alone on
// tsconfig.lint.json 17 s; `projectService` instead of `project` was no cheaper (42 s). `npm run lint`
// keeps ESLint's cache, so a second run re-reads only changed files (10 s).
// Formatting is Prettier's business (eslint-config-prettier, last).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      'coverage/**',
      'libs/engine/native/build/**',
      '.scratch/**',
      '.gpu-check/**',
      // The Python readers of the metrics tests (test/metrics/setup-readers.sh).
      '.venv-metrics/**',
      // The client SDKs of the client tests (test/clients/setup-clients.sh).
      '.venv-clients/**',
      // The official Tinker SDKs the Tinker wire tests run (test/tinker/setup-sdk.sh).
      '.venv-tinker/**',
      // tinker-cookbook and torch for the cookbook's loops (test/tinker/setup-cookbook.sh).
      '.venv-cookbook/**',
      // The engine bench's peer, transformers + PEFT (libs/engine/bench/install-peer.sh).
      'libs/engine/bench/.venv-peer/**',
      '.opentinker/**',
      'plugins/**',
      // Generated from openapi.json.
      'libs/client/src/generated/**',
      // Generated from libs/tinker-wire/proto/tinker.proto.
      'libs/tinker-wire/src/generated/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { languageOptions: { globals: globals.node } },
  {
    rules: {
      // `_name` marks a parameter kept for a signature (an interface, a positional API) and `{ a: _a, ...rest }` drops a key.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // Wrapping errors here put the cause's message into their own text, which is what crosses the process
      // boundary to job events and API replies; some (remote environments) are opaque on purpose.
      'preserve-caught-error': 'off',
      // Misreads `let x = fallback; try { x = … } catch {}`: the fallback is what a throw leaves in place.
      'no-useless-assignment': 'off',
      // The control characters matched are the point (refusing them in names, stripping ANSI colours).
      'no-control-regex': 'off',
    },
  },
  {
    // CommonJS scripts (bin/, benchmarks, fixtures): `require` is their module system.
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  { files: ['src/dashboard/public/**'], languageOptions: { globals: globals.browser } },
  {
    // Type-aware rules for the likeliest silent bugs of an orchestration server: a promise nobody awaits
    // or catches, a promise where a callback's result is ignored, a switch over a message union that
    // misses a case, an async function with nothing to wait for. On the server's and the packages'
    // sources only (specs and test kits are left out), through one program (tsconfig.lint.json).
    files: ['src/**/*.ts', 'libs/*/src/**/*.ts'],
    ignores: ['**/*.spec.ts', 'libs/*/src/testing/**', 'libs/tinker-wire/src/testing.ts', 'libs/*/src/__golden__/**'],
    languageOptions: { parserOptions: { project: ['./tsconfig.lint.json'], tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      'require-await': 'off',
      '@typescript-eslint/require-await': 'error',
    },
  },
  {
    // Fastify's plugins and route handlers are async by contract: a plugin that returns a promise needs no
    // `done` callback, and what an async handler returns is the answer. Most of these have nothing to await.
    files: ['src/registry/*.routes.ts'],
    rules: { '@typescript-eslint/require-await': 'off' },
  },
  {
    // Tests and their helpers read untyped JSON bodies and poke at internals; declarations of the
    // dashboard's browser modules describe JSON the server returns.
    files: ['**/*.spec.ts', '**/*.e2e-spec.ts', '**/*.int-spec.ts', '**/*.security-spec.ts', 'test/**', '**/src/testing/**', 'src/dashboard/public/*.d.mts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  prettier,
);
