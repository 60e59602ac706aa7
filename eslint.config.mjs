// ESLint for the whole repository (`npm run lint`): typescript-eslint's recommended rules without type
// information. The type-aware set (recommendedTypeChecked) took 39 s of CPU against 12 s on the 2-core
// development machine and its 1,800 findings were almost all `no-unsafe-*` on JSON typed `any`, so
// `npm test` stays on this one. Formatting is Prettier's business (eslint-config-prettier, last).
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
    // Tests and their helpers read untyped JSON bodies and poke at internals; declarations of the
    // dashboard's browser modules describe JSON the server returns.
    files: ['**/*.spec.ts', '**/*.e2e-spec.ts', '**/*.int-spec.ts', '**/*.security-spec.ts', 'test/**', '**/src/testing/**', 'src/dashboard/public/*.d.mts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  prettier,
);
