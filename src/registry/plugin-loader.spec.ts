import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { discoverPlugins } from './plugin-discovery';
import { loadPlugin, type PluginRecord } from './plugin-loader';

/** The plugin loader on the fixture packages of test/fixtures/plugins: each one loaded, or refused with its reason. */
describe('loadPlugin', () => {
  const fixtures = join(process.cwd(), 'test/fixtures/plugins');
  const host = mkdtempSync(join(tmpdir(), 'ot-plugins-'));
  writeFileSync(join(host, 'package.json'), JSON.stringify({ name: 'host', version: '0.0.0', dependencies: {} }));
  afterAll(() => rmSync(host, { recursive: true, force: true }));

  let records: Map<string, PluginRecord>;
  beforeAll(async () => {
    const loaded = await Promise.all(discoverPlugins(host, fixtures).map((c) => loadPlugin(c, '1.4.0')));
    records = new Map(loaded.map((r) => [r.dir.split('/').pop()!, r]));
  });

  it('loads an ES module and a CommonJS package, marked and built for this SDK', () => {
    expect(records.get('valid-esm')).toMatchObject({ status: 'loaded', id: 'coin', version: '0.3.0', source: 'plugins-dir', firstParty: false, error: null });
    expect(records.get('valid-esm')!.environment?.id).toBe('coin');
    expect(records.get('valid-cjs')).toMatchObject({ status: 'loaded', id: 'counter' });
  });

  it('refuses each broken package with why, and never throws', () => {
    const reasons = Object.fromEntries([...records].filter(([, r]) => r.status === 'failed').map(([dir, r]) => [dir, r.error]));
    expect(reasons).toEqual({
      'api-too-new': expect.stringMatching(/^built for environment API version \d+; this server supports 1$/),
      'bad-manifest': 'package.json "opentinker" marker has no string "id"',
      'not-an-environment': 'the default export is not an environment made by defineEnvironment()',
      'sdk-too-new': 'requires @opentinker/env-sdk ^2.0.0, but this server has 1.4.0',
      'throws-on-import': expect.stringMatching(/^failed to load: /),
    });
  });

  it('refuses a package whose marker names another id than its environment, or that has no marker or SDK range', async () => {
    const dir = join(host, 'renamed');
    mkdirSync(dir);
    writeFileSync(join(dir, 'index.js'), `module.exports = require(${JSON.stringify(join(fixtures, 'valid-cjs', 'index.js'))});`);
    const manifest = { name: 'renamed', version: '1.0.0', main: 'index.js', opentinker: { kind: 'environment', id: 'other' }, peerDependencies: { '@opentinker/env-sdk': '^1' } };
    const candidate = { dir, source: 'plugins-dir' as const, firstParty: false, manifest };
    expect((await loadPlugin(candidate, '1.4.0')).error).toBe('package.json declares id "other" but the environment\'s id is "counter"');
    expect((await loadPlugin({ ...candidate, manifest: { ...manifest, opentinker: undefined } }, '1.4.0')).error).toBe(
      'package.json lacks "opentinker": { "kind": "environment", "id": "…" }',
    );
    expect((await loadPlugin({ ...candidate, manifest: { ...manifest, peerDependencies: {} } }, '1.4.0')).error).toMatch(/^package.json must declare peerDependencies/);
    expect((await loadPlugin({ ...candidate, manifest: null, manifestError: 'Unexpected token } in JSON' }, '1.4.0')).error).toBe('Unexpected token } in JSON');
  });
});
