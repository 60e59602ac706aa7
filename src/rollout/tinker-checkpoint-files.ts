import { join } from 'node:path';
import { z } from 'zod';

/*
 * Where a tinker job keeps its checkpoints: `<jobs>/<job id>/work/checkpoints/tinker/<train-n>/<weights|
 * sampler_weights>/<name>/`, under the job's `checkpoints` folder so the storage quota counts them. Each
 * is a PEFT adapter folder (`adapter_config.json`, `adapter_model.safetensors`) with `tinker.json` (the
 * base model, LoRA config, when, TTL) and, for `weights`, `optimizer.safetensors` (Adam's moments).
 * Written as `<name>.tmp` and renamed, so a folder without the suffix is complete. Plain paths only: the
 * API lists and deletes them, the runner writes and reads them.
 */

/** A training client inside its session: `train-<model_seq_id>`. */
export const ModelKey = z.string().regex(/^train-\d{1,9}$/);
/** A checkpoint name: what a Tinker path's last part may be here (it names a folder). */
export const CHECKPOINT_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
export const CheckpointKind = z.enum(['weights', 'sampler_weights']);
export type CheckpointKind = z.output<typeof CheckpointKind>;

/** Where a saved checkpoint lives: the tinker job whose folder holds it, the training client, kind and name. */
export const CheckpointRef = z.object({ job_id: z.uuid(), model: ModelKey, kind: CheckpointKind, name: z.string().regex(CHECKPOINT_NAME) }).strict();
export type CheckpointRef = z.output<typeof CheckpointRef>;

export const TINKER_META_FILE = 'tinker.json';
export const OPTIMIZER_FILE = 'optimizer.safetensors';

/** A tinker job's checkpoints folder. */
export function tinkerCheckpointsDir(jobsDir: string, jobId: string): string {
  return join(jobsDir, jobId, 'work', 'checkpoints', 'tinker');
}

/** The folder of a training client's checkpoints of one kind. */
export function tinkerKindDir(jobsDir: string, jobId: string, model: string, kind: CheckpointKind): string {
  return join(tinkerCheckpointsDir(jobsDir, jobId), model, kind);
}

/** The folder of one checkpoint. */
export function tinkerCheckpointDir(jobsDir: string, ref: CheckpointRef): string {
  return join(tinkerKindDir(jobsDir, ref.job_id, ref.model, ref.kind), ref.name);
}

/** What `tinker.json` records beside the adapter. */
export interface TinkerCheckpointMeta {
  model_id: string;
  /** The base as the client named it. */
  base_model: string;
  /** The base as a job names it (`model.preset` or `model.path`): what a model server loads the adapter on. */
  base: { preset: string } | { path: string };
  /**
   * The folder the runner loaded the base from (a Hub model's snapshot in the worker's cache), or null
   * for a preset: where a model server that does not fetch from the Hub finds an `hf:` base.
   */
  base_dir: string | null;
  kind: CheckpointKind;
  name: string;
  lora: { rank: number; seed: number | null; train_attn: boolean; train_mlp: boolean; train_unembed: boolean };
  /** Optimizer steps the training client had taken. */
  steps: number;
  created_at: string;
  expires_at: string | null;
  user_metadata: Record<string, string> | null;
}
