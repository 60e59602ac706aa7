import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, TestApp, waitForState } from '../support/test-app';

/**
 * A model of a real architecture through the whole service: a random-weight checkpoint of
 * Qwen2.5-0.5B's shape (494M parameters, 1 GB of bf16, made by the engine's make-checkpoint.cjs) under
 * an operator's model root, trained with LoRA by a session's train_step (its base memory-mapped outside
 * the engine's heap), checkpointed, and answering an OpenAI-style chat completion from that checkpoint.
 * Tiny batches and a few tokens: the point is that nothing on the way assumes a toy model.
 */
const SLOW = 600_000;

describe('a Qwen2.5-0.5B-shaped checkpoint end to end', () => {
  let t: TestApp;
  let roots: string;
  let dir: string;

  beforeAll(async () => {
    roots = mkdtempSync(join(tmpdir(), 'opentinker-models-'));
    dir = join(roots, 'qwen2.5-0.5b-random');
    execFileSync(process.execPath, [join(process.cwd(), 'libs', 'engine', 'bench', 'make-checkpoint.cjs'), '--shape', 'qwen2.5-0.5b', '--out', dir], { stdio: 'pipe' });
    t = await startTestApp({ config: { model_roots: [roots] } });
  }, SLOW);
  afterAll(async () => {
    await t?.close();
    rmSync(roots, { recursive: true, force: true });
  });

  const call = (id: string, body: unknown) => t.request('POST', `/v1/jobs/${id}/calls?wait_seconds=300`, { body });

  it(
    'runs a LoRA train_step in a session, saves a checkpoint, and serves a chat completion from it',
    async () => {
      const job = await t.request('POST', '/v1/jobs', {
        body: {
          kind: 'session',
          environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 2 } },
          model: { path: dir, lora: { rank: 8 } },
          algorithm: { rollout_n: 2 },
          rollout: { max_new_tokens: 3 },
          optim: { lr: 1e-4 },
          batch_size: 1,
          val_batch_size: 2,
          resources: { cpu_slots: 2 },
        },
      });
      expect(job.status).toBe(201);
      const id = job.body.id as string;

      const step = await call(id, { call_id: 's1', op: 'train_step', args: { batch_size: 1 } });
      expect(step.body).toMatchObject({ error: null, state: 'succeeded', result: { step: 1 } });
      expect(typeof step.body.result['reward/mean']).toBe('number');

      const saved = await call(id, { call_id: 'c1', op: 'save_checkpoint' });
      expect(saved.body).toMatchObject({ state: 'succeeded', result: { step: 1, model_path: `job:${id}/step-1` } });
      const checkpoint = join(t.home, 'jobs', id, 'work', 'checkpoints', 'step-1');
      expect(existsSync(join(checkpoint, 'adapter', 'adapter_model.safetensors'))).toBe(true);
      expect(existsSync(join(checkpoint, 'model', 'config.json'))).toBe(true);
      expect((await call(id, { call_id: 'x1', op: 'close' })).body.state).toBe('succeeded');
      expect((await waitForState(t, id, ['succeeded', 'failed', 'cancelled'], 60_000)).state).toBe('succeeded');

      const chat = await t.request('POST', '/v1/chat/completions', {
        body: { model: `${id}/step-1`, messages: [{ role: 'user', content: '2+2=' }], max_tokens: 3, temperature: 0, logprobs: true },
      });
      expect(chat.status).toBe(200);
      expect(chat.body).toMatchObject({ object: 'chat.completion', model: `job:${id}/step-1` });
      expect(chat.body.usage.completion_tokens).toBeGreaterThan(0);
      expect(chat.body.usage.completion_tokens).toBeLessThanOrEqual(3);
      expect(chat.body.choices[0].logprobs.content.length).toBe(chat.body.usage.completion_tokens);
      for (const lp of chat.body.choices[0].logprobs.content) expect(lp.logprob).toBeLessThanOrEqual(0);

      // The job's log says where the weights were: outside the engine's heap.
      const log = await t.request('GET', `/v1/jobs/${id}/logs`);
      expect(log.text).toMatch(/weights \d+ MB outside the heap \(frozen\)/);
    },
    SLOW,
  );
});
