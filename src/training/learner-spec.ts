import { z } from 'zod';
import type { ModelSpec, RolloutSpec } from '../rollout/rl-spec';

/**
 * What the learner reads: verl's algorithm and optimizer keys (schemas here, composed into the `train`
 * and `session` kinds' specs), and the {@link LearnerSpec} a training runner hands it.
 */

/** verl's `algorithm.*` and the actor's policy-loss keys, flattened into one group. */
export const algorithmSpec = z
  .object({
    adv_estimator: z
      .enum([
        'grpo',
        'grpo_vectorized',
        'grpo_per_step',
        'grpo_passk',
        'rloo',
        'rloo_vectorized',
        'reinforce_plus_plus',
        'reinforce_plus_plus_baseline',
        'remax',
        'opo',
        'gpg',
        'gae',
        'optimal_token_baseline',
        'tir_optimal_token_baseline',
      ])
      .default('grpo')
      .describe("verl's algorithm.adv_estimator at verl b178a3c (grpo_per_step is OpenTinker's per-turn GRPO)"),
    rollout_n: z.number().int().min(1).max(1024).default(8).describe('Episodes per task (the GRPO group)'),
    norm_adv_by_std_in_grpo: z.boolean().default(true),
    gamma: z.number().min(0).max(1).default(1),
    lam: z.number().min(0).max(1).default(1),
    filter_groups: z.boolean().default(false).describe('Drop groups whose rewards all agree (they carry no signal; DAPO dynamic sampling)'),
    loss_mode: z
      .enum(['vanilla', 'gspo', 'sapo', 'cispo', 'gpg', 'clip_cov', 'kl_cov', 'geo_mean', 'reinforce'])
      .default('vanilla')
      .describe("verl's actor.policy_loss.loss_mode; reinforce is verl's compute_policy_loss_reinforce (no ratio, no clip), not a verl loss_mode"),
    loss_agg_mode: z.enum(['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm']).default('token-mean'),
    clip_ratio: z.number().min(0).default(0.2),
    clip_ratio_low: z.number().min(0).optional().describe('Default: clip_ratio'),
    clip_ratio_high: z.number().min(0).optional().describe('Default: clip_ratio'),
    clip_ratio_c: z.number().gt(1).default(3).describe('Dual-clip bound for negative advantages'),
    tau_pos: z.number().positive().default(1).describe('sapo: gate temperature where the advantage is positive'),
    tau_neg: z.number().positive().default(1.05).describe('sapo: gate temperature where the advantage is zero or negative'),
    entropy_coeff: z.number().min(0).default(0),
    kl_loss_coef: z.number().min(0).default(0).describe('KL to the reference policy in the loss (0: no reference model)'),
    kl_loss_type: z
      .enum(['kl', 'k1', 'abs', 'mse', 'k2', 'low_var_kl', 'k3', 'kl_st', 'k1_st', 'abs_st', 'low_var_kl_st', 'k3_st'])
      .default('low_var_kl')
      .describe("verl's estimators, and OpenTinker's straight-through *_st (the value of the base estimator, the gradient of k2; verl's k3+ etc. raise at b178a3c)"),
    ppo_epochs: z.number().int().min(1).max(100).default(1),
    ppo_mini_batch_size: z.number().int().min(1).optional().describe('Tasks per optimizer step (default: batch_size, one update per batch)'),
    ppo_micro_batch_size: z.number().int().min(1).optional().describe('Sequences per forward/backward (gradient accumulation); default: the whole mini-batch'),
    critic_lr: z.number().positive().default(1e-4).describe('Learning rate of the value head (gae only)'),
  })
  .strict();

export const optimSpec = z
  .object({
    lr: z.number().positive().max(1).default(1e-5),
    weight_decay: z.number().min(0).max(1).default(0.01),
    betas: z.tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)]).default([0.9, 0.999]),
    warmup_steps: z.number().int().min(0).default(0),
    lr_schedule: z.enum(['constant', 'cosine']).default('constant'),
    min_lr_ratio: z.number().min(0).max(1).default(0).describe('cosine: the floor as a fraction of lr'),
    grad_clip: z.number().positive().default(1).describe('Global gradient-norm clip'),
  })
  .strict();

export type AlgorithmSpec = z.output<typeof algorithmSpec>;
export type OptimSpec = z.output<typeof optimSpec>;

/** The spec keys the learner reads; the `train` and `session` specs both have them. */
export interface LearnerSpec {
  model: ModelSpec;
  algorithm: AlgorithmSpec;
  optim: OptimSpec;
  rollout: RolloutSpec;
  val_temperature: number;
  max_checkpoints: number;
  seed: number;
}
