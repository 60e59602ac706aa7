import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { isModelFile } from '../../src/hub/hub-cache';
import { startFakeHub, type FakeHub } from '../support/fake-hub';
import { waitForState } from '../support/test-app';
import { tinyHubModelFiles } from '../support/tiny-hub-model';
import { startTenants, type Tenants } from './tenants';

const SLOW = 240_000;
const ALICE_TOKEN = 'hf_alice_may_read_private_secret';
const BOB_TOKEN = 'hf_bob_may_read_private_secret_too';
const OPERATOR_TOKEN = 'hf_the_operators_own_token';
const ENDED = ['succeeded', 'failed', 'cancelled'];

function inferenceSpec(model: Record<string, unknown>): Record<string, unknown> {
  return {
    kind: 'inference',
    environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 2 } },
    model: { chat_template: 'plain', ...model },
    rollout: { max_new_tokens: 2 },
    num_tasks: 2,
    samples_per_task: 1,
    batch_size: 2,
  };
}

/** Runs a job as `key` to its end. */
async function run(s: Tenants, key: string, model: Record<string, unknown>): Promise<{ id: string; state: string; error: string | null }> {
  const res = await s.t.request('POST', '/v1/jobs', { key, body: inferenceSpec(model) });
  expect(res.status).toBe(201);
  return waitForState(s.t, res.body.id, ENDED, 120_000);
}

async function hubIds(s: Tenants, key: string): Promise<string[]> {
  const res = await s.t.request('GET', '/v1/models', { key });
  expect(res.status).toBe(200);
  return (res.body.data as Array<{ id: string }>).map((m) => m.id).filter((id) => id.startsWith('hf:'));
}

/**
 * Attacks 2, 5 and part of 6 of the second hostile-tenant round: the operator's `HF_TOKEN` fetched any
 * repo a tenant named into the shared cache, every tenant saw and used what any other had pulled, and
 * Hub downloads counted toward no one's storage.
 */
describe("security: a tenant's Hub access is their own", () => {
  let hub: FakeHub;
  let s: Tenants;
  let secret: string;
  const savedToken = process.env.HF_TOKEN;

  beforeAll(async () => {
    const files = await tinyHubModelFiles();
    hub = await startFakeHub([
      { type: 'model', id: 'private/secret', revisions: { main: files }, tokens: [ALICE_TOKEN, BOB_TOKEN, OPERATOR_TOKEN] },
      { type: 'model', id: 'operator/listed', revisions: { main: await tinyHubModelFiles(5) }, tokens: [OPERATOR_TOKEN] },
    ]);
    secret = hub.commitOf('model', 'private/secret', 'main');
    // The worker's own token, as an operator sets it for gated base models; only operator/* is listed.
    process.env.HF_TOKEN = OPERATOR_TOKEN;
    s = await startTenants({ worker: true, config: { hub_endpoint: hub.url, hub_token_repos: ['operator/*'] } });
  }, SLOW);
  afterAll(async () => {
    if (savedToken === undefined) delete process.env.HF_TOKEN;
    else process.env.HF_TOKEN = savedToken;
    await s?.t.close();
    await hub?.close();
  });

  it(
    "never fetches an unlisted repo with the operator's token on a tenant's behalf; a listed one is fetched with it and shared",
    async () => {
      hub.requests.length = 0;
      const job = await run(s, s.alice, { path: 'hf:private/secret' });
      expect(job.state).toBe('failed');
      expect(job.error).toMatch(/model\.path hf:private\/secret: no such model repo or revision on http:\/\/127\.0\.0\.1:\d+, or not one this job may read/);
      const asked = hub.requests.filter((r) => r.path.includes('private/secret'));
      expect(asked.length).toBeGreaterThan(0);
      expect(asked.filter((r) => r.auth !== null)).toEqual([]);
      expect(existsSync(join(s.t.home, 'hub', 'models--private--secret', 'blobs'))).toBe(false);

      hub.requests.length = 0;
      expect((await run(s, s.alice, { path: 'hf:operator/listed' })).state).toBe('succeeded');
      expect(hub.requests.filter((r) => r.path.includes('operator/listed')).every((r) => r.auth === `Bearer ${OPERATOR_TOKEN}`)).toBe(true);
      const listed = `hf:operator/listed@${hub.commitOf('model', 'operator/listed', 'main')}`;
      expect(await hubIds(s, s.bob)).toEqual([listed]);
    },
    SLOW,
  );

  it(
    'keeps what A fetched with her own token hers: B cannot list it, chat with it or load it without proving access with her own token',
    async () => {
      const mine = await run(s, s.alice, { path: 'hf:private/secret', hf_token: ALICE_TOKEN });
      expect(mine.error).toBeNull();
      expect(mine.state).toBe('succeeded');
      const id = `hf:private/secret@${secret}`;
      expect(await hubIds(s, s.alice)).toContain(id);
      // The token is nowhere in what A (or the admin) can read, and gone with the job.
      for (const res of [await s.t.request('GET', `/v1/jobs/${mine.id}`, { key: s.alice }), await s.t.request('GET', `/v1/jobs/${mine.id}/logs`)]) {
        expect(res.text).not.toContain(ALICE_TOKEN);
      }
      expect(await s.t.app.get(DataSource).query('SELECT path FROM job_secrets WHERE job_id = ?', [mine.id])).toEqual([]);

      // B: not listed, and chat answers as for a repo nobody pulled.
      expect(await hubIds(s, s.bob)).not.toContain(id);
      for (const model of ['hf:private/secret', id, 'hf:private/secret@main']) {
        const res = await s.t.request('POST', '/v1/chat/completions', { key: s.bob, body: { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 } });
        expect({ model, status: res.status, code: res.body.code }).toEqual({ model, status: 404, code: 'OT_ERR_MODEL_NOT_FOUND' });
        expect(res.body.message).toContain("is not in this server's Hub cache");
      }
      // A may chat with it.
      const chat = await s.t.request('POST', '/v1/chat/completions', { key: s.alice, body: { model: id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 } });
      expect(chat.status).toBe(200);

      // B's job naming the cached commit, without a token or with a wrong one, reads like a missing repo.
      for (const model of [{ path: id }, { path: id, hf_token: 'hf_guess' }]) {
        const theirs = await run(s, s.bob, model);
        expect(theirs.state).toBe('failed');
        expect(theirs.error).toMatch(/no such model repo or revision on http:\/\/127\.0\.0\.1:\d+, or not one this job may read/);
      }
      // With her own token the Hub lets her: then it is hers too.
      expect((await run(s, s.bob, { path: id, hf_token: BOB_TOKEN })).state).toBe('succeeded');
      expect(await hubIds(s, s.bob)).toContain(id);
    },
    SLOW,
  );
});

describe("security: Hub downloads count toward the tenant's storage quota", () => {
  let hub: FakeHub;
  let s: Tenants;
  let modelBytes: number;

  beforeAll(async () => {
    const one = await tinyHubModelFiles(3);
    modelBytes = Object.entries(one)
      .filter(([path]) => isModelFile(path))
      .reduce((a, [, data]) => a + data.length, 0);
    hub = await startFakeHub([
      { type: 'model', id: 'tiny-org/one', revisions: { main: one } },
      { type: 'model', id: 'tiny-org/two', revisions: { main: await tinyHubModelFiles(5) } },
    ]);
    // Room for one tiny model and a little more.
    s = await startTenants({ worker: true, config: { hub_endpoint: hub.url, storage_quota_bytes: modelBytes + 1000 } });
  }, SLOW);
  afterAll(async () => {
    await s?.t.close();
    await hub?.close();
  });

  it(
    'refuses a download past the quota before its first byte, names the setting, and charges a public snapshot to the tenant who downloaded it',
    async () => {
      expect((await run(s, s.alice, { path: 'hf:tiny-org/one' })).state).toBe('succeeded');
      hub.requests.length = 0;
      const over = await run(s, s.alice, { path: 'hf:tiny-org/two' });
      expect(over.state).toBe('failed');
      expect(over.error).toMatch(
        /model\.path hf:tiny-org\/two needs .* from the Hub, more than your storage quota has left \(\d+ bytes of \d+: operator setting storage_quota_bytes/,
      );
      expect(hub.requests.filter((r) => r.path.startsWith('/cdn/') || r.path.includes('/resolve/'))).toEqual([]);
      expect(existsSync(join(s.t.home, 'hub', 'models--tiny-org--two', 'blobs'))).toBe(false);

      // B has her own quota; once she downloaded it, A uses the cached public snapshot at no cost.
      expect((await run(s, s.bob, { path: 'hf:tiny-org/two' })).state).toBe('succeeded');
      expect((await run(s, s.alice, { path: 'hf:tiny-org/two' })).state).toBe('succeeded');
    },
    SLOW,
  );
});
