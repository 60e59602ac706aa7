import { ByteTokenizer, CHATML_TEMPLATE, modelPreset, saveHfModelDir, weightSpecs } from '@opentinker/engine';
import type { ModelConfig, NamedWeights } from '@opentinker/engine';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPolicy, Policy } from './policy';
import { generateChat, GenerationError } from './generation';
import type { GenerateRequest, TokenLogprob } from './sampling-schemas';

/** A byte-level model that always predicts `favourite` (constant hidden state, a head that prefers it). */
function fixedModel(favourite: number): { config: ModelConfig; weights: NamedWeights } {
  const config: ModelConfig = {
    ...modelPreset('tiny-char'),
    hidden_size: 16,
    intermediate_size: 32,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 2,
    tie_word_embeddings: false,
    max_position_embeddings: 48,
  };
  const weights: NamedWeights = new Map();
  for (const spec of weightSpecs(config)) {
    const data = new Float32Array(spec.shape.reduce((a, b) => a * b, 1));
    if (spec.kind === 'norm') data.fill(1);
    if (spec.name === 'model.embed_tokens.weight') for (let i = 0; i < data.length; i++) data[i] = 1 + (i % 16) / 16;
    if (spec.name === 'lm_head.weight') {
      for (let i = 0; i < data.length; i++) data[i] = ((i * 7) % 5) / 50;
      for (let j = 0; j < 16; j++) data[favourite * 16 + j] = 0.8;
    }
    weights.set(spec.name, { shape: [...spec.shape], data });
  }
  return { config, weights };
}

const req = (o: Partial<GenerateRequest> = {}): GenerateRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  n: 1,
  temperature: 0,
  topP: 1,
  maxTokens: 5,
  stop: [],
  seed: 1,
  logprobs: false,
  stream: false,
  ...o,
});

describe('generateChat', () => {
  let tmp: string;
  let alwaysA: Policy;
  let alwaysEos: Policy;
  const log = () => undefined;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'generation-'));
    const tokenizer = new ByteTokenizer();
    await saveHfModelDir(join(tmp, 'a'), { ...fixedModel(97), tokenizer, chatTemplate: CHATML_TEMPLATE });
    await saveHfModelDir(join(tmp, 'eos'), { ...fixedModel(258), tokenizer, chatTemplate: CHATML_TEMPLATE });
    const paths = { hostRoot: tmp, pluginsDir: tmp, home: tmp, jobsDir: tmp, datasetsDir: tmp, modelRoots: [tmp] };
    alwaysA = await loadPolicy({ path: join(tmp, 'a'), chat_template: 'auto', seed: 0 }, { paths, log });
    alwaysEos = await loadPolicy({ path: join(tmp, 'eos'), chat_template: 'auto', seed: 0 }, { paths, log });
  });
  afterAll(() => {
    alwaysA?.dispose();
    alwaysEos?.dispose();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('renders the chat template, samples to max_tokens and reports token log-probs', () => {
    const r = generateChat(alwaysA, req({ logprobs: true, n: 2 }));
    expect(r.promptTokens).toBe(alwaysA.renderPrompt([{ role: 'user', content: 'hi' }]).length);
    expect(r.choices).toHaveLength(2);
    for (const c of r.choices) {
      expect(c).toMatchObject({ text: 'aaaaa', finishReason: 'length', completionTokens: 5 });
      expect(c.logprobs).toHaveLength(5);
      for (const lp of c.logprobs!) {
        expect(lp.token).toBe('a');
        expect(lp.bytes).toEqual([97]);
        expect(lp.logprob).toBeLessThan(0);
        expect(lp.logprob).toBeGreaterThan(-1);
      }
    }
  });

  it('ends at the stop token, which is counted but not shown', () => {
    const r = generateChat(alwaysEos, req({ logprobs: true }));
    expect(r.choices[0]).toEqual({ text: '', finishReason: 'stop', completionTokens: 1, logprobs: [] });
  });

  it('cuts at a stop string and never streams a piece of it', () => {
    const deltas: string[] = [];
    const r = generateChat(alwaysA, req({ maxTokens: 10, stop: ['zz', 'aaa'], stream: true }), (_, text) => deltas.push(text));
    expect(r.choices[0]).toMatchObject({ text: '', finishReason: 'stop', completionTokens: 3 });
    expect(deltas.join('')).toBe('');
  });

  it('streams text as it is sampled; the deltas add up to the answer, log-probs come with the last', () => {
    const deltas: { index: number; text: string; logprobs: TokenLogprob[] | null }[] = [];
    const r = generateChat(alwaysA, req({ n: 2, stream: true, logprobs: true, stop: ['ab'] }), (index, text, logprobs) => deltas.push({ index, text, logprobs }));
    for (const index of [0, 1]) {
      const mine = deltas.filter((d) => d.index === index);
      expect(mine.length).toBeGreaterThan(1);
      expect(mine.map((d) => d.text).join('')).toBe(r.choices[index].text);
      expect(mine.slice(0, -1).every((d) => d.logprobs === null)).toBe(true);
      expect(mine[mine.length - 1].logprobs).toEqual(r.choices[index].logprobs);
    }
  });

  it('refuses a request that does not fit the context', () => {
    expect(() => generateChat(alwaysA, req({ maxTokens: 48 }))).toThrow(GenerationError);
    try {
      generateChat(alwaysA, req({ maxTokens: 48 }));
    } catch (e) {
      expect(e).toMatchObject({ kind: 'context_length', field: 'max_tokens' });
    }
    const long = generateChat(alwaysA, req({ maxTokens: undefined }));
    expect(long.choices[0].completionTokens).toBe(48 - long.promptTokens);
    expect(() => generateChat(alwaysA, req({ messages: [{ role: 'user', content: 'x'.repeat(60) }] }))).toThrow(/context is 48/);
  });
});
