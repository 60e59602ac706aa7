import { isEngineError } from '../errors';
import { modelPreset } from './model-config';
import { countParameters, initWeights, validateWeights, weightSpecs } from './weights';

describe('weightSpecs', () => {
  it('names weights as Hugging Face does, with [out, in] layouts', () => {
    const c = modelPreset('tiny-test'); // qwen2: biases, GQA, untied
    const specs = new Map(weightSpecs(c).map((s) => [s.name, s.shape]));
    expect(specs.get('model.embed_tokens.weight')).toEqual([32, 16]);
    expect(specs.get('model.layers.1.self_attn.q_proj.weight')).toEqual([16, 16]);
    expect(specs.get('model.layers.1.self_attn.k_proj.weight')).toEqual([8, 16]);
    expect(specs.get('model.layers.1.self_attn.k_proj.bias')).toEqual([8]);
    expect(specs.has('model.layers.1.self_attn.o_proj.bias')).toBe(false);
    expect(specs.get('model.layers.0.mlp.down_proj.weight')).toEqual([16, 24]);
    expect(specs.get('lm_head.weight')).toEqual([32, 16]);
    expect(specs.size).toBe(1 + 2 * 12 + 2);
  });

  it('leaves out the head when tied and biases for llama', () => {
    const names = weightSpecs(modelPreset('tiny-char')).map((s) => s.name);
    expect(names).not.toContain('lm_head.weight');
    expect(names.some((n) => n.endsWith('.bias'))).toBe(false);
  });

  it('counts the quickstart model at about 0.8M parameters', () => {
    expect(countParameters(modelPreset('tiny-char'))).toBe(837_248);
  });
});

describe('initWeights / validateWeights', () => {
  it('is reproducible from the seed and initialises by kind', () => {
    const c = modelPreset('tiny-test');
    const a = initWeights(c, 7);
    const b = initWeights(c, 7);
    const other = initWeights(c, 8);
    const q = a.get('model.layers.0.self_attn.q_proj.weight')!.data;
    expect(Array.from(q)).toEqual(Array.from(b.get('model.layers.0.self_attn.q_proj.weight')!.data));
    expect(Array.from(q)).not.toEqual(Array.from(other.get('model.layers.0.self_attn.q_proj.weight')!.data));
    const std = Math.sqrt(q.reduce((s, v) => s + v * v, 0) / q.length);
    expect(std).toBeGreaterThan(0.07);
    expect(std).toBeLessThan(0.13);
    expect(Array.from(a.get('model.norm.weight')!.data).every((v) => v === 1)).toBe(true);
    expect(Array.from(a.get('model.layers.0.self_attn.v_proj.bias')!.data).every((v) => v === 0)).toBe(true);
    expect(() => validateWeights(c, a)).not.toThrow();
  });

  function field(fn: () => void): string | undefined {
    try {
      fn();
    } catch (e) {
      if (isEngineError(e) && e.code === 'ENGINE_INVALID_WEIGHTS') return e.field;
      throw e;
    }
    return 'no error';
  }

  it('names a missing, misshapen or unexpected weight', () => {
    const c = modelPreset('tiny-test');
    const w = initWeights(c, 1);
    w.delete('model.norm.weight');
    expect(field(() => validateWeights(c, w))).toBe('model.norm.weight');
    const w2 = initWeights(c, 1);
    w2.set('lm_head.weight', { shape: [16, 32], data: new Float32Array(512) });
    expect(field(() => validateWeights(c, w2))).toBe('lm_head.weight');
    const w3 = initWeights(c, 1);
    w3.set('model.rotary_emb.inv_freq', { shape: [2], data: new Float32Array(2) });
    expect(field(() => validateWeights(c, w3))).toBe('model.rotary_emb.inv_freq');
    expect(field(() => validateWeights(c, w3, true))).toBe('no error');
  });
});
