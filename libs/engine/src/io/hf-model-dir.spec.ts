import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { modelPreset, validateModelConfig, type ModelConfig } from '../model/model-config';
import { initWeights, weightSpecs, type NamedWeights } from '../model/weights';
import { ByteTokenizer } from '../tokenizer/byte-tokenizer';
import { CHATML_TEMPLATE, ChatTemplate } from '../tokenizer/chat-template';
import { HfTokenizer } from '../tokenizer/hf-tokenizer';
import { decodeBfloat16, decodeFloat16, encodeBfloat16, encodeFloat16 } from './half-precision';
import { inspectHfModelDir, loadHfModelDir, saveHfModelDir } from './hf-model-dir';
import { SafetensorsFile } from './safetensors';

const golden = join(dirname(fileURLToPath(import.meta.url)), '..', '__golden__');
const fixtureDir = join(golden, 'safetensors', 'tiny-qwen2');
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

/** Whether two float32 arrays hold the same bits (a Buffer compare: jest's deep equality is slow on big arrays). */
function sameBits(a: Float32Array, b: Float32Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

/** `tiny-char` (byte vocabulary, tied head, llama) with narrower layers, so tests stay fast. */
function slimTinyChar(): ModelConfig {
  return { ...modelPreset('tiny-char'), hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2 };
}

/** A Qwen2-style config whose vocabulary fits the BPE tokenizer fixture (307 ids). */
function qwenConfig(): ModelConfig {
  return validateModelConfig({ ...modelPreset('tiny-test'), vocab_size: 320, bos_token_id: 304, eos_token_id: 306 });
}

describe('Hugging Face model folders', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'hf-model-dir-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('loads a sharded BF16 Qwen2 folder written the way transformers lays it out', async () => {
    const m = await loadHfModelDir(fixtureDir);
    expect(m.config).toMatchObject({ model_type: 'qwen2', vocab_size: 320, hidden_size: 16, num_key_value_heads: 2, tie_word_embeddings: false, attention_bias: true });
    expect(m.rawConfig.sliding_window).toBe(64);
    expect(m.torchDtype).toBe('bfloat16');
    expect(m.storedDtype).toBe('BF16');
    expect(m.weightFiles).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
    expect(m.ignoredTensors).toEqual(['model.layers.0.self_attn.rotary_emb.inv_freq']);
    expect(m.tokenizer).toBeInstanceOf(HfTokenizer);
    expect(m.tokenizer.eosId).toBe(306);
    // generation_config's eos ids first, then config's and the tokenizer's (deduplicated).
    expect(m.stopTokenIds).toEqual([306, 304]);
    expect(m.generationConfig).toMatchObject({ temperature: 0.7 });
    expect(m.chatTemplate!.render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true })).toContain('You are Qwen');
    // Values: tensor k (sorted by name) holds ((i * 7 + k * 13) % 61 - 30) / 64.
    const names = weightSpecs(m.config).map((s) => s.name);
    expect([...m.weights.keys()]).toEqual(names);
    const rank = new Map([...names].sort().map((n, k) => [n, k]));
    for (const [name, w] of m.weights) {
      const k = rank.get(name)!;
      const want = Float32Array.from({ length: w.data.length }, (_, i) => (((i * 7 + k * 13) % 61) - 30) / 64);
      expect([name, sameBits(w.data, want)]).toEqual([name, true]);
    }
  });

  it('saves the tiny-char layout (byte tokenizer, ChatML, tied head) and loads it back exactly', async () => {
    const config = slimTinyChar();
    const weights = initWeights(config, 3);
    const tokenizer = new ByteTokenizer();
    const dir = join(tmp, 'tiny-char');
    const saved = await saveHfModelDir(dir, { config, weights, tokenizer, chatTemplate: CHATML_TEMPLATE });
    expect(saved.dtype).toBe('F32');
    expect(saved.weightFiles).toEqual(['model.safetensors']);
    expect(readdirSync(dir).sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    const configJson = readJson(join(dir, 'config.json'));
    expect(configJson).toMatchObject({ architectures: ['LlamaForCausalLM'], model_type: 'llama', torch_dtype: 'float32', tie_word_embeddings: true, vocab_size: 260 });
    expect(readJson(join(dir, 'generation_config.json'))).toEqual({ bos_token_id: 256, eos_token_id: 258, pad_token_id: 259 });
    expect(readJson(join(dir, 'tokenizer_config.json'))).toMatchObject({
      chat_template: CHATML_TEMPLATE,
      eos_token: '<|im_end|>',
      bos_token: '<|endoftext|>',
      pad_token: '<|pad|>',
    });
    const file = await SafetensorsFile.open(join(dir, 'model.safetensors'));
    // transformers refuses safetensors without format metadata; a tied head is not stored.
    expect(file.header.metadata).toEqual({ format: 'pt' });
    expect(file.info('lm_head.weight')).toBeUndefined();
    await file.close();

    const back = await loadHfModelDir(dir);
    expect(back.config).toEqual(config);
    expect(back.tokenizer).toBeInstanceOf(ByteTokenizer);
    expect([back.tokenizer.bosId, back.tokenizer.eosId, back.tokenizer.padId]).toEqual([256, 258, 259]);
    expect(back.chatTemplate!.source).toBe(CHATML_TEMPLATE);
    expect(back.stopTokenIds).toEqual([258]);
    for (const [name, w] of weights) expect([name, sameBits(back.weights.get(name)!.data, w.data)]).toEqual([name, true]);
  });

  it('shards past the size limit with an index transformers can read, rounds to BF16, and re-saves cleanly', async () => {
    const config = qwenConfig();
    const weights = initWeights(config, 9);
    const tokenizer = HfTokenizer.fromJson(readJson(join(golden, 'tokenizer', 'tokenizer.json')), readJson(join(golden, 'tokenizer', 'qwen2.5-tokenizer_config.json')));
    const dir = join(tmp, 'sharded');
    const saved = await saveHfModelDir(dir, { config, weights, tokenizer, chatTemplate: new ChatTemplate(CHATML_TEMPLATE) }, { dtype: 'BF16', maxShardBytes: 4096 });
    expect(saved.weightFiles.length).toBeGreaterThan(3);
    expect(saved.weightFiles[0]).toBe(`model-00001-of-${String(saved.weightFiles.length).padStart(5, '0')}.safetensors`);
    const index = readJson(join(dir, 'model.safetensors.index.json'));
    const specs = weightSpecs(config);
    expect(index.metadata.total_size).toBe(specs.reduce((a, s) => a + s.shape.reduce((x, y) => x * y, 1) * 2, 0));
    expect(Object.keys(index.weight_map)).toEqual(specs.map((s) => s.name).sort());
    expect(new Set(Object.values(index.weight_map))).toEqual(new Set(saved.weightFiles));
    expect(readJson(join(dir, 'config.json'))).toMatchObject({ architectures: ['Qwen2ForCausalLM'], torch_dtype: 'bfloat16' });

    const back = await loadHfModelDir(dir);
    expect(back.storedDtype).toBe('BF16');
    expect(back.tokenizer.encode('Hello world!')).toEqual(tokenizer.encode('Hello world!'));
    expect(back.chatTemplate!.source).toBe(CHATML_TEMPLATE);
    for (const [name, w] of weights) expect([name, sameBits(back.weights.get(name)!.data, decodeBfloat16(encodeBfloat16(w.data)))]).toEqual([name, true]);

    // Saving again as one F16 file removes the shards and the index; the loaded folder's dtype is the default.
    const again = await saveHfModelDir(dir, back, { dtype: 'F16' });
    expect(again.weightFiles).toEqual(['model.safetensors']);
    expect(readdirSync(dir).filter((f) => f.includes('safetensors'))).toEqual(['model.safetensors']);
    const third = await loadHfModelDir(dir);
    expect(third.torchDtype).toBe('float16');
    for (const [name, w] of back.weights) expect([name, sameBits(third.weights.get(name)!.data, decodeFloat16(encodeFloat16(w.data)))]).toEqual([name, true]);
    // Without an explicit dtype, a save keeps the folder's torch_dtype.
    expect((await saveHfModelDir(join(tmp, 'keep'), third)).dtype).toBe('F16');
  });

  it('keeps config.json fields the engine does not model', async () => {
    const m = await loadHfModelDir(fixtureDir);
    const dir = join(tmp, 'resaved');
    await saveHfModelDir(dir, m);
    const out = readJson(join(dir, 'config.json'));
    expect(out).toMatchObject({ sliding_window: 64, max_window_layers: 2, use_cache: true, transformers_version: '4.45.0', torch_dtype: 'bfloat16', attention_bias: true });
    expect(readJson(join(dir, 'generation_config.json'))).toEqual(readJson(join(fixtureDir, 'generation_config.json')));
    // The tokenizer is written back unchanged.
    expect(readJson(join(dir, 'tokenizer.json'))).toEqual(readJson(join(fixtureDir, 'tokenizer.json')));
  });

  it('prefers chat_template.jinja and understands named template lists', async () => {
    const dir = join(tmp, 'templates');
    cpSync(fixtureDir, dir, { recursive: true });
    const tc = readJson(join(dir, 'tokenizer_config.json'));
    writeFileSync(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({
        ...tc,
        chat_template: [
          { name: 'tool_use', template: 'T' },
          { name: 'default', template: 'D' },
        ],
      }),
    );
    expect((await inspectHfModelDir(dir)).chatTemplate!.source).toBe('D');
    writeFileSync(join(dir, 'chat_template.jinja'), 'J{{ eos_token }}');
    const info = await inspectHfModelDir(dir);
    expect(info.chatTemplate!.source).toBe('J{{ eos_token }}');
    expect(info.chatTemplate!.render([])).toBe('J<|im_end|>');
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...tc, chat_template: undefined }));
    rmSync(join(dir, 'chat_template.jinja'));
    expect((await inspectHfModelDir(dir)).chatTemplate).toBeNull();
  });

  describe('refusals', () => {
    function variant(name: string, edit: (dir: string) => void): string {
      const dir = join(tmp, `bad-${name}`);
      cpSync(fixtureDir, dir, { recursive: true });
      edit(dir);
      return dir;
    }
    const editJson = (path: string, f: (v: Record<string, unknown>) => Record<string, unknown>) => writeFileSync(path, JSON.stringify(f(readJson(path))));

    it('names an unsupported model_type and its architectures', async () => {
      const dir = variant('gemma', (d) => editJson(join(d, 'config.json'), (c) => ({ ...c, model_type: 'gemma2', architectures: ['Gemma2ForCausalLM'] })));
      await expect(loadHfModelDir(dir)).rejects.toMatchObject({
        code: 'ENGINE_INVALID_CONFIG',
        field: 'model_type',
        message: expect.stringMatching(
          /model_type "gemma2" \(architectures: Gemma2ForCausalLM\) is not supported; supported: llama \(LlamaForCausalLM\), qwen2 \(Qwen2ForCausalLM\)/,
        ),
      });
    });

    it('refuses a supported model_type with another head', async () => {
      const dir = variant('cls', (d) => editJson(join(d, 'config.json'), (c) => ({ ...c, architectures: ['Qwen2ForSequenceClassification'] })));
      await expect(loadHfModelDir(dir)).rejects.toMatchObject({ field: 'architectures', message: expect.stringContaining('Qwen2ForSequenceClassification') });
    });

    it('passes config validation errors on with the file name', async () => {
      const dir = variant('rope', (d) => editJson(join(d, 'config.json'), (c) => ({ ...c, rope_scaling: { type: 'yarn', factor: 4 } })));
      await expect(loadHfModelDir(dir)).rejects.toMatchObject({ code: 'ENGINE_INVALID_CONFIG', field: 'rope_scaling', message: expect.stringContaining(join(dir, 'config.json')) });
    });

    it('explains missing files', async () => {
      await expect(loadHfModelDir(join(tmp, 'nowhere'))).rejects.toMatchObject({ code: 'ENGINE_IO', message: expect.stringContaining('does not exist') });
      const noConfig = variant('noconfig', (d) => rmSync(join(d, 'config.json')));
      await expect(loadHfModelDir(noConfig)).rejects.toMatchObject({ code: 'ENGINE_IO', message: expect.stringContaining('config.json') });
      const bin = variant('bin', (d) => {
        for (const f of readdirSync(d)) if (f.includes('safetensors')) rmSync(join(d, f));
        writeFileSync(join(d, 'pytorch_model.bin'), 'x');
      });
      await expect(loadHfModelDir(bin)).rejects.toMatchObject({
        message: expect.stringMatching(/neither model.safetensors nor model.safetensors.index.json \(PyTorch pickle weights are not read/),
      });
      const noTok = variant('notok', (d) => rmSync(join(d, 'tokenizer.json')));
      await expect(loadHfModelDir(noTok)).rejects.toMatchObject({ message: expect.stringContaining('has no tokenizer.json') });
      const badJson = variant('badjson', (d) => writeFileSync(join(d, 'generation_config.json'), '{'));
      await expect(loadHfModelDir(badJson)).rejects.toMatchObject({ message: expect.stringContaining('generation_config.json is not valid JSON') });
    });

    it('checks the index against the shards', async () => {
      const indexPath = (d: string) => join(d, 'model.safetensors.index.json');
      const traversal = variant('traversal', (d) =>
        editJson(indexPath(d), (i) => ({ ...i, weight_map: { ...(i.weight_map as object), 'model.norm.weight': '../x.safetensors' } })),
      );
      await expect(loadHfModelDir(traversal)).rejects.toMatchObject({ message: expect.stringContaining('must be a file name in the folder') });
      const misplaced = variant('misplaced', (d) =>
        editJson(indexPath(d), (i) => ({ ...i, weight_map: { ...(i.weight_map as object), 'model.norm.weight': 'model-00001-of-00002.safetensors' } })),
      );
      await expect(loadHfModelDir(misplaced)).rejects.toMatchObject({
        message: expect.stringContaining('places model.norm.weight in model-00001-of-00002.safetensors, which does not hold it'),
      });
      const missingShard = variant('missingshard', (d) => rmSync(join(d, 'model-00002-of-00002.safetensors')));
      await expect(loadHfModelDir(missingShard)).rejects.toMatchObject({ code: 'ENGINE_IO', message: expect.stringContaining('model-00002-of-00002.safetensors') });
    });

    it('refuses weights the config does not call for, and missing ones', async () => {
      const config = qwenConfig();
      const weights: NamedWeights = initWeights(config, 1);
      const tokenizer = HfTokenizer.fromJson(readJson(join(fixtureDir, 'tokenizer.json')), readJson(join(fixtureDir, 'tokenizer_config.json')));
      const dir = join(tmp, 'weights');
      await saveHfModelDir(dir, { config, weights, tokenizer });
      // The same weights under a config with one layer fewer: layer 1's tensors are unexpected.
      editJson(join(dir, 'config.json'), (c) => ({ ...c, num_hidden_layers: 1 }));
      await expect(loadHfModelDir(dir)).rejects.toMatchObject({ code: 'ENGINE_INVALID_WEIGHTS', field: 'model.layers.1.input_layernorm.weight' });
      expect((await loadHfModelDir(dir, { allowExtraWeights: true })).weights.has('model.layers.1.input_layernorm.weight')).toBe(false);
      // One layer more: layer 2's tensors are missing.
      editJson(join(dir, 'config.json'), (c) => ({ ...c, num_hidden_layers: 3 }));
      await expect(loadHfModelDir(dir)).rejects.toMatchObject({
        code: 'ENGINE_INVALID_WEIGHTS',
        message: expect.stringContaining('model.layers.2.input_layernorm.weight is missing'),
      });
    });

    it('refuses a tokenizer larger than the model vocabulary, and weights that do not fit the config on save', async () => {
      const dir = variant('vocab', (d) => editJson(join(d, 'config.json'), (c) => ({ ...c, vocab_size: 300, bos_token_id: null, eos_token_id: null })));
      await expect(inspectHfModelDir(dir)).rejects.toMatchObject({ field: 'vocab_size', message: expect.stringContaining('the tokenizer has 307 ids') });
      const eos = variant('eos', (d) => editJson(join(d, 'generation_config.json'), (g) => ({ ...g, eos_token_id: [306, 999] })));
      await expect(inspectHfModelDir(eos)).rejects.toMatchObject({ field: 'eos_token_id', message: expect.stringContaining('eos_token_id 999') });
      const config = slimTinyChar();
      const weights = initWeights(config, 1);
      const small = { ...config, vocab_size: 100 };
      await expect(saveHfModelDir(join(tmp, 'never'), { config: small, weights: initWeights(small, 1), tokenizer: new ByteTokenizer() })).rejects.toMatchObject({
        code: 'ENGINE_INVALID_CONFIG',
        message: expect.stringContaining('the tokenizer has 260 ids but vocab_size is 100'),
      });
      weights.delete('model.norm.weight');
      await expect(saveHfModelDir(join(tmp, 'never'), { config, weights, tokenizer: new ByteTokenizer() })).rejects.toMatchObject({ code: 'ENGINE_INVALID_WEIGHTS' });
      expect(existsSync(join(tmp, 'never'))).toBe(false);
    });
  });
});
