import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { checkLines, checkResult, type CheckLine } from '../support/python-checks';
import { startTestApp, type TestApp, waitForState } from '../support/test-app';
import { folderTar, writeTinyModelFolder } from '../support/tiny-model-folder';

const PYTHON = join(process.cwd(), '.venv-clients', 'bin', 'python');
const CHECKS = join(process.cwd(), 'test', 'clients', 'openai_sdk_checks.py');
const SLOW = 180_000;

/**
 * OpenAI's official Python SDK (from PyPI, pinned in test/clients/setup-clients.sh) against a real
 * server: `completions.create` (plain, streamed, n, prompts as text and ids, logprobs, echo, stop),
 * `models.list`, `models.retrieve` (names with a `/`, which the SDK percent-encodes), chat's
 * `top_logprobs`, and the SDK's typed errors. Skips, saying so, without `.venv-clients`.
 */
describe('the openai Python SDK against the server (e2e)', () => {
  const ready = existsSync(PYTHON);
  let t: TestApp;
  let lines: CheckLine[] = [];
  let jobId: string;

  beforeAll(async () => {
    if (!ready) {
      console.log(`openai SDK: skipping: ${PYTHON} is missing (run test/clients/setup-clients.sh)`);
      return;
    }
    t = await startTestApp({ config: { model_roots: '' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    const alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
    const bob = (await t.request('POST', '/v1/users', { body: { name: 'bob' } })).body.api_key.key;
    jobId = (await t.request('POST', '/v1/jobs', { key: alice, body: { kind: 'sleep', steps: 1, step_seconds: 0 } })).body.id;
    await waitForState(t, jobId, ['succeeded']);
    const step = join(t.home, 'jobs', jobId, 'work', 'checkpoints', 'step-2');
    await writeTinyModelFolder(join(step, 'model'));
    writeFileSync(join(step, 'trainer_state.json'), JSON.stringify({ step: 2 }));
    const folder = mkdtempSync(join(tmpdir(), 'openai-sdk-'));
    await writeTinyModelFolder(folder, 5);
    const uploaded = await t.app.inject({
      method: 'POST',
      url: '/v1/models?name=mine',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/x-tar' },
      payload: await folderTar(folder),
    });
    rmSync(folder, { recursive: true, force: true });
    const model = JSON.parse(uploaded.body).id as string;
    const args = [CHECKS, '--base-url', `${url}/v1`, '--api-key', alice, '--other-key', bob, '--job', jobId, '--step', '2', '--uploaded', model];
    const out = await promisify(execFile)(PYTHON, args, { timeout: SLOW, env: { ...process.env, OPENAI_LOG: '' } }).catch((error: { stdout?: string; stderr?: string }) => {
      if (!error.stdout) throw new Error(`the SDK checks did not run: ${error.stderr ?? String(error)}`);
      return { stdout: error.stdout };
    });
    lines = checkLines(out.stdout);
  }, SLOW);
  afterAll(async () => t?.close());

  const result = (name: string) => checkResult(lines, name);

  const checks = [
    'models_list',
    'models_retrieve',
    'completions_plain',
    'completions_streaming',
    'completions_n_and_prompts',
    'completions_logprobs_echo',
    'completions_stop',
    'completions_uploaded_model',
    'chat_top_logprobs',
    'typed_errors',
  ];
  it.each(checks)('%s', (name) => {
    if (!ready) return;
    result(name);
  });

  it('reads what the server answers, field for field', () => {
    if (!ready) return;
    expect(result('models_list').ids).toContain(`job:${jobId}/step-2`);
    expect(result('models_retrieve')).toMatchObject({ owned_by: 'alice', uploaded_owned_by: 'alice' });
    expect(result('typed_errors').not_found).toContain('not found');
    expect(lines.map((l) => l.check).sort()).toEqual([...checks].sort());
  });
});
