import { z } from 'zod';
import { defineJobKind } from '../spec/job-kind';
import { modelSpec } from '../../rollout/rl-spec';

/** Operator limits the Tinker API hands the runner with its spec (settings `tinker_*`). */
export const tinkerLimits = z
  .object({
    max_adapters: z.number().int().min(1).describe('Training clients (LoRA adapters with their Adam state) this runner holds at once (setting tinker_max_adapters_per_base)'),
    adapter_memory_mb: z.number().int().min(1).describe('Memory for adapters, optimizer states and sampler snapshots (setting tinker_adapter_memory_mb)'),
    samplers_per_model: z.number().int().min(1).describe('Unnamed sampler snapshots kept per training client; older ones are released (setting tinker_samplers_per_model)'),
    seq_gap_seconds: z.number().min(0).describe('How long a training client’s request waits for an earlier seq_id that never arrived (setting tinker_seq_gap_seconds)'),
    max_sample_tokens: z.number().int().min(1).describe('Tokens a sample may generate when its max_tokens is unset or larger (setting tinker_max_sample_tokens)'),
  })
  .strict();
export type TinkerLimits = z.output<typeof tinkerLimits>;

const tinkerSpecFields = z.object({
  session_id: z.uuid().describe('The Tinker session whose models on this base the runner holds'),
  base_model: z.string().min(1).max(512).describe('The base model as the client named it (`create_model` / `create_sampling_session`)'),
  model: modelSpec.describe('The base model as a job names it: a preset, hf:Org/Name, model:<id>, job:<id>, or a folder under model_roots'),
  limits: tinkerLimits,
});

/** A tinker job's spec after defaults. */
export type TinkerSpec = z.output<typeof tinkerSpecFields>;

/**
 * The runner of one Tinker SDK session on one base model: it holds the base's frozen weights once and
 * every training client's LoRA adapter and Adam state on it, sampler snapshots, and answers the requests
 * the `/api/v1` routes record (`forward_backward`, `optim_step`, `asample`, saves and loads), each
 * training client's in `seq_id` order. Started by the Tinker API when a session first uses the base,
 * ended when the session finishes or stops sending heartbeats; never submitted through `POST /v1/jobs`.
 */
export const tinkerKind = defineJobKind({
  kind: 'tinker',
  description: 'Tinker SDK session on one base model: LoRA training clients and samplers, driven through /api/v1 (started by the server)',
  capabilities: { checkpoints: true },
  callRelay: 'all',
  internal: true,
  spec: tinkerSpecFields,
  runner: async () => (await import('./tinker.runner.js')).runTinker,
});
