import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliRun } from '../support/cli-process';
import { startTestApp, type TestApp } from '../support/test-app';
import { writeTinyModelFolder } from '../support/tiny-model-folder';

const SLOW = 180_000;

/**
 * The seed's `opentinker infer math model_path=./my-model …` against a server that reads no folder of
 * anyone's (no model_roots): the CLI uploads the folder (once per content) and the job names model:<id>.
 */
describe('model_path=<local folder> against a server without model_roots (e2e)', () => {
  let t: TestApp;
  let url: string;
  let work: string;
  let key: string;

  function cli(args: string[]): Promise<CliRun> {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: work, OPENTINKER_URL: url, OPENTINKER_API_KEY: key };
    return runCli(args, { env, cwd: work });
  }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'cli-model-upload-'));
    await writeTinyModelFolder(join(work, 'my-model'));
    // What a model folder downloaded from the Hub also has, and an upload leaves out.
    writeFileSync(join(work, 'my-model', 'README.md'), '# my model\n');
    mkdirSync(join(work, 'data'));
    const rows = ['1+1=', '2+3=', '4+4='].map((q, i) => JSON.stringify({ prompt: [{ role: 'user', content: q }], ground_truth: String([2, 5, 8][i]) }));
    writeFileSync(join(work, 'data', 'test.jsonl'), rows.join('\n') + '\n');
    t = await startTestApp({ config: { model_roots: '' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    key = (await t.request('POST', '/v1/users', { body: { name: 'seed-user' } })).body.api_key.key;
  }, SLOW);
  afterAll(async () => {
    await t?.close();
    rmSync(work, { recursive: true, force: true });
  });

  const INFER = ['infer', 'math', 'model_path=./my-model', 'data_path=data/test.jsonl', 'max_samples=2', 'max_new_tokens=3', 'output_path=out/results.jsonl'];

  it(
    'uploads the folder, runs the job on model:<id>, and uploads the same folder only once',
    async () => {
      const first = await cli(INFER);
      expect(first.code).toBe(0);
      const id = /Uploaded \S+my-model as (model:[0-9a-f-]{36})\./.exec(first.stdout)?.[1];
      expect(id).toBeDefined();
      expect(first.stderr).toContain('not uploaded from');
      expect(first.stderr).toContain('README.md');
      const jobId = /^Submitted inference job ([0-9a-f-]{36})\.$/m.exec(first.stdout)?.[1];
      const job = (await t.request('GET', `/v1/jobs/${jobId}`, { key })).body;
      expect(job).toMatchObject({ state: 'succeeded', spec: { model: { path: id } } });
      expect(first.stdout).toContain('Saved results.jsonl to out/results.jsonl');

      const second = await cli(INFER);
      expect(second.code).toBe(0);
      expect(second.stdout).toContain(`Using ${id}:`);
      expect(second.stdout).not.toMatch(/Upload(ing|ed) \S+my-model/);
      const models = (await t.request('GET', '/v1/models', { key })).body.data.filter((m: { id: string }) => m.id.startsWith('model:'));
      expect(models.map((m: { id: string }) => m.id)).toEqual([id]);

      // train reads model_path the same way.
      const train = await cli(['train', 'math', 'model_path=./my-model', 'data_path=data/test.jsonl', 'total_steps=1', 'batch_size=2', 'lora.lora_rank=2', '--no-watch', '--json']);
      expect(train.code).toBe(0);
      expect(JSON.parse(train.stdout).spec.model).toMatchObject({ path: id });
      await t.request('POST', `/v1/jobs/${JSON.parse(train.stdout).id}/cancel`, { key });
    },
    SLOW,
  );
});
