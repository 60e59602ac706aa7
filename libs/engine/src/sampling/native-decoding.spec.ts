import { modelPreset, type ModelConfig } from '../model/model-config';
import { Model, type ModelWeights } from '../model/transformer';
import { initWeights } from '../model/weights';
import { NativeTensor } from '../native/native-tensor';
import { randomisedAdapter } from '../testing/lora';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { Prng } from '../util/prng';
import { NativeDecoding, nativeDecodeProfile, setNativeDecoding } from './native-decoding';
import { sample, type SamplingOptions, type SampledSequence } from './sampler';

// The native decoding step (native/decode.c) against the TensorFlow.js step it replaces, through
// sample(): the same prompts, greedy, with the top alternatives at every step, once per path. The
// tolerance is on log-probs (float32 throughout on both paths; only the order of additions differs):
// 2e-5 absolute, and the tokens are identical.
//
// Sizes are chosen so the native products cross their 32-value chunks and blocks of weight rows (d 80,
// SwiGLU 200, vocab 300), with GQA (8 query heads on 2 key/value heads), non-zero q/k/v biases and
// prompts of different lengths (left padding, masked keys).

const TOL = 2e-5;
const ALL = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
const config: ModelConfig = {
  ...modelPreset('tiny-test'),
  vocab_size: 300,
  hidden_size: 80,
  intermediate_size: 200,
  num_attention_heads: 8,
  num_key_value_heads: 2,
  max_position_embeddings: 128,
};
const prompts = [[1, 2, 3, 4, 5, 6, 7], [9], [11, 12, 13, 250]];

// Llama-style: tied head, no biases, head_dim ≠ hidden / heads.
const tied: ModelConfig = { ...config, model_type: 'llama', tie_word_embeddings: true, attention_bias: false, num_attention_heads: 4, head_dim: 24 };

/** initWeights with every bias drawn too (they start at zero), matrices as native tensors of `dtype`. */
function weightsOf(dtype: 'F32' | 'BF16', cfg: ModelConfig = config): ModelWeights {
  const rng = new Prng(3);
  const out: ModelWeights = new Map();
  for (const [name, w] of initWeights(cfg, 11)) {
    if (name.endsWith('.bias')) out.set(name, { shape: w.shape, data: Float32Array.from(w.data, () => rng.normal() * 0.1) });
    else out.set(name, w.shape.length === 2 ? NativeTensor.fromFloat32(w.data, w.shape, dtype) : w);
  }
  return out;
}

/** sample() on the native step and on the TensorFlow.js step; checks the native one ran. */
function bothPaths(model: Model, opts: SamplingOptions, these: number[][] = prompts): [SampledSequence[], SampledSequence[]] {
  const before = nativeDecodeProfile().steps;
  const native = sample(model, these, opts);
  expect(nativeDecodeProfile().steps - before).toBe(opts.maxNewTokens - 1);
  setNativeDecoding(false);
  try {
    const tfjs = sample(model, these, opts);
    expect(nativeDecodeProfile().steps - before).toBe(opts.maxNewTokens - 1);
    return [native, tfjs];
  } finally {
    setNativeDecoding(true);
  }
}

function expectSame(native: SampledSequence[], tfjs: SampledSequence[]): void {
  expect(native.length).toBe(tfjs.length);
  native.forEach((n, r) => {
    expect(n.tokens).toEqual(tfjs[r].tokens);
    expect(maxAbsDiff(n.logProbs, tfjs[r].logProbs)).toBeLessThan(TOL);
    const alt = (s: SampledSequence) => s.topLogProbs!.flatMap((step) => step.map((a) => a.logProb));
    expect(n.topLogProbs!.map((step) => step.map((a) => a.token))).toEqual(tfjs[r].topLogProbs!.map((step) => step.map((a) => a.token)));
    expect(maxAbsDiff(alt(n), alt(tfjs[r]))).toBeLessThan(TOL);
  });
}

const greedy: SamplingOptions = { maxNewTokens: 12, temperature: 0, stopTokenIds: [], topLogprobs: 5 };
/** Rows that stop after 2–6 tokens (rows 0, 3, 6, … run to the end), sampled. */
const staggered: SamplingOptions = {
  maxNewTokens: 9,
  temperature: 1,
  seed: 6,
  stopTokenIds: [],
  topLogprobs: 2,
  stopCheck: (row, generated) => row % 3 !== 0 && generated.length >= 2 + (row % 5),
};

describe.each(TEST_BACKENDS)('native decoding against the TensorFlow.js step on %s', (backend) => {
  useBackend(backend);

  it.each(['F32', 'BF16'] as const)('a frozen model with %s weights: the same tokens and log-probs', (dtype) => {
    const model = Model.fromWeights(config, weightsOf(dtype), { trainable: false });
    expect(model.placement).toBe('native');
    const [native, tfjs] = bothPaths(model, greedy);
    expectSame(native, tfjs);
    // Sampled (not greedy) rows draw the same tokens from the same seed.
    const [n2, t2] = bothPaths(model, { maxNewTokens: 10, temperature: 1, seed: 4, stopTokenIds: [], topLogprobs: 3 });
    expectSame(n2, t2);
    // Repeated prompts (a GRPO group's rows) are prefilled once, and the native cache holds each prompt's
    // keys and values once for all its rows (a prompt of 21 tokens: the shared positions cross a 16-lane block).
    const long = Array.from({ length: 21 }, (_, i) => (i * 37 + 5) % 300);
    const repeated = [prompts[0], long, prompts[0], prompts[1], prompts[0], long];
    const [n3, t3] = bothPaths(model, { maxNewTokens: 6, temperature: 1, seed: 5, stopTokenIds: [], topLogprobs: 2 }, repeated);
    expectSame(n3, t3);
    expect(n3[2].tokens).not.toEqual(n3[0].tokens);
    // Rows that finish early leave the native steps, the others go on (with shared prompts too).
    const [n4, t4] = bothPaths(model, staggered, [...repeated, ...repeated]);
    expectSame(n4, t4);
    expect(new Set(n4.map((s) => s.tokens.length)).size).toBeGreaterThan(2);
    model.dispose();
  });

  it('many rows (every product through the packed GEMM from 128, the long-k down product from 64), with a LoRA adapter', () => {
    const wide: ModelConfig = { ...config, intermediate_size: 1100, num_hidden_layers: 1 };
    const model = Model.fromWeights(wide, weightsOf('BF16', wide), { trainable: false });
    model.addLora({ r: 4, alpha: 8, targetModules: ALL, seed: 5 }, 'init');
    model.loadLora(randomisedAdapter(model.exportLora(undefined, 'init'), 8, 0.2));
    for (const rows of [70, 130]) {
      const many = Array.from({ length: rows }, (_, r) => Array.from({ length: 1 + (r % 5) }, (_, i) => (r * 7 + i * 13) % 300));
      const [native, tfjs] = bothPaths(model, { ...greedy, maxNewTokens: 4 }, many);
      expectSame(native, tfjs);
    }
    // 13 prompts × 10 samples: 130 rows on 13 shared prompts.
    const groups = Array.from({ length: 13 }, (_, p) => Array.from({ length: 3 + ((p * 5) % 19) }, (_, i) => (p * 11 + i * 17) % 300));
    const [native, tfjs] = bothPaths(model, { maxNewTokens: 4, temperature: 1, seed: 9, stopTokenIds: [], topLogprobs: 2, numSamples: 10 }, groups);
    expectSame(native, tfjs);
    model.dispose();
  });

  it('a tied Llama-style model with its own head size: the same tokens and log-probs', () => {
    const model = Model.fromWeights(tied, weightsOf('BF16', tied), { trainable: false });
    const [native, tfjs] = bothPaths(model, greedy);
    expectSame(native, tfjs);
    model.dispose();
  });

  it('one LoRA adapter on every linear and the head (the default adapter and a named one)', () => {
    const model = Model.fromWeights(config, weightsOf('BF16'), { trainable: false });
    model.addLora({ r: 4, alpha: 8, targetModules: [...ALL, 'lm_head'], seed: 5 }, 'init');
    model.loadLora(randomisedAdapter(model.exportLora(undefined, 'init'), 6, 0.2), 'named');
    model.loadLora(randomisedAdapter(model.exportLora(undefined, 'init'), 7, 0.2));
    const [native, tfjs] = bothPaths(model, greedy);
    expectSame(native, tfjs);
    const [n2, t2] = bothPaths(model, { ...greedy, adapter: 'named' });
    expectSame(n2, t2);
    // The adapter changes the output (the test would not notice LoRA terms left out otherwise).
    const [base] = bothPaths(model, { ...greedy, adapter: null });
    expect(maxAbsDiff(base[0].logProbs, native[0].logProbs)).toBeGreaterThan(1e-3);
    model.dispose();
  });

  it('per-row adapters (multi-LoRA sampling): per prompt, several samples each, and rows of the base', () => {
    const model = Model.fromWeights(config, weightsOf('F32'), { trainable: false });
    model.addLora({ r: 2, alpha: 4, targetModules: ['q_proj', 'up_proj'], seed: 5 }, 'x0');
    model.loadLora(randomisedAdapter(model.exportLora(undefined, 'x0'), 6, 0.3), 'x');
    model.addLora({ r: 3, alpha: 6, targetModules: ['k_proj', 'v_proj', 'o_proj', 'down_proj', 'lm_head'], seed: 7 }, 'y0');
    model.loadLora(randomisedAdapter(model.exportLora(undefined, 'y0'), 8, 0.3), 'y');
    const snap = model.snapshotAdapter('y');
    const [native, tfjs] = bothPaths(model, { ...greedy, adapter: ['x', snap, null] });
    expectSame(native, tfjs);
    const [n2, t2] = bothPaths(model, { maxNewTokens: 8, temperature: 1, seed: 2, stopTokenIds: [], topLogprobs: 2, numSamples: 2, adapter: ['y', 'x', 'x'] });
    expectSame(n2, t2);
    // Rows that finish early leave the native steps (the TensorFlow.js step computes them to the end):
    // the rows left keep their adapters.
    const [n3, t3] = bothPaths(model, { ...staggered, numSamples: 2, adapter: ['y', 'x', null] });
    expectSame(n3, t3);
    expect(new Set(n3.map((s) => s.tokens.length)).size).toBeGreaterThan(2);
    // Each row decodes as it would alone under its adapter.
    const [alone] = bothPaths(model, { ...greedy, adapter: 'x' }, [prompts[0]]);
    expect(native[0].tokens).toEqual(alone[0].tokens);
    expect(maxAbsDiff(native[0].logProbs, alone[0].logProbs)).toBeLessThan(TOL);
    model.dispose();
  });

  it('a cache the native allocator refuses leaves the call to the TensorFlow.js step', () => {
    const model = Model.fromWeights(config, weightsOf('F32'), { trainable: false });
    // 160 GB of keys and values: more than any machine this runs on will reserve.
    expect(NativeDecoding.open(model, 1, 1e9)).toBeUndefined();
    const fits = NativeDecoding.open(model, 1, 64);
    expect(fits).toBeDefined();
    fits!.dispose();
    model.dispose();
  });

  it('a trainable model keeps the TensorFlow.js step', () => {
    const model = Model.fromWeights(config, initWeights(config, 11), { trainable: true });
    const before = nativeDecodeProfile().steps;
    sample(model, prompts, greedy);
    expect(nativeDecodeProfile().steps).toBe(before);
    model.dispose();
  });
});
