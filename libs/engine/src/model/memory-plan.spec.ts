import { initBackend } from '../backend';
import { resetWasmHeapPeak, wasmHeapUsage } from '../kernels/wasm-heap';
import { modelPreset, type ModelConfig } from './model-config';
import { padBatch } from './token-batch';
import { Model } from './transformer';
import { loadEngineAddon } from '../native/addon';
import { crossEntropyCoefficients } from '../train/logprobs';
import { maxTrainingRows, planTrainingPass, preferredTrainingRows, scoringPassBytes, trainingPassBytes } from './memory-plan';
import { Trainer } from '../train/trainer';

// Estimates against the wasm heap's measured peak (every tensor allocation is counted): an estimate
// must bound the peak (or the engine would let a pass run into the heap's limit) and stay within 2.5×
// of it (or it would recompute and cut micro-batches when nothing needed it).

const ALL_LINEARS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

/** A Qwen2.5-like shape (wide MLP, grouped-query attention), small enough for a unit test. */
const WIDE: ModelConfig = {
  ...modelPreset('qwen2.5-0.5b'),
  vocab_size: 512,
  hidden_size: 256,
  intermediate_size: 1408,
  num_hidden_layers: 3,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  bos_token_id: 1,
  eos_token_id: 2,
};

/** Output widths of a decoder layer's seven linears: what LoRA on all of them adds inside native products. */
function loraOutFloats(c: ModelConfig): number {
  const kv = c.num_key_value_heads * (c.hidden_size / c.num_attention_heads);
  return 3 * c.hidden_size + 2 * kv + 2 * c.intermediate_size;
}

function measure(run: () => void): number {
  resetWasmHeapPeak();
  const base = wasmHeapUsage().liveBytes;
  run();
  return wasmHeapUsage().peakBytes - base;
}

// Measured on wasm; the addon keeps weights and logits out of the heap, as in production.
const describeIfNative = loadEngineAddon().ok ? describe : describe.skip;

describeIfNative('memory plan against the measured wasm heap', () => {
  beforeAll(async () => {
    await initBackend({ backend: 'wasm' });
  });

  const rowsOf = (rows: number, len: number) => padBatch(Array.from({ length: rows }, (_, r) => Array.from({ length: len }, (_, i) => (i * 7 + r) % 500)));

  it.each([
    ['wide LoRA, whole tape', WIDE, 'lora', false, 2, 96],
    ['wide LoRA, recomputed', WIDE, 'lora', true, 2, 96],
    ['wide full fine-tuning, whole tape', WIDE, 'full', false, 2, 64],
    ['bench-b full fine-tuning, recomputed', modelPreset('bench-b'), 'full', true, 4, 64],
  ] as const)('a training pass: %s', (_name, config, mode, recompute, rows, len) => {
    const model = Model.init(config, 1, { trainable: mode === 'full' });
    if (mode === 'lora') model.addLora({ r: 8, alpha: 16, targetModules: ALL_LINEARS, seed: 2 });
    const trainer = new Trainer(model, { lr: 0, recompute });
    const batch = rowsOf(rows, len);
    const trainable = [...model.namedVariables().values()].reduce((n, v) => n + v.size * 4, 0);
    const peak = measure(() => trainer.accumulate(batch, crossEntropyCoefficients(batch)));
    // LoRA terms run inside the native products: the estimate counts what that spares.
    const extras = mode === 'lora' ? { fusedLoraFloats: loraOutFloats(config) } : {};
    const estimate = trainingPassBytes(config, rows, len, trainable, extras)[recompute ? 'recompute' : 'tape'];
    expect(estimate).toBeGreaterThanOrEqual(peak);
    expect(estimate).toBeLessThan(2.5 * peak);
    trainer.dispose();
    model.dispose();
  });

  it.each([false, true])('a pass of rows after a shared prefix (LoRA, recompute %s)', (recompute) => {
    const model = Model.init(WIDE, 1, { trainable: false });
    model.addLora({ r: 8, alpha: 16, targetModules: ALL_LINEARS, seed: 2 });
    const trainer = new Trainer(model, { lr: 0, recompute });
    const prefix = Array.from({ length: 120 }, (_, i) => (i * 5) % 500);
    const group = trainer.sharedPrefix(prefix);
    const batch = rowsOf(3, 40);
    const trainable = [...model.namedVariables().values()].reduce((n, v) => n + v.size * 4, 0);
    const peak = measure(() => group.accumulate(batch, crossEntropyCoefficients(batch)));
    group.finish();
    const estimate = trainingPassBytes(WIDE, 3, 40, trainable, { pastLen: 120, fusedLoraFloats: loraOutFloats(WIDE) })[recompute ? 'recompute' : 'tape'];
    expect(estimate).toBeGreaterThanOrEqual(peak);
    expect(estimate).toBeLessThan(2.5 * peak);
    trainer.dispose();
    model.dispose();
  });

  it('a scoring pass', () => {
    const model = Model.init(WIDE, 1, { trainable: false });
    const batch = rowsOf(3, 80);
    const peak = measure(() => model.scoreTokens(batch));
    const estimate = scoringPassBytes(WIDE, 3, 80);
    expect(estimate).toBeGreaterThanOrEqual(peak);
    expect(estimate).toBeLessThan(2.5 * peak);
    model.dispose();
  });
});

describe('memory plan decisions', () => {
  const qwen = modelPreset('qwen2.5-0.5b');

  it('keeps the whole tape when it fits, recomputes when only that fits, and refuses naming the size and settings', () => {
    const need = trainingPassBytes(qwen, 4, 256);
    expect(need.recompute).toBeLessThan(need.tape / 10);
    expect(planTrainingPass(qwen, 4, 256, 0, need.tape)).toEqual({ recompute: false, tapedLayers: 24, bytes: need.tape });
    expect(planTrainingPass(qwen, 4, 256, 0, need.tape - 1)).toEqual({ recompute: true, tapedLayers: 23, bytes: need.taped(23) });
    // Keeping the top layer's tape costs less than recomputing it (one layer input fewer).
    expect(planTrainingPass(qwen, 4, 256, 0, need.recompute)).toEqual({ recompute: true, tapedLayers: 1, bytes: need.taped(1) });
    // Each layer's tape that fits is kept: the plan recomputes only the layers below the ones it keeps.
    const five = planTrainingPass(qwen, 4, 256, 0, need.taped(5) + 1);
    expect(five).toEqual({ recompute: true, tapedLayers: 5, bytes: need.taped(5) });
    let error: unknown;
    try {
      planTrainingPass(qwen, 4, 256, 0, need.recompute - 1);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'ENGINE_OUT_OF_MEMORY', field: 'batch' });
    expect((error as Error).message).toMatch(/4 × 256 tokens needs about [\d.]+ GiB.*ppo_micro_batch_size.*OPENTINKER_ENGINE_MEMORY_MB/);
  });

  it('Qwen2.5-0.5B LoRA at 4 × 256 fits the heap by recomputing layers, within a gigabyte', () => {
    const need = trainingPassBytes(qwen, 4, 256);
    expect(need.tape).toBeGreaterThan(4 * 1024 ** 3);
    expect(need.recompute).toBeLessThan(1024 ** 3);
  });

  it('prefers fewer rows a pass when that recomputes fewer layers, but not passes thinner than 256 tokens', () => {
    const budget = 3.5 * 1024 ** 3;
    // 4 × 256 fits only by recomputing most layers; one row at a time keeps most tapes.
    const four = planTrainingPass(qwen, 4, 256, 0, budget);
    const one = planTrainingPass(qwen, 1, 256, 0, budget);
    expect(four.tapedLayers).toBeLessThan(one.tapedLayers);
    expect(preferredTrainingRows(qwen, 4, 256, 0, budget)).toBe(1);
    // At 64 tokens a row, a pass takes at least 4 rows.
    expect(preferredTrainingRows(qwen, 16, 64, 0, budget)).toBeGreaterThanOrEqual(4);
    // When the whole batch's tape fits, it runs in one pass.
    expect(preferredTrainingRows(qwen, 2, 16, 0, budget)).toBe(2);
    expect(preferredTrainingRows(qwen, 4, 256, 0, trainingPassBytes(qwen, 1, 256).recompute - 1)).toBe(0);
  });

  it('gives the rows that fit, and 0 when not even one does', () => {
    const fixed = trainingPassBytes(qwen, 0, 512, 1e6).recompute;
    const perRow = trainingPassBytes(qwen, 1, 512, 1e6).recompute - fixed;
    expect(maxTrainingRows(qwen, 512, 1e6, fixed + 3.5 * perRow)).toBe(3);
    expect(maxTrainingRows(qwen, 512, 1e6, fixed + perRow - 1)).toBe(0);
  });
});
