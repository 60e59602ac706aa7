/**
 * The layer rules of docs/architecture.md ("Dependency rules"), checked by `npm run lint`:
 *
 *   npx depcruise src libs environments test --config .dependency-cruiser.cjs
 *
 * Workspace packages (`@opentinker/*`) resolve through node_modules symlinks to their folder under
 * libs/ or environments/ (their built `dist/`), so the rules below speak in repository paths. That
 * resolution needs the packages built (`npm run build`, which `npm test` runs first).
 */
/**
 * Folder-level cycles of src/ that exist today (source folder: the folders it imports that lead back to
 * it; `<root>` is src/ itself). They form one knot of the top-level folders, mostly through `core/database/data-source.ts`
 * listing every module's entities, the job kinds shared by jobs/, training/ and the runner, and jobs/ ↔
 * scheduler/ ↔ datasets/. An edge listed here may stay on a cycle until it is untangled (then delete it
 * here); any other folder edge that closes a cycle fails the lint.
 */
const KNOWN_FOLDER_CYCLES = {
  auth: 'config core core/database',
  'cli/commands': '<root> config hub registry',
  config: 'core',
  core: 'auth config datasets jobs scheduler sessions',
  'core/database': 'auth config core datasets jobs scheduler sessions',
  datasets: 'auth config core core/database jobs jobs/kinds registry',
  hub: 'cli/commands config core',
  inference: 'auth config core jobs jobs/kinds jobs/kinds/inference runner scheduler training',
  jobs: 'auth config core core/database datasets hub inference metrics registry runner scheduler training',
  'jobs/kinds': 'core inference metrics registry runner training',
  'jobs/kinds/inference': 'inference jobs/kinds',
  'jobs/kinds/session': 'jobs/kinds jobs/kinds/train training',
  'jobs/kinds/train': 'jobs/kinds metrics training',
  metrics: 'runner',
  registry: 'config core',
  runner: 'hub inference jobs/kinds registry training',
  scheduler: 'auth config core core/database hub jobs jobs/kinds registry runner sessions',
  sessions: 'auth core core/database jobs jobs/kinds runner scheduler',
  training: 'datasets hub inference jobs/kinds jobs/kinds/session jobs/kinds/train metrics registry runner',
};

/** No import cycles between folders of src/, less the known ones above; test/ helpers are no folder of src/. */
function folderCycleRules() {
  const rule = (from, allowed) => ({
    name: 'no-folder-cycles',
    severity: 'error',
    comment: 'Folders of src/ form a directed graph: a cycle between folders means one of them holds code the other should own.',
    scope: 'folder',
    from,
    to: { circular: true, pathNot: ['^test/', ...allowed], viaOnly: { dependencyTypesNot: ['type-only', 'dynamic-import'] } },
  });
  const known = Object.keys(KNOWN_FOLDER_CYCLES);
  return [
    rule({ path: '^src/', pathNot: `^src/(${known.join('|')})$` }, []),
    ...known.map((folder) => {
      const names = KNOWN_FOLDER_CYCLES[folder].split(' ');
      // `<root>` stands for src/ itself (app.ts, the CLI's entry).
      const allowed = [`^src/(${names.filter((n) => n !== '<root>').join('|')})$`, ...(names.includes('<root>') ? ['^src$'] : [])];
      return rule({ path: `^src/${folder}$` }, allowed);
    }),
  ];
}

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
      comment: 'libs/rl and libs/env-sdk depend on no other workspace package.',
      from: { path: '^libs/(rl|env-sdk)/' },
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
    ...folderCycleRules(),
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
    exclude: { path: ['^src/dashboard/public/.*\\.d\\.mts$'] },
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
