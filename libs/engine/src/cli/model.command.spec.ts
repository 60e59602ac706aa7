import { Command } from 'commander';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { saveHfModelDir } from '../io/hf-model-dir';
import { saveLoraAdapter, type LoraFactors } from '../io/peft-adapter';
import { padBatch } from '../model/token-batch';
import { Model } from '../model/transformer';
import { Prng } from '../util/prng';
import { modelPreset, type ModelConfig } from '../model/model-config';
import { countParameters, weightSpecs, type NamedWeights } from '../model/weights';
import { ByteTokenizer } from '../tokenizer/byte-tokenizer';
import { CHATML_TEMPLATE } from '../tokenizer/chat-template';
import { formatModelInfo, formatModelScore, modelInfo, modelSample, modelScore, registerModelCommands } from './model.command';

const fixtureDir = join(dirname(fileURLToPath(import.meta.url)), '..', '__golden__', 'safetensors', 'tiny-qwen2');

/**
 * A byte-level model whose prediction is fixed: every token has the same embedding and the layers
 * add nothing (zero projections), so the final hidden state is the same everywhere and the head
 * scores `favourite` far above the rest.
 */
function fixedModel(favourite: number): { config: ModelConfig; weights: NamedWeights } {
  const config: ModelConfig = {
    ...modelPreset('tiny-char'),
    hidden_size: 16,
    intermediate_size: 32,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 2,
    tie_word_embeddings: false,
    max_position_embeddings: 64,
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

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, output: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) } };
}

async function cli(args: string[]) {
  const c = capture();
  const program = new Command('opentinker').exitOverride();
  registerModelCommands(program, c.output);
  const before = process.exitCode;
  await program.parseAsync(['node', 'opentinker', ...args]);
  const exitCode = process.exitCode;
  process.exitCode = before;
  return { out: c.out.join(''), err: c.err.join(''), exitCode };
}

describe('opentinker model', () => {
  let tmp: string;
  let aDir: string;
  let eosDir: string;
  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'model-command-'));
    aDir = join(tmp, 'always-a');
    eosDir = join(tmp, 'always-eos');
    const tokenizer = new ByteTokenizer();
    await saveHfModelDir(aDir, { ...fixedModel(97), tokenizer, chatTemplate: CHATML_TEMPLATE });
    await saveHfModelDir(eosDir, { ...fixedModel(258), tokenizer, chatTemplate: CHATML_TEMPLATE });
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  describe('info', () => {
    it('describes a folder without reading the weights', async () => {
      const r = await modelInfo(fixtureDir);
      expect(r).toMatchObject({
        architecture: 'Qwen2ForCausalLM',
        modelType: 'qwen2',
        layers: 2,
        hiddenSize: 16,
        heads: 4,
        kvHeads: 2,
        headDim: 4,
        storedDtype: 'BF16',
        torchDtype: 'bfloat16',
        vocabSize: 320,
        tokenizerVocabSize: 307,
        tokenizer: 'HfTokenizer',
        chatTemplate: true,
        stopTokenIds: [306, 304],
        ignoredTensors: ['model.layers.0.self_attn.rotary_emb.inv_freq'],
      });
      expect(r.parameters).toBe(countParameters({ ...modelPreset('tiny-test'), vocab_size: 320, intermediate_size: 24 }));
      expect(r.weightBytes).toBe(r.parameters * 2);
      expect(r.specialTokens.eos).toEqual({ id: 306, token: '<|im_end|>' });
      expect(r.specialTokens.bos).toBeNull();
      const text = formatModelInfo(r);
      expect(text).toContain('Architecture:   Qwen2ForCausalLM (model_type qwen2)');
      expect(text).toContain(`Parameters:     ${r.parameters.toLocaleString('en-US')}`);
      expect(text).toContain('Weights:        BF16 in 2 files');
      expect(text).toContain('Special tokens: bos -, eos <|im_end|> (306), pad <|endoftext|> (304)');
      expect(text).toContain('Chat template:  yes');
    });

    it('prints text or JSON through the command line, and errors without a stack trace', async () => {
      expect((await cli(['model', 'info', fixtureDir])).out).toContain('Model folder:   ' + fixtureDir);
      const asJson = JSON.parse((await cli(['model', 'info', fixtureDir, '--json'])).out);
      expect(asJson.architecture).toBe('Qwen2ForCausalLM');
      const missing = await cli(['model', 'info', join(tmp, 'nope')]);
      expect(missing.exitCode).toBe(1);
      expect(missing.err).toBe(`opentinker: model folder ${join(tmp, 'nope')} does not exist\n`);
      expect(missing.out).toBe('');
    });
  });

  describe('sample', () => {
    it('samples greedily up to the limit, or to a stop string spanning tokens', async () => {
      const full = await modelSample(aDir, { prompt: 'hi', temperature: 0, maxNewTokens: 6, backend: 'cpu' });
      expect(full).toMatchObject({ backend: 'cpu', prompt: 'hi', promptTokens: [104, 105], tokens: [97, 97, 97, 97, 97, 97], text: 'aaaaaa', finishReason: 'length', stop: null });
      const stopped = await modelSample(aDir, { prompt: 'hi', temperature: 0, maxNewTokens: 6, stop: ['aaa'], backend: 'cpu' });
      expect(stopped).toMatchObject({ tokens: [97, 97, 97], text: '', finishReason: 'stop', stop: 'aaa' });
    });

    it("renders --chat prompts with the folder's template and stops on its EOS id", async () => {
      const r = await modelSample(eosDir, { prompt: '2+2=', chat: true, system: 'Be brief.', temperature: 0, maxNewTokens: 5, backend: 'cpu' });
      expect(r.prompt).toBe('<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2=<|im_end|>\n<|im_start|>assistant\n');
      expect(r.promptTokens[0]).toBe(257);
      expect(r).toMatchObject({ tokens: [258], text: '', finishReason: 'stop' });
    });

    it('gives the log-probs that score recomputes for the same tokens', async () => {
      const s = await modelSample(aDir, { prompt: 'xy', temperature: 1, seed: 5, maxNewTokens: 8, backend: 'cpu' });
      const scored = await modelScore(aDir, { text: 'xy' + new ByteTokenizer().decode(s.tokens), backend: 'cpu' });
      const tail = scored.tokens.slice(2).map((t) => t.logProb as number);
      expect(tail).toHaveLength(s.logProbs.length);
      tail.forEach((lp, i) => expect(Math.abs(lp - s.logProbs[i])).toBeLessThan(1e-4));
    });

    it('prints the text, or JSON, through the command line and checks its options', async () => {
      const r = await cli(['model', 'sample', aDir, '--prompt', 'hi', '--temperature', '0', '--max-new-tokens', '4', '--stop', 'aaa', '--backend', 'cpu']);
      expect(r.out).toBe('\n');
      expect(r.err).toContain('[3 tokens, finish: stop at "aaa", backend cpu]');
      const j = JSON.parse((await cli(['model', 'sample', aDir, '--prompt', 'hi', '--temperature', '0', '--max-new-tokens', '2', '--json', '--backend', 'cpu'])).out);
      expect(j).toMatchObject({ tokens: [97, 97], text: 'aa', finishReason: 'length' });
      const bad = await cli(['model', 'sample', aDir, '--prompt', 'hi', '--temperature', '-1']);
      expect(bad.exitCode).toBe(1);
      expect(bad.err).toBe('opentinker: --temperature must be a number >= 0, got "-1"\n');
      expect((await cli(['model', 'sample', aDir, '--prompt', 'hi', '--backend', 'gpu'])).err).toContain('--backend must be tensorflow, wasm or cpu');
      expect((await cli(['model', 'sample', fixtureDir, '--prompt', 'hi', '--max-new-tokens', '100', '--backend', 'cpu'])).err).toContain('exceeds max_position_embeddings 64');
    });
  });

  describe('score', () => {
    it('applies a PEFT adapter with --adapter: the scores of the model under it', async () => {
      const { config, weights } = fixedModel(97);
      const rng = new Prng(3);
      const factors = new Map<string, LoraFactors>();
      // This fixture's linears are zero: v and o in series are the shortest path that changes the output.
      for (const m of ['model.layers.0.self_attn.v_proj', 'model.layers.0.self_attn.o_proj']) {
        const [out, inF] = weights.get(`${m}.weight`)!.shape;
        factors.set(m, {
          A: { shape: [2, inF], data: Float32Array.from({ length: 2 * inF }, () => rng.normal()) },
          B: { shape: [out, 2], data: Float32Array.from({ length: out * 2 }, () => rng.normal()) },
        });
      }
      const adapter = {
        config: { r: 2, lora_alpha: 4, target_modules: ['v_proj', 'o_proj'], base_model_name_or_path: null, lora_dropout: 0, use_rslora: false },
        weights: factors,
      };
      const adapterDir = join(tmp, 'adapter');
      await saveLoraAdapter(adapterDir, adapter, { modelConfig: config });
      const plain = await modelScore(aDir, { text: 'aab', backend: 'cpu' });
      const adapted = await modelScore(aDir, { text: 'aab', backend: 'cpu', adapter: adapterDir });
      const model = Model.fromWeights(config, weights);
      model.loadLora(adapter);
      const expected = model.scoreTokens(padBatch([[97, 97, 98]])).logProbs;
      model.dispose();
      expect(Math.abs(adapted.tokens[2].logProb! - plain.tokens[2].logProb!)).toBeGreaterThan(1e-3);
      expect(Math.abs(adapted.tokens[2].logProb! - expected[2])).toBeLessThan(1e-5);
      expect(Math.abs(adapted.tokens[1].logProb! - expected[1])).toBeLessThan(1e-5);
    });

    it('prints every token with its log-prob under the model', async () => {
      const r = await modelScore(aDir, { text: 'aab', backend: 'cpu' });
      expect(r.tokens.map((t) => [t.index, t.id, t.token, t.text])).toEqual([
        [0, 97, 'a', 'a'],
        [1, 97, 'a', 'a'],
        [2, 98, 'b', 'b'],
      ]);
      expect(r.tokens[0].logProb).toBeNull();
      // The model is sure of 'a' and not of 'b'.
      expect(r.tokens[1].logProb!).toBeGreaterThan(-0.5);
      expect(r.tokens[2].logProb!).toBeLessThan(-3);
      expect(r.sumLogProb).toBeCloseTo(r.tokens[1].logProb! + r.tokens[2].logProb!, 5);
      expect(r.perplexity).toBeCloseTo(Math.exp(-r.sumLogProb / 2), 5);
      const text = formatModelScore(r);
      expect(text.split('\n')[0]).toMatch(/#\s+id\s+logprob\s+entropy\s+token/);
      expect(text).toContain('"b"');
      expect(text).toMatch(/sum -\d+\.\d{4} over 2 scored tokens, mean -\d+\.\d{4}, perplexity \d+\.\d{3} \(cpu\)/);
    });

    it('shows byte-level tokens raw and decoded, and prints JSON through the command line', async () => {
      const r = await modelScore(aDir, { text: 'a b<|im_end|>', backend: 'cpu' });
      expect(r.tokens.map((t) => t.token)).toEqual(['a', 'Ġ', 'b', '<|im_end|>']);
      expect(formatModelScore(r)).toContain('" "  "Ġ"');
      const j = JSON.parse((await cli(['model', 'score', aDir, '--text', 'ab', '--json', '--backend', 'cpu'])).out);
      expect(j.tokens.map((t: { id: number }) => t.id)).toEqual([97, 98]);
      expect(j.tokens[0].logProb).toBeNull();
      const one = await modelScore(aDir, { text: 'a', backend: 'cpu' });
      expect(formatModelScore(one)).toContain('no token has a log-prob');
      expect((await cli(['model', 'score', aDir, '--text', '', '--backend', 'cpu'])).err).toContain('the text encodes to no tokens');
    });
  });
});
