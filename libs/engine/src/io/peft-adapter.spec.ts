import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { modelPreset, validateModelConfig } from '../model/model-config';
import { loadHfModelDir } from './hf-model-dir';
import { isTargetModule, loadLoraAdapter, loraScaling, peftKey, saveLoraAdapter, validateLoraAdapterConfig, type LoraAdapter } from './peft-adapter';
import { SafetensorsFile, encodeSafetensors } from './safetensors';

const golden = join(dirname(fileURLToPath(import.meta.url)), '..', '__golden__', 'safetensors');
const fixture = join(golden, 'tiny-qwen2-lora');
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

function factors(r: number, out: number, inp: number, seed: number) {
  const fill = (n: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.7 + seed));
  return { A: { shape: [r, inp], data: fill(r * inp) }, B: { shape: [out, r], data: fill(out * r) } };
}

describe('PEFT LoRA adapters', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'peft-adapter-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('reads an adapter folder in the layout PEFT 0.18 writes, checked against its base model', async () => {
    const base = await loadHfModelDir(join(golden, 'tiny-qwen2'));
    const adapter = await loadLoraAdapter(fixture, { modelConfig: base.config });
    expect(adapter.config).toEqual({ r: 4, lora_alpha: 8, target_modules: ['v_proj', 'q_proj'], base_model_name_or_path: 'tiny-qwen2', lora_dropout: 0.05, use_rslora: false });
    expect(loraScaling(adapter.config)).toBe(2);
    expect([...adapter.weights.keys()].sort()).toEqual([
      'model.layers.0.self_attn.q_proj',
      'model.layers.0.self_attn.v_proj',
      'model.layers.1.self_attn.q_proj',
      'model.layers.1.self_attn.v_proj',
    ]);
    const q0 = adapter.weights.get('model.layers.0.self_attn.q_proj')!;
    expect(q0.A.shape).toEqual([4, 16]);
    expect(q0.B.shape).toEqual([16, 4]);
    expect(adapter.weights.get('model.layers.0.self_attn.v_proj')!.B.shape).toEqual([8, 4]);
    // Factor k (sorted key order) holds ((i * 5 + k * 3) % 17 - 8) / 32.
    const keys = [...adapter.weights.keys()].flatMap((m) => [peftKey(m, 'A'), peftKey(m, 'B')]).sort();
    keys.forEach((key, k) => {
      const [, module, factor] = /^base_model\.model\.(.+)\.lora_([AB])\.weight$/.exec(key)!;
      const t = adapter.weights.get(module)![factor as 'A' | 'B'];
      expect([key, [...t.data]]).toEqual([key, Array.from({ length: t.data.length }, (_, i) => (((i * 5 + k * 3) % 17) - 8) / 32)]);
    });
  });

  it('writes PEFT key names and config fields, and reads them back', async () => {
    const config = validateModelConfig({ ...modelPreset('tiny-test') });
    const adapter: LoraAdapter = {
      config: { r: 2, lora_alpha: 4, target_modules: ['q_proj', 'down_proj'], base_model_name_or_path: 'tiny-test', lora_dropout: 0, use_rslora: true },
      weights: new Map([
        ['model.layers.0.self_attn.q_proj', factors(2, 16, 16, 1)],
        ['model.layers.1.mlp.down_proj', factors(2, 16, 24, 2)],
      ]),
    };
    const dir = join(tmp, 'out');
    await saveLoraAdapter(dir, adapter, { modelConfig: config });
    const json = readJson(join(dir, 'adapter_config.json'));
    expect(json).toMatchObject({
      peft_type: 'LORA',
      r: 2,
      lora_alpha: 4,
      target_modules: ['q_proj', 'down_proj'],
      base_model_name_or_path: 'tiny-test',
      task_type: 'CAUSAL_LM',
      bias: 'none',
      use_rslora: true,
      use_dora: false,
    });
    const file = await SafetensorsFile.open(join(dir, 'adapter_model.safetensors'));
    expect(file.names.sort()).toEqual([
      'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight',
      'base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight',
      'base_model.model.model.layers.1.mlp.down_proj.lora_A.weight',
      'base_model.model.model.layers.1.mlp.down_proj.lora_B.weight',
    ]);
    expect(file.header.metadata).toEqual({ format: 'pt' });
    await file.close();
    const back = await loadLoraAdapter(dir, { modelConfig: config });
    expect(back.config).toEqual(adapter.config);
    expect(loraScaling(back.config)).toBeCloseTo(4 / Math.sqrt(2), 12);
    for (const [m, f] of adapter.weights) {
      expect(back.weights.get(m)!.A).toEqual(f.A);
      expect(back.weights.get(m)!.B).toEqual(f.B);
    }
    // Re-saving a loaded adapter keeps the other fields of its config.
    const fromFixture = await loadLoraAdapter(fixture);
    await saveLoraAdapter(join(tmp, 'resaved'), fromFixture);
    expect(readJson(join(tmp, 'resaved', 'adapter_config.json'))).toEqual(readJson(join(fixture, 'adapter_config.json')));
  });

  it('matches target modules like PEFT', () => {
    expect(isTargetModule('model.layers.0.self_attn.q_proj', ['q_proj'])).toBe(true);
    expect(isTargetModule('model.layers.0.self_attn.qq_proj', ['q_proj'])).toBe(false);
    expect(isTargetModule('model.layers.3.mlp.up_proj', '.*\\.(up|down)_proj')).toBe(true);
    expect(isTargetModule('model.layers.3.mlp.gate_proj', '.*\\.(up|down)_proj')).toBe(false);
  });

  it('refuses adapter features the engine does not apply, naming the field', () => {
    const ok = readJson(join(fixture, 'adapter_config.json'));
    expect(() => validateLoraAdapterConfig(ok)).not.toThrow();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ peft_type: 'IA3' }, 'peft_type'],
      [{ r: 0 }, 'r'],
      [{ lora_alpha: 'x' }, 'lora_alpha'],
      [{ target_modules: [] }, 'target_modules'],
      [{ target_modules: '(' }, 'target_modules'],
      [{ use_dora: true }, 'use_dora'],
      [{ rank_pattern: { q_proj: 8 } }, 'rank_pattern'],
      [{ modules_to_save: ['lm_head'] }, 'modules_to_save'],
      [{ bias: 'all' }, 'bias'],
      [{ fan_in_fan_out: true }, 'fan_in_fan_out'],
      [{ lora_bias: true }, 'lora_bias'],
      [{ trainable_token_indices: [1] }, 'trainable_token_indices'],
      [{ lora_dropout: 1 }, 'lora_dropout'],
    ];
    for (const [patch, field] of cases) {
      expect(() => validateLoraAdapterConfig({ ...ok, ...patch })).toThrow(expect.objectContaining({ code: 'ENGINE_IO', field }));
    }
  });

  it('refuses factors that do not fit the config or the base model', async () => {
    const config = validateModelConfig({ ...modelPreset('tiny-test') });
    const make = (module: string, f: ReturnType<typeof factors>, targets: string[] = ['q_proj']): LoraAdapter => ({
      config: { r: 2, lora_alpha: 4, target_modules: targets, base_model_name_or_path: null, lora_dropout: 0, use_rslora: false },
      weights: new Map([[module, f]]),
    });
    await expect(saveLoraAdapter(join(tmp, 'x1'), make('model.layers.0.self_attn.k_proj', factors(2, 8, 16, 0)))).rejects.toThrow(/not among target_modules/);
    await expect(saveLoraAdapter(join(tmp, 'x2'), make('model.layers.0.self_attn.q_proj', factors(3, 16, 16, 0)))).rejects.toThrow(
      /lora_A has shape \[3,16\], expected \[2, in_features\]/,
    );
    await expect(saveLoraAdapter(join(tmp, 'x3'), make('model.layers.0.self_attn.q_proj', factors(2, 8, 16, 0)), { modelConfig: config })).rejects.toThrow(
      /do not match the base weight \[16,16\]/,
    );
    await expect(saveLoraAdapter(join(tmp, 'x4'), make('model.layers.9.self_attn.q_proj', factors(2, 16, 16, 0)), { modelConfig: config })).rejects.toMatchObject({
      code: 'ENGINE_INVALID_WEIGHTS',
      field: 'model.layers.9.self_attn.q_proj',
    });
  });

  it('explains broken adapter files', async () => {
    const dir = join(tmp, 'broken');
    cpSync(fixture, dir, { recursive: true });
    const tensors = encodeSafetensors([
      ['base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight', { shape: [4, 16], data: new Float32Array(64) }],
      ['base_model.model.lm_head.weight', { shape: [1], data: new Float32Array(1) }],
    ]);
    writeFileSync(join(dir, 'adapter_model.safetensors'), tensors);
    await expect(loadLoraAdapter(dir)).rejects.toThrow(/base_model.model.lm_head.weight is not a LoRA factor/);
    writeFileSync(
      join(dir, 'adapter_model.safetensors'),
      encodeSafetensors([['base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight', { shape: [4, 16], data: new Float32Array(64) }]]),
    );
    await expect(loadLoraAdapter(dir)).rejects.toThrow(/has lora_A but no lora_B/);
    writeFileSync(join(dir, 'adapter_config.json'), '{');
    await expect(loadLoraAdapter(dir)).rejects.toMatchObject({ code: 'ENGINE_IO', message: expect.stringContaining('is not valid JSON') });
    await expect(loadLoraAdapter(join(tmp, 'none'))).rejects.toMatchObject({ code: 'ENGINE_IO', message: expect.stringContaining('cannot read') });
  });
});
