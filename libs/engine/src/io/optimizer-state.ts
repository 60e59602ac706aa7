import { EngineError } from '../errors';
import type { AdamWState } from '../train/adamw';
import { readSafetensors, writeSafetensors, type SafetensorsWriteTensor } from './safetensors';

/*
 * AdamW's state in a safetensors file (`optimizer.safetensors` beside a PEFT adapter folder or a train
 * job's checkpoint): `exp_avg.<param>` and `exp_avg_sq.<param>` (PyTorch's names for the two moments) in
 * the engine's variable layout, the step count in the metadata. For a LoRA adapter the parameter names
 * are PEFT's factor keys, which do not depend on the adapter's name in the model, so a state saved from
 * one adapter loads into a trainer of another adapter with the same targets and rank.
 */

const FORMAT = 'opentinker-adamw';

/**
 * Writes an optimizer state (`Trainer.optimizerState()`).
 *
 * @example
 * ```ts
 * await writeOptimizerState(join(dir, 'optimizer.safetensors'), trainer.optimizerState());
 * ```
 */
export async function writeOptimizerState(path: string, state: AdamWState): Promise<void> {
  const tensors: Array<[string, SafetensorsWriteTensor]> = [];
  for (const [name, m] of state.moments) tensors.push([`exp_avg.${name}`, { shape: m.shape, data: m.m }], [`exp_avg_sq.${name}`, { shape: m.shape, data: m.v }]);
  await writeSafetensors(path, tensors, { metadata: { format: FORMAT, step: String(state.step) } });
}

/**
 * Reads what {@link writeOptimizerState} wrote, for `Trainer.loadOptimizerState` (which checks names and
 * shapes against its parameters). Throws `ENGINE_IO` naming the file when it is not such a state.
 *
 * @example
 * ```ts
 * trainer.loadOptimizerState(await readOptimizerState(join(dir, 'optimizer.safetensors')));
 * ```
 */
export async function readOptimizerState(path: string): Promise<AdamWState> {
  const { tensors, metadata } = await readSafetensors(path);
  const step = Number(metadata?.step);
  if (metadata?.format !== FORMAT || !Number.isInteger(step) || step < 0) throw new EngineError('ENGINE_IO', `${path} is not an optimizer state (format ${FORMAT})`, path);
  const moments: AdamWState['moments'] = new Map();
  for (const [key, t] of tensors) {
    if (key.startsWith('exp_avg_sq.')) continue;
    if (!key.startsWith('exp_avg.')) throw new EngineError('ENGINE_IO', `${path}: ${key} is not a moment (exp_avg.<param> / exp_avg_sq.<param>)`, key);
    const name = key.slice('exp_avg.'.length);
    const v = tensors.get(`exp_avg_sq.${name}`);
    if (!v) throw new EngineError('ENGINE_IO', `${path}: exp_avg_sq.${name} is missing`, name);
    moments.set(name, { shape: t.shape, m: t.data, v: v.data });
  }
  return { step, moments };
}
