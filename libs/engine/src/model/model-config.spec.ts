import { isEngineError } from '../errors';
import { MODEL_PRESETS, headDim, modelPreset, toHfConfigJson, validateModelConfig } from './model-config';

const base = {
  model_type: 'llama',
  vocab_size: 260,
  hidden_size: 64,
  intermediate_size: 128,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  rms_norm_eps: 1e-5,
  max_position_embeddings: 64,
};

function codeAndField(fn: () => unknown): [string, string | undefined] {
  try {
    fn();
  } catch (e) {
    if (isEngineError(e)) return [e.code, e.field];
    throw e;
  }
  throw new Error('expected an EngineError');
}

describe('validateModelConfig', () => {
  it('fills Hugging Face defaults', () => {
    const c = validateModelConfig(base);
    expect(c.num_key_value_heads).toBe(4);
    expect(c.rope_theta).toBe(10000);
    expect(c.tie_word_embeddings).toBe(false);
    expect(c.attention_bias).toBe(false);
    expect(headDim(c)).toBe(16);
  });

  it('gives qwen2 its q/k/v biases and keeps eos lists', () => {
    const c = validateModelConfig({ ...base, model_type: 'qwen2', num_key_value_heads: 2, eos_token_id: [3, 4] });
    expect(c.attention_bias).toBe(true);
    expect(c.eos_token_id).toEqual([3, 4]);
  });

  it('drops fields it does not model', () => {
    const c = validateModelConfig({ ...base, use_cache: true, torch_dtype: 'bfloat16', sliding_window: 4096 });
    expect(Object.keys(c)).not.toContain('use_cache');
    expect(Object.keys(c)).not.toContain('sliding_window');
  });

  it.each([
    [{ ...base, model_type: 'gpt2' }, 'model_type'],
    [{ ...base, vocab_size: undefined }, 'vocab_size'],
    [{ ...base, hidden_size: 0 }, 'hidden_size'],
    [{ ...base, num_key_value_heads: 3 }, 'num_key_value_heads'],
    [{ ...base, hidden_size: 66 }, 'hidden_size'],
    [{ ...base, head_dim: 7 }, 'head_dim'],
    [{ ...base, hidden_act: 'gelu' }, 'hidden_act'],
    [{ ...base, rope_scaling: { type: 'linear', factor: 2 } }, 'rope_scaling'],
    [{ ...base, tie_word_embeddings: 'yes' }, 'tie_word_embeddings'],
    [{ ...base, eos_token_id: 260 }, 'eos_token_id'],
    [{ ...base, eos_token_id: [1, -1] }, 'eos_token_id'],
    [{ ...base, model_type: 'qwen2', attention_bias: false }, 'attention_bias'],
  ])('names the bad field (%#)', (raw, field) => {
    expect(codeAndField(() => validateModelConfig(raw))).toEqual(['ENGINE_INVALID_CONFIG', field]);
  });

  it('refuses non-objects', () => {
    expect(codeAndField(() => validateModelConfig([]))[0]).toBe('ENGINE_INVALID_CONFIG');
  });

  it('accepts every preset unchanged', () => {
    for (const preset of Object.values(MODEL_PRESETS)) expect(validateModelConfig(preset)).toEqual(preset);
  });

  it('round-trips through config.json', () => {
    const c = modelPreset('qwen2.5-0.5b');
    const json = toHfConfigJson(c, { use_cache: true });
    expect(json.architectures).toEqual(['Qwen2ForCausalLM']);
    expect(json.use_cache).toBe(true);
    expect(validateModelConfig(JSON.parse(JSON.stringify(json)))).toEqual(c);
  });
});

describe('modelPreset', () => {
  it('returns a copy', () => {
    const c = modelPreset('tiny-char');
    c.hidden_size = 1;
    expect(modelPreset('tiny-char').hidden_size).toBe(128);
  });

  it('refuses unknown names, including inherited keys', () => {
    expect(codeAndField(() => modelPreset('nope'))[0]).toBe('ENGINE_UNKNOWN_PRESET');
    expect(codeAndField(() => modelPreset('toString'))[0]).toBe('ENGINE_UNKNOWN_PRESET');
  });
});
