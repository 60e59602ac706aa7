/**
 * The layer rules of docs/architecture.md ("Dependency rules"), checked by `npm run lint`:
 *
 *   npx depcruise src libs environments test --config .dependency-cruiser.cjs
 *
 * Workspace packages (`@opentinker/*`) resolve through node_modules symlinks to their folder under
 * libs/ or environments/ (their built `dist/`), so the rules below speak in repository paths. That
 * resolution needs the packages built (`npm run build`, which `npm test` runs first).
 *
 * "No import cycles between folders of src/" is checked by `test/lint/folder-cycles.cjs` on this
 * configuration's JSON output (dependency-cruiser's folder scope merges sub-folders into their parents).
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'libs-not-to-app',
      severity: 'error',
      comment: 'libs/* are framework-free packages that stand alone: they never import the server (src/), the tests (test/) or an environment.',
      from: { path: '^libs/' },
      to: { path: '^(src|test|environments)/' },
    },
    {
      name: 'standalone-libs',
      severity: 'error',
      comment: 'libs/rl, libs/env-sdk and libs/tinker-wire depend on no other workspace package.',
      from: { path: '^libs/(rl|env-sdk|tinker-wire)/' },
      to: { path: '^libs/', pathNot: '^libs/$1/' },
    },
    {
      name: 'environments-only-sdk',
      severity: 'error',
      comment: 'An environment sees only the env SDK (plus its own files, node builtins and npm packages), so a third-party author can write one the same way.',
      from: { path: '^environments/([^/]+)/', pathNot: '^environments/math-tool/' },
      to: { path: '^(src|test|libs|environments)/', pathNot: ['^environments/$1/', '^libs/env-sdk/'] },
    },
    {
      name: 'math-tool-only-sdk-and-math',
      severity: 'error',
      comment: 'math-tool builds on the math environment (tasks, grading, config policy) through its published package, declared in its package.json.',
      from: { path: '^environments/math-tool/' },
      to: { path: '^(src|test|libs|environments)/', pathNot: ['^environments/math-tool/', '^environments/math/', '^libs/env-sdk/'] },
    },
    {
      name: 'app-not-to-environments',
      severity: 'error',
      comment: 'The server finds environments at boot by their package.json marker and loads them by name; it never imports one.',
      from: { path: '^src/' },
      to: { path: '^environments/' },
    },
    {
      name: 'no-file-cycles',
      severity: 'error',
      comment: 'A file-level import cycle makes load order matter (undefined at import time) and hides which file owns an idea.',
      from: { path: '^(src|libs|environments)/' },
      // A type-only import or a lazy import() (a job kind loading its runner) runs nothing at load time.
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only', 'dynamic-import'] } },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      comment: 'An import that does not resolve is a typo or a missing dependency (or the workspace packages are not built: `npm run build`).',
      from: {},
      // The dashboard's browser modules import uPlot and the client's SSE parser by the URLs the server serves them under.
      to: { couldNotResolve: true, pathNot: ['^\\./uplot\\.esm\\.js$', '^\\./sse-parser\\.mjs$'] },
    },
  ],
  options: {
    // Follow the source, not build outputs or installed packages; an import of one is still recorded.
    doNotFollow: { path: ['node_modules', '(^|/)dist/'] },
    // Type declarations written by hand for the dashboard's browser modules are no source of their own.
    // …nor is the engine bench's peer virtualenv (libs/engine/bench/install-peer.sh).
    exclude: { path: ['^src/dashboard/public/.*\\.d\\.mts$', '^libs/engine/bench/\\.venv-peer/'] },
    // Type-only imports are dependencies too: a layer rule holds for types as well as values.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['require', 'node', 'default'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.mts', '.d.ts', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
