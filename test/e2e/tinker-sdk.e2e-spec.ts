import { createApi, ensureAdmin } from '../../src/app';
import { loadConfig } from '../../src/config/app-config';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { startFakeHub, type FakeHub } from '../support/fake-hub';
import { checkLines, checkResult, type CheckLine } from '../support/python-checks';
import { FAST } from '../support/test-app';
import { writeTinkerTestBase } from '../support/tinker-test-base';
import { runWithSdk, SDK_VERSIONS, sdkMissing } from '../support/tinker-sdk';

const SLOW = 600_000;

/**
 * Every release test/tinker/sdk-versions lists: the oldest and the newest supported, and 0.25.0, the first
 * that speaks protobuf only (about 7 s each).
 */
const RELEASES = process.env.TINKER_SDK ? [process.env.TINKER_SDK] : [...SDK_VERSIONS].reverse();

/**
 * The official Tinker Python SDK, unmodified, against a real server (test/tinker/sdk_server_checks.py):
 * SFT whose loss falls, importance-sampling RL whose reward rises, sampling log-probs equal to forward
 * log-probs, save_state into a new client that continues, two training clients on one base in one
 * runner, bad requests raised within seconds (a base model that cannot be loaded too), a checkpoint
 * downloaded through its signed archive URL (before 0.38), another user's 404s. At each listed SDK
 * release; each skips, saying so, without that release in .venv-tinker. To look closer:
 * TINKER_SDK=<release> runs one release, TINKER_CHECKS=<name,…> some checks, TINKER_SDK_VERBOSE=1
 * prints what each check saw.
 */
describe.each(RELEASES)('the Tinker SDK %s against the server (e2e)', (version) => {
  const missing = sdkMissing(version);
  let app: NestFastifyApplication;
  let home: string;
  let hub: FakeHub | undefined;
  let lines: CheckLine[] = [];
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    if (missing) {
      console.log(`tinker ${version}: skipping: ${missing}`);
      return;
    }
    home = mkdtempSync(join(tmpdir(), 'opentinker-tinker-'));
    const roots = join(home, 'models-root');
    const base = join(roots, 'tiny-base');
    await writeTinkerTestBase(base);
    const adminKey = 'otk_test_admin_key_0123456789abcdef';
    // A Hub with no repos: a Hub name fails to load at once (404), without the network.
    hub = await startFakeHub([]);
    const config = loadConfig(
      {},
      { home, admin_key: adminKey, cpu_slots: 2, gpus: 'none', ...FAST, log_level: 'error', tinker_seq_gap_seconds: 5, model_roots: roots, hub_endpoint: hub.url },
    );
    app = await createApi({ config, worker: true });
    await ensureAdmin(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    for (const name of ['alice', 'bob']) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/users',
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ name }),
      });
      keys[name] = JSON.parse(res.body).api_key.key;
    }
    const out = await runWithSdk(
      version,
      'sdk_server_checks.py',
      [
        '--base-url',
        url,
        '--api-key',
        `tml-${keys.alice}`,
        '--other-key',
        `tml-${keys.bob}`,
        '--base-model',
        base,
        ...(process.env.TINKER_CHECKS ? ['--only', ...process.env.TINKER_CHECKS.split(',')] : []),
      ],
      SLOW,
    ).catch((error: Error) => {
      const stdout = (error as { stdout?: string }).stdout;
      if (!stdout) throw error;
      return stdout;
    });
    lines = checkLines(out);
    if (process.env.TINKER_SDK_VERBOSE) console.log(lines.map((l) => JSON.stringify(l)).join('\n'));
  }, SLOW);

  afterAll(async () => {
    await app?.close();
    await hub?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const it_ = missing ? it.skip : it;

  const result = (name: string) => checkResult(lines, name);

  it_('holds the two training clients of the session in one runner job, which shows their metrics', async () => {
    const sessionId = result('sft_loss_falls').session_id as string;
    const auth = { authorization: `Bearer ${keys.alice}` };
    const listed = JSON.parse((await app.inject({ method: 'GET', url: '/v1/jobs?kind=tinker&limit=100', headers: auth })).body).items as Array<{ id: string }>;
    const jobs = await Promise.all(listed.map(async (j) => JSON.parse((await app.inject({ method: 'GET', url: `/v1/jobs/${j.id}`, headers: auth })).body)));
    const runners = jobs.filter((j) => j.spec.session_id === sessionId);
    expect(runners).toHaveLength(1);
    const metrics = JSON.parse((await app.inject({ method: 'GET', url: `/v1/jobs/${runners[0].id}/metrics`, headers: auth })).body) as Array<{ name: string }>;
    const names = new Set(metrics.map((m) => m.name));
    expect(names).toContain('train-0/grad_norm');
    expect(names).toContain('train-1/grad_norm');
  });

  for (const name of [
    'capabilities',
    'sft_loss_falls',
    'sampling_logprobs_match_forward',
    'stop_token_and_string',
    'save_state_then_new_client_continues',
    'two_clients_one_base',
    'rl_reward_rises',
    'bad_request_raises_quickly',
    'rest_client_checkpoints',
    'checkpoint_archive_download',
    'unloadable_base_model_raises_quickly',
    'another_user_gets_404',
  ]) {
    it_(name, () => {
      result(name);
    });
  }
});
