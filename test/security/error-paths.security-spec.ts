import { ByteTokenizer, CHATML_TEMPLATE, initWeights, modelPreset, saveHfModelDir } from '@opentinker/engine';
import { realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitForState } from '../support/test-app';
import { startTenants, type Tenants } from './tenants';

/**
 * Issue 23: a chat error showed the server's absolute data path. Every error answer goes through one
 * redaction (the error filter): the data folder reads `$OPENTINKER_HOME`, the installation `<install>`.
 * Needs `npm run build` (the model server runs from dist/).
 */
describe('security: no host path in any error answer', () => {
  let s: Tenants;
  beforeAll(async () => {
    s = await startTenants({ worker: true });
  });
  afterAll(() => s.t.close());

  /** A finished job of A's with a checkpoint at step 1 whose model folder `breakIt` spoils. */
  const brokenCheckpoint = async (breakIt: (dir: string) => void | Promise<void>) => {
    const job = await s.t.request('POST', '/v1/jobs', { key: s.alice, body: { kind: 'sleep', steps: 1, step_seconds: 0 } });
    await waitForState(s.t, job.body.id, ['succeeded']);
    const dir = join(s.t.home, 'jobs', job.body.id, 'work', 'checkpoints', 'step-1', 'model');
    const config = { ...modelPreset('tiny-char'), max_position_embeddings: 64 };
    await saveHfModelDir(dir, { config, weights: initWeights(config, 3), tokenizer: new ByteTokenizer(), chatTemplate: CHATML_TEMPLATE });
    await breakIt(dir);
    return job.body.id as string;
  };

  /** The server's folders as a tenant must never read them. */
  const hostFolders = () => [s.t.home, realpathSync(s.t.home), process.cwd()];

  it("a chat with a broken checkpoint says what is wrong with it, naming $OPENTINKER_HOME and never the server's path", async () => {
    const broken = [
      await brokenCheckpoint((dir) => writeFileSync(join(dir, 'config.json'), '{"model_type":"gpt-neo"}')),
      await brokenCheckpoint((dir) => rmSync(join(dir, 'model.safetensors'))),
      await brokenCheckpoint((dir) => writeFileSync(join(dir, 'model.safetensors'), 'garbage')),
      await brokenCheckpoint((dir) => rmSync(join(dir, 'tokenizer.json'))),
    ];
    for (const model of broken) {
      for (const stream of [false, true]) {
        const res = await s.t.request('POST', '/v1/chat/completions', { key: s.alice, body: { model, messages: [{ role: 'user', content: 'x' }], stream } });
        expect([model, stream, res.status, res.body.code]).toEqual([model, stream, 422, 'OT_ERR_MODEL_LOAD_FAILED']);
        expect(res.body.message).toContain(`$OPENTINKER_HOME/jobs/${model}/`);
        for (const folder of hostFolders()) expect(res.text).not.toContain(folder);
      }
    }
  }, 120_000);
});
