import { ByteTokenizer, CHATML_TEMPLATE, ChatTemplate, sample, saveHfModelDir } from '@opentinker/engine';
import type { ChatMessage } from '@opentinker/engine';
import type { Message } from '@opentinker/env-sdk';
import * as tf from '@tensorflow/tfjs-core';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelSpec } from './rl-spec';
import type { RunnerPaths } from '../runner/run-context';
import { loadPolicy, parseJobModelRef, resolveJobModelDir } from './policy';

const home = mkdtempSync(join(tmpdir(), 'ot-policy-'));
const paths: RunnerPaths = {
  hostRoot: process.cwd(),
  pluginsDir: join(home, 'plugins'),
  home,
  jobsDir: join(home, 'jobs'),
  datasetsDir: join(home, 'datasets'),
  modelRoots: [home],
};
const ctx = { paths, log: () => undefined };

afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('loadPolicy', () => {
  it('renders observations exactly as a full ChatML re-render of the conversation', async () => {
    const policy = await loadPolicy(modelSpec.parse({ preset: 'tiny-char' }), ctx);
    try {
      const first: Message[] = [
        { role: 'system', content: 'Play.' },
        { role: 'user', content: 'Move?' },
      ];
      const prompt = policy.renderPrompt(first);
      const turn = [...policy.tokenizer.encode('4,4'), policy.stopTokenIds[0]];
      const obs: Message[] = [{ role: 'user', content: 'Board: x.' }];
      const template = new ChatTemplate(CHATML_TEMPLATE);
      const chat = (messages: Message[]): ChatMessage[] => messages.map((m) => ({ ...m }));
      const full = policy.tokenizer.encode(template.render(chat([...first, { role: 'assistant', content: '4,4' }, ...obs]), { addGenerationPrompt: true }));
      expect([...prompt, ...turn, ...policy.renderObservation(obs)]).toEqual(full);
      expect(prompt).toEqual(policy.tokenizer.encode(template.render(chat(first), { addGenerationPrompt: true })));

      // A turn cut without its stop token gets the template's end of message before the observation.
      const cut = policy.tokenizer.encode('4,4');
      const tool: Message[] = [{ role: 'tool', content: '8' }];
      const fullTool = policy.tokenizer.encode(template.render(chat([...first, { role: 'assistant', content: '4,4' }, ...tool]), { addGenerationPrompt: true }));
      expect([...prompt, ...cut, ...policy.renderObservation(tool, cut[cut.length - 1])]).toEqual(fullTool);
    } finally {
      policy.dispose();
    }
  });

  it('plain: BOS, then the contents joined with nothing between them', async () => {
    const policy = await loadPolicy(modelSpec.parse({ preset: 'tiny-char', chat_template: 'plain' }), ctx);
    try {
      const tok = new ByteTokenizer();
      expect(policy.renderPrompt([{ role: 'user', content: '12+3=' }])).toEqual([tok.bosId, ...tok.encode('12+3=')]);
      expect(policy.renderObservation([{ role: 'user', content: ' ok' }])).toEqual(tok.encode(' ok'));
      expect(policy.chatTemplate.name).toBe('plain');
    } finally {
      policy.dispose();
    }
  });

  it('presets get the byte vocabulary, so every sampled id decodes; the seed fixes the weights', async () => {
    const before = tf.memory().numTensors;
    const a = await loadPolicy(modelSpec.parse({ preset: 'tiny-test', seed: 3 }), ctx);
    const b = await loadPolicy(modelSpec.parse({ preset: 'tiny-test', seed: 3 }), ctx);
    expect(a.config.vocab_size).toBe(new ByteTokenizer().vocabSize);
    expect(a.stopTokenIds).toEqual([258]);
    expect([...a.model.exportWeights().get('model.embed_tokens.weight')!.data.slice(0, 8)]).toEqual([
      ...b.model.exportWeights().get('model.embed_tokens.weight')!.data.slice(0, 8),
    ]);
    a.dispose();
    b.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('model.context_length lengthens a preset with no new weights: it samples past the 128 tokens of tiny-char', async () => {
    const base = await loadPolicy(modelSpec.parse({ preset: 'tiny-char', seed: 2 }), ctx);
    const long = await loadPolicy(modelSpec.parse({ preset: 'tiny-char', seed: 2, context_length: 512 }), ctx);
    try {
      expect(base.contextLength).toBe(128);
      expect(long.contextLength).toBe(512);
      expect(long.config.max_position_embeddings).toBe(512);
      expect(long.source).toContain('context 512');
      expect(long.model.exportWeights().size).toBe(base.model.exportWeights().size);
      const prompt = Array.from({ length: 200 }, (_, i) => 97 + (i % 26));
      const [out] = sample(long.model, [prompt], { maxNewTokens: 8, temperature: 0, seed: 0 });
      expect(out.tokens.length).toBeGreaterThan(0);
      expect(() => sample(base.model, [prompt], { maxNewTokens: 8, temperature: 0, seed: 0 })).toThrow(/max_position_embeddings 128/);
    } finally {
      base.dispose();
      long.dispose();
    }
  });

  it('model.context_length is refused for a model folder, naming the field', () => {
    const result = modelSpec.safeParse({ path: './models/qwen', context_length: 4096 });
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((i) => i.path)).toEqual([['context_length']]);
    expect(result.error!.issues[0].message).toMatch(/presets only/);
    expect(modelSpec.safeParse({ preset: 'tiny-char', context_length: 8 }).success).toBe(false);
  });

  it('refuses an unknown preset and a folder that is not a model', async () => {
    await expect(loadPolicy(modelSpec.parse({ preset: 'nope' }), ctx)).rejects.toThrow(/model\.preset: unknown preset "nope" \(known: tiny-char/);
    const empty = join(home, 'empty');
    mkdirSync(empty, { recursive: true });
    await expect(loadPolicy(modelSpec.parse({ path: empty }), ctx)).rejects.toThrow(/is not a model folder/);
    writeFileSync(join(empty, 'config.json'), '{"model_type":"gpt2"}');
    await expect(loadPolicy(modelSpec.parse({ path: empty }), ctx)).rejects.toThrow(/^model\.path/);
  });

  it('resolves job:<id> to the latest complete checkpoint and loads its folder with its template', async () => {
    const jobId = '11111111-2222-3333-4444-555555555555';
    const checkpoints = join(paths.jobsDir, jobId, 'work', 'checkpoints');
    await expect(loadPolicy(modelSpec.parse({ path: `job:${jobId}` }), ctx)).rejects.toThrow(/has no checkpoints/);
    const source = await loadPolicy(modelSpec.parse({ preset: 'tiny-char', chat_template: 'plain' }), ctx);
    for (const step of [2, 10]) {
      await saveHfModelDir(join(checkpoints, `step-${step}`, 'model'), {
        config: source.config,
        weights: source.model.exportWeights(),
        tokenizer: source.tokenizer,
        chatTemplate: source.chatTemplate.source,
      });
    }
    mkdirSync(join(checkpoints, 'step-20.tmp', 'model'), { recursive: true });
    expect(await resolveJobModelDir(parseJobModelRef(`job:${jobId}`)!, paths.jobsDir)).toBe(join(checkpoints, 'step-10', 'model'));
    await expect(resolveJobModelDir(parseJobModelRef(`job:${jobId}/step-3`)!, paths.jobsDir)).rejects.toThrow(/available: step-2, step-10/);
    expect(() => parseJobModelRef('job:../../etc')).toThrow(/expected job:<job id>/);

    const loaded = await loadPolicy(modelSpec.parse({ path: `job:${jobId}/step-2` }), ctx);
    try {
      expect(loaded.source).toContain('step-2');
      expect(loaded.chatTemplate.name).toBe('folder');
      const messages: Message[] = [{ role: 'user', content: '1+1=' }];
      expect(loaded.renderPrompt(messages)).toEqual(source.renderPrompt(messages));
      expect(loaded.stopTokenIds).toContain(258);
    } finally {
      loaded.dispose();
      source.dispose();
    }
  });
});
