/**
 * Checkpoints of a train job, `<workDir>/checkpoints/step-<n>/`:
 * - `model/`: a Hugging Face model folder of the policy (config, safetensors, tokenizer, chat template);
 *   merged weights when training LoRA, so any tool and `loadPolicy` can use it;
 * - `adapter/`: the PEFT adapter (LoRA only);
 * - `optimizer.safetensors`: AdamW's moments (`exp_avg.<param>`, `exp_avg_sq.<param>`, in the engine's
 *   variable layout) and its step (metadata);
 * - `critic/` (gae only): the critic's weights with its value head, and its optimizer;
 * - `trainer_state.json`: step, total steps, task cursor, RNG state, last metrics, creation time.
 * Written to `step-<n>.tmp/` and renamed, so a `step-<n>/` folder is always complete.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  loraScaling,
  readSafetensors,
  saveHfModelDir,
  saveLoraAdapter,
  writeSafetensors,
  type AdamWState,
  type ChatTemplate,
  type Model,
  type ModelConfig,
  type NamedWeights,
  type PrngState,
  type SafetensorsWriteTensor,
  type Tokenizer,
} from '@opentinker/engine';
import { checkpointSteps, checkpointsDir } from '../rollout/checkpoint-folders';
import type { TaskCursorState } from '../rollout/task-cursor';

/** What `trainer_state.json` holds: enough to continue the run where it stopped. */
export interface TrainerState {
  step: number;
  total_steps: number;
  cursor: TaskCursorState;
  /** First index an endless train split is walked from (after the SFT examples). */
  cursor_start: number;
  rng: PrngState;
  /** The last step's metrics. */
  metrics: Record<string, number>;
  /** Optimizer steps of the SFT warm-up (its schedule is done when RL resumes). */
  sft_steps: number;
  created: string;
}

/** The policy as a checkpoint writes it. */
export interface CheckpointPolicy {
  model: Model;
  tokenizer: Tokenizer;
  chatTemplate?: ChatTemplate | string | null;
  /** The loaded config.json, whose extra fields are kept. */
  rawConfig?: Record<string, unknown>;
  /** Recorded as the adapter's `base_model_name_or_path`. */
  baseName?: string;
}

export interface CheckpointContents {
  policy: CheckpointPolicy;
  optimizer: AdamWState;
  state: TrainerState;
  critic?: { model: Model; optimizer: AdamWState };
}

export const checkpointDir = (workDir: string, step: number) => join(checkpointsDir(workDir), `step-${step}`);

/** Complete checkpoints, oldest first. */
export async function listCheckpoints(workDir: string): Promise<Array<{ step: number; dir: string }>> {
  return (await checkpointSteps(checkpointsDir(workDir))).map((step) => ({ step, dir: checkpointDir(workDir, step) }));
}

/** Writes a checkpoint of `step` atomically and returns its folder. */
export async function saveCheckpoint(workDir: string, step: number, c: CheckpointContents): Promise<string> {
  const final = checkpointDir(workDir, step);
  const tmp = `${final}.tmp`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  const { model } = c.policy;
  if (model.hasLora) {
    const adapter = model.exportLora(c.policy.baseName);
    await saveLoraAdapter(join(tmp, 'adapter'), adapter, { modelConfig: model.config });
    await saveHfModelDir(join(tmp, 'model'), hfModel(c.policy, mergedWeights(model)));
  } else {
    // float32 whatever the base's dtype: resuming must continue from exactly these weights.
    await saveHfModelDir(join(tmp, 'model'), hfModel(c.policy, model.exportWeights()), { dtype: 'F32' });
  }
  await writeOptimizer(join(tmp, 'optimizer.safetensors'), c.optimizer);
  if (c.critic) {
    await mkdir(join(tmp, 'critic'));
    await writeSafetensors(join(tmp, 'critic', 'model.safetensors'), c.critic.model.exportWeights());
    await writeOptimizer(join(tmp, 'critic', 'optimizer.safetensors'), c.critic.optimizer);
  }
  await writeFile(join(tmp, 'trainer_state.json'), JSON.stringify(c.state, null, 2) + '\n');
  await rm(final, { recursive: true, force: true });
  await rename(tmp, final);
  return final;
}

function hfModel(p: CheckpointPolicy, weights: NamedWeights) {
  return {
    config: p.model.config as ModelConfig,
    weights,
    tokenizer: p.tokenizer,
    ...(p.chatTemplate !== undefined ? { chatTemplate: p.chatTemplate } : {}),
    ...(p.rawConfig ? { rawConfig: p.rawConfig } : {}),
  };
}

/**
 * The base weights with the adapter folded in (`W + scaling·B·A`), computed on copies so the training
 * model keeps its adapter.
 */
export function mergedWeights(model: Model): NamedWeights {
  const weights = model.exportWeights();
  const adapter = model.exportLora();
  const s = loraScaling(adapter.config);
  for (const [module, { A, B }] of adapter.weights) {
    const w = weights.get(`${module}.weight`);
    if (!w) throw new Error(`LoRA module ${module} has no base weight`);
    const [out, inDim] = w.shape;
    const r = A.shape[0];
    const data = w.data;
    for (let o = 0; o < out; o++) {
      for (let k = 0; k < r; k++) {
        const b = s * B.data[o * r + k];
        if (b === 0) continue;
        const row = o * inDim;
        const arow = k * inDim;
        for (let i = 0; i < inDim; i++) data[row + i] += b * A.data[arow + i];
      }
    }
  }
  return weights;
}

async function writeOptimizer(path: string, state: AdamWState): Promise<void> {
  const tensors: Array<[string, SafetensorsWriteTensor]> = [];
  for (const [name, m] of state.moments) tensors.push([`exp_avg.${name}`, { shape: m.shape, data: m.m }], [`exp_avg_sq.${name}`, { shape: m.shape, data: m.v }]);
  await writeSafetensors(path, tensors, { metadata: { format: 'opentinker-adamw', step: String(state.step) } });
}

/** The optimizer state a checkpoint saved. */
export async function readOptimizer(path: string): Promise<AdamWState> {
  const { tensors, metadata } = await readSafetensors(path);
  const step = Number(metadata?.step);
  if (metadata?.format !== 'opentinker-adamw' || !Number.isInteger(step) || step < 0) throw new Error(`${path} is not an optimizer state written by a train job`);
  const moments: AdamWState['moments'] = new Map();
  for (const [key, t] of tensors) {
    if (!key.startsWith('exp_avg.')) continue;
    const name = key.slice('exp_avg.'.length);
    const v = tensors.get(`exp_avg_sq.${name}`);
    if (!v) throw new Error(`${path}: exp_avg_sq.${name} is missing`);
    moments.set(name, { shape: t.shape, m: t.data, v: v.data });
  }
  return { step, moments };
}

/** The critic's weights (value head included) a checkpoint saved. */
export async function readCriticWeights(dir: string): Promise<NamedWeights> {
  return (await readSafetensors(join(dir, 'critic', 'model.safetensors'))).tensors;
}

export async function readTrainerState(dir: string): Promise<TrainerState> {
  const path = join(dir, 'trainer_state.json');
  const raw = JSON.parse(await readFile(path, 'utf8')) as Partial<TrainerState>;
  if (!Number.isInteger(raw.step) || !raw.cursor || !raw.rng) throw new Error(`${path} is not a trainer state`);
  return raw as TrainerState;
}

/**
 * Removes the oldest checkpoints beyond `keep` (never `step-0`, the SFT warm-up) and leftover
 * `.tmp` folders of interrupted saves.
 */
export async function pruneCheckpoints(workDir: string, keep: number): Promise<number[]> {
  const all = (await listCheckpoints(workDir)).filter((c) => c.step > 0);
  const removed = all.slice(0, Math.max(0, all.length - keep));
  for (const c of removed) await rm(c.dir, { recursive: true, force: true });
  const names = await readdir(checkpointsDir(workDir)).catch(() => [] as string[]);
  for (const n of names) if (n.endsWith('.tmp')) await rm(join(checkpointsDir(workDir), n), { recursive: true, force: true });
  return removed.map((c) => c.step);
}
