import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveDashboardAssets } from './dashboard-assets';

describe('resolveDashboardAssets', () => {
  let root: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'dashboard-assets-'));
    writeFileSync(join(root, 'package.json'), '{"name":"host","private":true}');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  function publicDir(files: string[]): string {
    const dir = join(root, 'src', 'dashboard', 'public');
    mkdirSync(dir, { recursive: true });
    for (const f of files) writeFileSync(join(dir, f), '');
    return dir;
  }

  function installUplot(files = ['uPlot.esm.js', 'uPlot.min.css']): string {
    const dir = join(root, 'node_modules', 'uplot');
    mkdirSync(join(dir, 'dist'), { recursive: true });
    writeFileSync(join(dir, 'package.json'), '{"name":"uplot","main":"./dist/uPlot.cjs.js"}');
    writeFileSync(join(dir, 'dist', 'uPlot.cjs.js'), '');
    for (const f of files) writeFileSync(join(dir, 'dist', f), '');
    return join(dir, 'dist');
  }

  function installClient(files = ['dist/browser/sse-parser.js']): string {
    const dir = join(root, 'node_modules', '@opentinker', 'client');
    mkdirSync(join(dir, 'dist', 'browser'), { recursive: true });
    writeFileSync(join(dir, 'package.json'), '{"name":"@opentinker/client","exports":{"./package.json":"./package.json"}}');
    for (const f of files) writeFileSync(join(dir, f), '');
    return dir;
  }

  it('serves the page’s modules, styles and icons by name, and uPlot and the client’s SSE parser under stable names', () => {
    const dir = publicDir(['index.html', 'main.mjs', 'dashboard.css', 'favicon.svg']);
    const uplot = installUplot();
    const client = installClient();
    const table = resolveDashboardAssets(root);
    expect(table.problems).toEqual([]);
    expect(table.publicDir).toBe(dir);
    expect(Object.fromEntries(table.assets)).toEqual({
      'main.mjs': { root: dir, file: 'main.mjs' },
      'dashboard.css': { root: dir, file: 'dashboard.css' },
      'favicon.svg': { root: dir, file: 'favicon.svg' },
      'uplot.esm.js': { root: uplot, file: 'uPlot.esm.js' },
      'uplot.min.css': { root: uplot, file: 'uPlot.min.css' },
      'sse-parser.mjs': { root: client, file: 'dist/browser/sse-parser.js' },
    });
  });

  it('never lists declarations, specs, other files, folders or links', () => {
    const dir = publicDir(['index.html', 'api.mjs', 'api.d.mts', 'notes.md', 'secret.json', 'x.spec.ts', '.hidden.mjs.bak']);
    mkdirSync(join(dir, 'sub.mjs'));
    symlinkSync('/etc/passwd', join(dir, 'passwd.css'));
    installUplot();
    installClient();
    expect([...resolveDashboardAssets(root).assets.keys()].sort()).toEqual(['api.mjs', 'sse-parser.mjs', 'uplot.esm.js', 'uplot.min.css']);
  });

  it('reports a missing page, uPlot or client instead of failing the boot', () => {
    const table = resolveDashboardAssets(root);
    expect(table.publicDir).toBeNull();
    expect(table.assets.size).toBe(0);
    expect(table.problems).toEqual([
      expect.stringContaining("the dashboard's files are missing"),
      expect.stringContaining('uPlot is not installed'),
      expect.stringContaining('@opentinker/client is not installed'),
    ]);
  });

  it('reports a uPlot without its browser files', () => {
    publicDir(['index.html']);
    installUplot(['uPlot.esm.js']);
    installClient([]);
    expect(resolveDashboardAssets(root).problems).toEqual([
      expect.stringMatching(/^uPlot has no uPlot\.min\.css in /),
      expect.stringMatching(/^@opentinker\/client has no dist\/browser\/sse-parser\.js in .*\(run npm run build\)$/),
    ]);
  });
});
