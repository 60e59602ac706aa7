import { OpenTinkerClient } from '@opentinker/client';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliRun } from '../support/cli-process';
import { startFakeHub, type FakeHub } from '../support/fake-hub';
import { parseSse, startTestApp, type TestApp } from '../support/test-app';
import { tinyHubModelFiles } from '../support/tiny-hub-model';

const SLOW = 120_000;
const REPO = 'tiny-org/tiny-chat';

/**
 * Chat completions over Hugging Face models of the API machine's Hub cache (`model: "hf:Org/Name[@rev]"`):
 * a model `opentinker models pull` put there (against the fake Hub) is served to any user, whole and
 * streamed, through HTTP, the typed client and `opentinker chat`; a request never downloads anything.
 * Needs `npm run build` (model servers and the CLI run from dist/).
 */
describe('chat with Hub models of the server cache (model hf:Org/Name)', () => {
  let hub: FakeHub;
  let t: TestApp;
  let url: string;
  let work: string;
  let alice: string;
  let bob: string;
  let commit: string;
  const hey = [{ role: 'user' as const, content: 'hey' }];

  /** `opentinker <args>` on the API server's machine: the same data folder, so the same Hub cache. */
  function cli(args: string[], key?: string): Promise<CliRun> {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: work, OPENTINKER_HOME: t.home, HF_ENDPOINT: hub.url };
    if (key) env.OPENTINKER_API_KEY = key;
    return runCli(args, { env, cwd: work });
  }
  const chat = (key: string, body: Record<string, unknown>) => t.request('POST', '/v1/chat/completions', { key, body });

  beforeAll(async () => {
    hub = await startFakeHub([{ type: 'model', id: REPO, revisions: { main: await tinyHubModelFiles(3), v2: await tinyHubModelFiles(5) } }]);
    commit = hub.commitOf('model', REPO, 'main');
    t = await startTestApp({ worker: false, config: { hub_endpoint: hub.url } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    work = mkdtempSync(join(tmpdir(), 'hub-chat-'));
    alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
    bob = (await t.request('POST', '/v1/users', { body: { name: 'bob' } })).body.api_key.key;
  }, SLOW);
  afterAll(async () => {
    await t?.close();
    await hub?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it(
    'answers 404 naming the pull for a model not in the cache, and never downloads it',
    async () => {
      hub.requests.length = 0;
      for (const stream of [false, true]) {
        const res = await chat(alice, { model: `hf:${REPO}`, messages: hey, stream });
        expect(res.status).toBe(404);
        expect(res.headers['content-type']).toContain('application/json');
        expect(res.body).toMatchObject({
          code: 'OT_ERR_MODEL_NOT_FOUND',
          field: 'model',
          error: { type: 'not_found_error', code: 'OT_ERR_MODEL_NOT_FOUND', param: 'model' },
        });
        expect(res.body.message).toContain(`hf:${REPO} is not in this server's Hub cache, and chat never downloads`);
        expect(res.body.message).toContain(`opentinker models pull ${REPO}`);
      }
      expect(hub.requests).toEqual([]);
      expect(existsSync(join(t.home, 'hub', 'models--tiny-org--tiny-chat'))).toBe(false);
    },
    SLOW,
  );

  it(
    'serves a model pulled into the cache to any user, whole and streamed, answers naming its commit',
    async () => {
      const pulled = await cli(['models', 'pull', REPO]);
      expect(pulled.code).toBe(0);
      hub.requests.length = 0;

      const request = { model: `hf:${REPO}`, messages: hey, max_tokens: 6, seed: 2, logprobs: true };
      const whole = await chat(alice, request);
      expect(whole.status).toBe(200);
      expect(whole.body).toMatchObject({ object: 'chat.completion', model: `hf:${REPO}@${commit}`, choices: [{ index: 0, message: { role: 'assistant' } }] });
      const answer: string = whole.body.choices[0].message.content;
      expect(whole.body.usage.completion_tokens).toBeGreaterThan(0);

      const streamed = await chat(bob, { ...request, stream: true, stream_options: { include_usage: true } });
      expect(streamed.status).toBe(200);
      expect(streamed.headers['content-type']).toContain('text/event-stream');
      const blocks = streamed.text.split('\n\n').filter(Boolean);
      expect(blocks.at(-1)).toBe('data: [DONE]');
      const chunks = parseSse(blocks.slice(0, -1).join('\n\n') + '\n\n').map((e) => e.data);
      for (const c of chunks) expect(c).toMatchObject({ object: 'chat.completion.chunk', model: `hf:${REPO}@${commit}` });
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(answer);
      expect(chunks.at(-1).usage).toEqual(whole.body.usage);

      // The branch, the commit and the admin: the same model, the same answer.
      for (const [key, model] of [
        [alice, `hf:${REPO}@main`],
        [bob, `hf:${REPO}@${commit}`],
        [t.adminKey, ` hf:${REPO}`],
      ]) {
        const res = await chat(key, { ...request, model });
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ model: `hf:${REPO}@${commit}`, choices: [{ message: { content: answer } }] });
      }
      // Chat asked the Hub nothing: names resolve through the cache.
      expect(hub.requests).toEqual([]);

      // A revision pulled later is served at once, from its own snapshot.
      await expect(chat(alice, { ...request, model: `hf:${REPO}@v2` })).resolves.toMatchObject({ status: 404 });
      expect((await cli(['models', 'pull', `${REPO}@v2`])).code).toBe(0);
      const v2 = await chat(alice, { ...request, model: `hf:${REPO}@v2` });
      expect(v2.status).toBe(200);
      expect(v2.body.model).toBe(`hf:${REPO}@${hub.commitOf('model', REPO, 'v2')}`);
    },
    SLOW,
  );

  it(
    "lists the cached models after the caller's checkpoints, in OpenAI's list shape",
    async () => {
      const res = await t.request('GET', '/v1/models', { key: bob });
      expect(res.status).toBe(200);
      const v2 = hub.commitOf('model', REPO, 'v2');
      const entry = (sha: string, revisions: string[]) => ({
        id: `hf:${REPO}@${sha}`,
        object: 'model',
        created: expect.any(Number),
        owned_by: 'tiny-org',
        repo: REPO,
        commit: sha,
        revisions,
      });
      expect(res.body).toEqual({ object: 'list', data: expect.arrayContaining([entry(commit, ['main']), entry(v2, ['v2'])]) });
      expect(res.body.data).toHaveLength(2);
      expect(Math.abs(res.body.data[0].created - Date.now() / 1000)).toBeLessThan(600);
      // Every id listed is one chat takes.
      for (const m of res.body.data) expect((await chat(bob, { model: m.id, messages: hey, max_tokens: 2 })).status).toBe(200);
    },
    SLOW,
  );

  it(
    'refuses malformed Hub names with 400 naming the field, in both error shapes',
    async () => {
      for (const model of ['hf:', 'hf:../../etc', 'hf:a/b/c', `hf:${REPO}@..`, `hf:${REPO}@`, 'hf:bad name/x', 'hf:datasets/openai/gsm8k', `hf:${REPO}@main\u0000`]) {
        for (const stream of [false, true]) {
          const res = await chat(alice, { model, messages: hey, stream });
          expect({ model, status: res.status }).toEqual({ model, status: 400 });
          expect(res.body).toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'model', error: { type: 'invalid_request_error', code: 'OT_ERR_VALIDATION', param: 'model' } });
        }
      }
      expect((await chat(alice, { model: 'hf:datasets/openai/gsm8k', messages: hey })).body.message).toContain('names a dataset repo');
      expect((await chat(alice, { model: 'hf:../../etc', messages: hey })).body.message).toContain('is not a Hugging Face repo');
    },
    SLOW,
  );

  it(
    "works through the typed client's chat() and models(), and opentinker chat",
    async () => {
      const client = new OpenTinkerClient({ baseUrl: url, apiKey: alice });
      const whole = await client.chat({ model: `hf:${REPO}`, messages: hey, max_tokens: 6, seed: 2 });
      expect(whole.model).toBe(`hf:${REPO}@${commit}`);
      let text = '';
      for await (const chunk of client.chat({ model: `hf:${REPO}`, messages: hey, max_tokens: 6, seed: 2, stream: true })) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe(whole.choices[0].message.content);
      expect((await client.models()).data.map((m) => m.id)).toContain(`hf:${REPO}@${commit}`);
      await expect(client.chat({ model: 'hf:nobody/nothing', messages: hey })).rejects.toMatchObject({ code: 'OT_ERR_MODEL_NOT_FOUND', field: 'model', status: 404 });

      const asJson = await cli(['chat', `hf:${REPO}`, '--message', 'hey', '--max-tokens', '6', '--seed', '2', '--json', '--url', url], alice);
      expect(asJson).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(asJson.stdout)).toMatchObject({ model: `hf:${REPO}@${commit}`, choices: [{ message: { content: whole.choices[0].message.content } }] });
      const streamed = await cli(['chat', `hf:${REPO}@main`, '--message', 'hey', '--max-tokens', '6', '--seed', '2', '--url', url], alice);
      expect(streamed.code).toBe(0);
      expect(streamed.stdout).toBe(`${whole.choices[0].message.content}\n`);
      const bad = await cli(['chat', 'hf:../x', '--message', 'hey', '--url', url], alice);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('is not a Hugging Face repo');
    },
    SLOW,
  );
});
