import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';

/** One file the dashboard serves at `/assets/<name>`. */
export interface DashboardAsset {
  /** Folder the file is read from. */
  root: string;
  /** File name inside `root`. */
  file: string;
}

/** Where the dashboard's files are and which ones may be served. */
export interface DashboardAssetTable {
  /** The server package's folder. */
  hostRoot: string;
  /** The folder of `index.html` and the dashboard's own modules and styles, or null when it is missing. */
  publicDir: string | null;
  /** URL name (`main.mjs`, `uplot.esm.js`) → file; nothing outside this table is ever served. */
  assets: ReadonlyMap<string, DashboardAsset>;
  /** Why something is missing (a broken install); the server runs on and `/` says so. */
  problems: string[];
}

/**
 * Only these kinds of files are served, so declarations (`*.d.mts`), specs and anything else that
 * lands in the folder stays private.
 */
const SERVED_EXTENSIONS = new Set(['.html', '.mjs', '.css', '.svg']);

/** uPlot's browser build and styles, under stable names independent of its file naming. */
const UPLOT_FILES: Record<string, string> = { 'uplot.esm.js': 'uPlot.esm.js', 'uplot.min.css': 'uPlot.min.css' };

/** Modules of `@opentinker/client`'s browser build: the dashboard parses event streams with the client's parser. */
const CLIENT_FILES: Record<string, string> = { 'sse-parser.mjs': 'dist/browser/sse-parser.js' };

/**
 * Builds the table of files the dashboard serves: its own files from `<hostRoot>/src/dashboard/public`
 * (plain ES modules and CSS, no build step), uPlot and the client's SSE parser from the server's dependencies. An allowlist made
 * once at boot, rather than a folder served as is, means a request path can never reach another file.
 *
 * @example
 * const table = resolveDashboardAssets('/opt/opentinker');
 * table.assets.get('main.mjs'); // { root: '/opt/opentinker/src/dashboard/public', file: 'main.mjs' }
 */
export function resolveDashboardAssets(hostRoot: string): DashboardAssetTable {
  const assets = new Map<string, DashboardAsset>();
  const problems: string[] = [];
  let publicDir: string | null = join(hostRoot, 'src', 'dashboard', 'public');
  if (existsSync(join(publicDir, 'index.html'))) {
    for (const entry of readdirSync(publicDir, { withFileTypes: true })) {
      if (entry.isFile() && SERVED_EXTENSIONS.has(extname(entry.name)) && entry.name !== 'index.html') {
        assets.set(entry.name, { root: publicDir, file: entry.name });
      }
    }
  } else {
    problems.push(`the dashboard's files are missing (${publicDir}/index.html)`);
    publicDir = null;
  }
  try {
    // Resolved like the server resolves its other dependencies, so hoisted installs work too.
    const uplotDir = dirname(createRequire(join(hostRoot, 'package.json')).resolve('uplot'));
    for (const [name, file] of Object.entries(UPLOT_FILES)) {
      if (existsSync(join(uplotDir, file))) assets.set(name, { root: uplotDir, file });
      else problems.push(`uPlot has no ${file} in ${uplotDir}`);
    }
  } catch (error) {
    problems.push(`uPlot is not installed: ${(error as Error).message.split('\n')[0]}`);
  }
  try {
    const clientDir = dirname(createRequire(join(hostRoot, 'package.json')).resolve('@opentinker/client/package.json'));
    for (const [name, file] of Object.entries(CLIENT_FILES)) {
      if (existsSync(join(clientDir, file))) assets.set(name, { root: clientDir, file });
      else problems.push(`@opentinker/client has no ${file} in ${clientDir} (run npm run build)`);
    }
  } catch (error) {
    problems.push(`@opentinker/client is not installed: ${(error as Error).message.split('\n')[0]}`);
  }
  return { hostRoot, publicDir, assets, problems };
}
