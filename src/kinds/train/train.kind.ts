import { z } from 'zod';
import { METRIC_LOGGERS, WANDB_CLOUD, WANDB_NAME } from '../../metrics/metric-logger-names';
import { defineJobKind } from '../spec/job-kind';
import { environmentSpec, modelSpec, rolloutSpec } from '../../rollout/rl-spec';
import { algorithmSpec, optimSpec } from '../../training/learner-spec';

/** The default `sft.target`: the task's answer as the whole response. */
export const DEFAULT_SFT_TARGET = '{ground_truth}';

/** Optional supervised warm-up before RL, on the environment's train tasks. */
const sftSpec = z
  .object({
    steps: z.number().int().min(0).max(1_000_000).default(0).describe('0: no warm-up'),
    batch_size: z.number().int().min(1).max(4096).default(32),
    lr: z.number().positive().max(1).default(1e-3),
    examples: z.number().int().min(0).default(0).describe('Fixed set of the first N train tasks (0: fresh tasks every step)'),
    target: z.string().min(1).max(1000).default(DEFAULT_SFT_TARGET).describe("The response to imitate; {field} is replaced by the task's field"),
    turns: z
      .array(z.string().min(1).max(1000))
      .min(1)
      .max(64)
      .optional()
      .describe(
        'Instead of target: one response template per assistant turn ({field} as in target), played through the environment; ' +
          "the example is the whole conversation, with loss on the assistant's turns only; after the first turn {info.x} reads the previous step's info",
      ),
    turns_repeat_last: z
      .boolean()
      .default(false)
      .describe('The last of sft.turns repeats until the environment ends the episode (then no error) or rollout.max_turns turns are played'),
  })
  .strict()
  .refine((s) => s.turns === undefined || s.target === DEFAULT_SFT_TARGET, {
    message: 'Give sft.target or sft.turns, not both (turns holds one template per assistant turn)',
    path: ['turns'],
  })
  .refine((s) => !s.turns_repeat_last || s.turns !== undefined, {
    message: 'sft.turns_repeat_last repeats the last of sft.turns: give sft.turns',
    path: ['turns_repeat_last'],
  });

const loggerName = z.enum(METRIC_LOGGERS);

/** A W&B project or entity name: the characters the wandb SDK refuses in them are refused here too. */
const wandbName = (what: string) => z.string().min(1).max(128).regex(WANDB_NAME, `a W&B ${what} name has no /, \\, #, ?, % or :, and no control characters`);

/**
 * Where the job streams its W&B run while it runs: the submitting user's W&B key (the CLI fills it from
 * WANDB_API_KEY; stored apart from the spec and never shown), and WANDB_BASE_URL / WANDB_ENTITY under
 * the wandb SDK's meaning. Without it the run is written offline only.
 */
const wandbSpec = z
  .object({
    api_key: z
      .string()
      .min(1)
      .max(512)
      .regex(/^[\x21-\x7e]+$/, 'a W&B API key is printable ASCII without spaces')
      .optional()
      .describe("The submitting user's W&B API key (WANDB_API_KEY): the run streams to W&B while the job runs. Never shown by the API"),
    base_url: z.string().min(1).max(2048).default(WANDB_CLOUD).describe('The W&B server (WANDB_BASE_URL), for self-hosted W&B; reached under the remote URL policy'),
    entity: wandbName('entity').optional().describe("The W&B entity (WANDB_ENTITY); default: the key's own default entity"),
  })
  .strict();

/** verl's `trainer.*` keys about where metrics go (docs/metrics.md). */
const trainerSpec = z
  .object({
    logger: z
      .union([loggerName, z.array(loggerName).max(METRIC_LOGGERS.length)])
      .transform((l) => [...new Set(Array.isArray(l) ? l : [l])])
      .default([])
      .describe(
        "verl's trainer.logger: console (verl's step:N - name:value line in the job log), tensorboard (event files, a job artifact), " +
          'wandb (an offline run for `wandb sync`, a job artifact, streamed to W&B while the job runs when trainer.wandb.api_key is given); ' +
          'the API and dashboard always have the metrics',
      ),
    project_name: wandbName('project').default('opentinker').describe('W&B project'),
    experiment_name: z.string().min(1).max(128).optional().describe('W&B run name (default: the job name, else its id)'),
    wandb: wandbSpec.optional(),
  })
  .strict()
  .refine((t) => t.wandb === undefined || t.logger.includes('wandb'), {
    message: 'trainer.wandb is for the wandb logger: add wandb to trainer.logger (e.g. logger: [console, wandb])',
    path: ['wandb'],
  });

const trainSpecFields = z.object({
  environment: environmentSpec,
  model: modelSpec,
  algorithm: algorithmSpec.default(algorithmSpec.parse({})),
  optim: optimSpec.default(optimSpec.parse({})),
  rollout: rolloutSpec.default(rolloutSpec.parse({})),
  sft: sftSpec.default(sftSpec.parse({})),
  batch_size: z.number().int().min(1).max(65536).default(16).describe('Tasks per step (each rolled out rollout_n times)'),
  total_steps: z.number().int().min(1).max(10_000_000).optional().describe('RL steps (default: num_epochs over a finite train split, else 100)'),
  num_epochs: z.number().int().min(1).max(100_000).optional().describe('Passes over a finite train split'),
  val_batch_size: z.number().int().min(1).max(1_000_000).default(64).describe('Test tasks per validation (at most the split)'),
  test_freq: z.number().int().min(0).default(0).describe('Validate every N steps (0: only before and after training)'),
  val_before_train: z.boolean().default(true),
  val_temperature: z.number().min(0).max(10).default(0).describe('0: greedy validation'),
  save_freq: z.number().int().min(0).default(0).describe('Checkpoint every N steps (0: only at the end)'),
  max_checkpoints: z.number().int().min(1).max(1000).default(3).describe('Checkpoints kept (oldest removed)'),
  seed: z.number().int().min(0).default(0),
  trainer: trainerSpec.default(trainerSpec.parse({})),
});

/** A train job's spec after defaults (what the job runner gets, minus the common keys). */
export type TrainSpec = z.output<typeof trainSpecFields>;

/**
 * Managed RL training: the job runner rolls out against the environment, computes rewards,
 * advantages and losses with `@opentinker/rl`, updates the policy, validates and saves checkpoints.
 * Resumable: a job re-queued after losing its worker continues from its latest checkpoint.
 */
export const trainKind = defineJobKind({
  kind: 'train',
  description: 'Train a policy with RL (GRPO, PPO, …) against an environment',
  capabilities: { resumable: true, checkpoints: true, trains: true },
  spec: trainSpecFields,
  runner: async () => (await import('./train.runner.js')).runTrain,
});
