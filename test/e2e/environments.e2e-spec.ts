import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRegistry } from '../../src/registry/registry-loader';
import { startTestApp, TestApp } from '../support/test-app';

const FIXTURES = join(process.cwd(), 'test', 'fixtures');

describe('environment discovery and the environments API', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ worker: false, config: { plugins_dir: join(FIXTURES, 'plugins') } });
  });
  afterAll(() => t.close());

  it('lists loaded and failed third-party packages with the reason, and keeps running', async () => {
    const res = await t.request('GET', '/v1/environments');
    expect(res.status).toBe(200);
    const byDir = Object.fromEntries(res.body.filter((e: any) => !e.first_party).map((e: any) => [e.package, e]));
    expect(byDir['opentinker-env-counter']).toMatchObject({
      id: 'counter',
      version: '1.2.0',
      status: 'loaded',
      source: 'plugins-dir',
      turn_mode: 'multi',
      task_source: 'generator',
      error: null,
    });
    expect(byDir['@acme/opentinker-env-coin']).toMatchObject({ id: 'coin', status: 'loaded', turn_mode: 'single' });
    expect(byDir['opentinker-env-future']).toMatchObject({ status: 'failed', error: 'requires @opentinker/env-sdk ^2.0.0, but this server has 1.0.0' });
    expect(byDir['opentinker-env-explodes'].error).toContain('kaboom at import time');
    expect(byDir['opentinker-env-plain'].error).toContain('not an environment made by defineEnvironment');
    expect(byDir['opentinker-env-nameless']).toMatchObject({ status: 'failed', id: null, error: 'package.json "opentinker" marker has no string "id"' });
    // Branded, but made for another contract version: refused by apiVersion, not by the brand.
    expect(byDir['opentinker-env-tomorrow']).toMatchObject({ id: 'tomorrow', status: 'failed', error: 'built for environment API version 2; this server supports 1' });
    const tomorrow = await t.request('GET', '/v1/environments/tomorrow');
    expect(tomorrow.body).toMatchObject({ status: 'failed', tasks: null, tasks_error: 'built for environment API version 2; this server supports 1' });
    expect((await t.request('GET', '/v1/environments/tomorrow/protocol/v1/info')).status).toBe(404);
    expect((await t.request('GET', '/health', { key: null })).status).toBe(200);
  });

  it('loads the first-party environments declared as dependencies', async () => {
    const res = await t.request('GET', '/v1/environments');
    const firstParty = res.body.filter((e: any) => e.first_party).map((e: any) => [e.id, e.package, e.status, e.source]);
    expect(firstParty).toEqual(
      expect.arrayContaining([
        ['gomoku', '@opentinker/env-gomoku', 'loaded', 'dependency'],
        ['math', '@opentinker/env-math', 'loaded', 'dependency'],
        ['math-tool', '@opentinker/env-math-tool', 'loaded', 'dependency'],
      ]),
    );
    const math = await t.request('GET', '/v1/environments/math');
    expect(math.body).toMatchObject({ turn_mode: 'single', task_source: 'dataset', default_config: { difficulty: 2 }, tasks: { train: null, test: 200 } });
    const gomoku = await t.request('GET', '/v1/environments/gomoku');
    expect(gomoku.body).toMatchObject({ turn_mode: 'multi', default_config: { board_size: 9, win_length: 5 } });
  });

  it('describes one environment: config schema, defaults, turn mode, task counts', async () => {
    const res = await t.request('GET', '/v1/environments/counter');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: 'counter', default_config: { target: 3 }, tasks: { train: null, test: 5 }, tasks_error: null });
    expect(res.body.config_schema.properties.target).toMatchObject({ type: 'integer', default: 3 });
    const failed = await t.request('GET', '/v1/environments/explodes');
    expect(failed.body).toMatchObject({ status: 'failed', tasks: null });
    const unknown = await t.request('GET', '/v1/environments/nope');
    expect([unknown.status, unknown.body.code]).toEqual([404, 'OT_ERR_NOT_FOUND']);
    expect((await t.request('GET', '/v1/environments', { key: null })).status).toBe(401);
  });

  it('serves each loaded environment over the protocol behind API-key auth', async () => {
    const info = await t.request('GET', '/v1/environments/counter/protocol/v1/info');
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({ id: 'counter', protocol_version: '1', turn_mode: 'multi', tasks: { train: null, test: 5 } });
    const denied = await t.request('GET', '/v1/environments/counter/protocol/v1/info', { key: null });
    expect([denied.status, denied.body.code]).toEqual([401, 'OT_ERR_UNAUTHENTICATED']);
    const episode = await t.request('POST', '/v1/environments/counter/protocol/v1/episodes', { body: { split: 'test', index: 1, seed: 3 } });
    expect(episode.status).toBe(201);
    expect(episode.body.messages).toEqual([{ role: 'user', content: 'Count from 1. Say 2.' }]);
    const step = await t.request('POST', `/v1/environments/counter/protocol/v1/episodes/${episode.body.episode_id}/step`, { body: { action: '2' } });
    expect(step.body).toEqual({ observation: 'Say 3.', observation_role: 'user', reward: 1, done: false, info: { right: true } });
  });

  it('refuses duplicate ids at boot, naming both packages', async () => {
    await expect(loadRegistry({ hostRoot: process.cwd(), pluginsDir: join(FIXTURES, 'plugins-duplicate') })).rejects.toThrow(
      /Two environment packages declare the id "counter": opentinker-env-counter-a .* and opentinker-env-counter-b/,
    );
  });

  it('stops the boot when a first-party package fails, naming it', async () => {
    const root = mkdtempSync(join(tmpdir(), 'host-'));
    try {
      const pkg = (name: string, body: object) => {
        const dir = join(root, 'node_modules', ...name.split('/'));
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', ...body }));
        return dir;
      };
      writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'host', dependencies: { '@opentinker/env-broken': '*', 'left-pad': '*' } }));
      pkg('@opentinker/env-sdk', {});
      pkg('left-pad', {});
      const broken = pkg('@opentinker/env-broken', { main: 'index.js', opentinker: { kind: 'environment', id: 'broken' }, peerDependencies: { '@opentinker/env-sdk': '^1' } });
      writeFileSync(join(broken, 'index.js'), "throw new Error('first-party bug');");
      await expect(loadRegistry({ hostRoot: root, pluginsDir: join(root, 'plugins') })).rejects.toThrow(
        'First-party environment package @opentinker/env-broken failed to load: failed to load: first-party bug',
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
