/**
 * The quickstart's jobs (docs/design.md section 4): the tiny-char preset learns addition of 1–3 digit
 * numbers (`47+385=`). Supervised learning on a small fixed set overfits; GRPO on fresh problems checked
 * by the answer verifier keeps improving held-out accuracy. Sized to finish within 10 minutes on 2 CPU
 * cores, all phases included.
 */

/** How big a quickstart run is. */
export interface QuickstartSize {
  /** Supervised warm-up steps (batch {@link QuickstartSize.sftBatch}) on {@link QuickstartSize.sftExamples} fixed problems. */
  sftSteps: number;
  sftExamples: number;
  sftBatch: number;
  /** GRPO steps after the warm-up. */
  rlSteps: number;
  /** Problems per GRPO step, each sampled {@link QuickstartSize.rolloutN} times. */
  rlBatch: number;
  rolloutN: number;
  /** Validate every N GRPO steps during training (0: only before and after). */
  testFreq: number;
  /** Held-out problems for validation and for the before/after inference jobs. */
  evalTasks: number;
}

/** The full run (measured: docs/training.md, "The quickstart"). */
export const FULL_SIZE: QuickstartSize = {
  sftSteps: 1400,
  sftExamples: 2000,
  sftBatch: 32,
  rlSteps: 1000,
  rlBatch: 32,
  rolloutN: 8,
  testFreq: 100,
  evalTasks: 200,
};

/** `--quick`: a smoke run of every phase in seconds (it learns nothing). */
export const QUICK_SIZE: QuickstartSize = {
  sftSteps: 10,
  sftExamples: 64,
  sftBatch: 16,
  rlSteps: 2,
  rlBatch: 4,
  rolloutN: 4,
  testFreq: 0,
  evalTasks: 20,
};

/** The environment both jobs use: equations, 1–3 digit addition, a fixed held-out split. */
export function quickstartEnvironment(size: QuickstartSize) {
  return { id: 'math', config: { style: 'equation', difficulty: 3, seed: 0, test_size: size.evalTasks } };
}

/** An answer is at most 4 digits then the stop token; 6 leaves room to see a model ramble. */
const MAX_NEW_TOKENS = 6;

/**
 * Learning rates. tiny-char starts from N(0, 0.02) weights and Adam moves every weight by about lr per
 * step whatever its scale, so docs/design.md's 1e-3 / 2e-4 (measured with PyTorch's larger default init) are
 * too big here: SFT at 1e-3 ended at 8.5% held-out after 1,400 steps, at 3e-4 at 59.5% (seed 1; 33.5%
 * for seed 2), and GRPO from there gained more at 1e-4 than at 2e-4 on both seeds
 * (libs/engine/README.md, "Proof that it learns"; libs/engine/bench/sft_proxy.py).
 */
const SFT_LR = 3e-4;
const RL_LR = 1e-4;

/**
 * The train job: SFT warm-up (kept as checkpoint step-0), then GRPO with zero-variance groups dropped.
 * It asks for `cpuSlots` CPU slots (the quickstart passes all of its worker's): the engine runs that
 * many threads.
 */
export function quickstartTrainSpec(size: QuickstartSize, seed = 1, cpuSlots = 1): Record<string, unknown> {
  return {
    kind: 'train',
    name: 'quickstart',
    resources: { cpu_slots: cpuSlots },
    environment: quickstartEnvironment(size),
    model: { preset: 'tiny-char', chat_template: 'plain', seed },
    sft: { steps: size.sftSteps, batch_size: size.sftBatch, lr: SFT_LR, examples: size.sftExamples, target: '{ground_truth}' },
    algorithm: { adv_estimator: 'grpo', rollout_n: size.rolloutN, filter_groups: true, clip_ratio: 0.2, loss_agg_mode: 'token-mean', kl_loss_coef: 0 },
    optim: { lr: RL_LR, weight_decay: 0, grad_clip: 1 },
    rollout: { temperature: 1, max_new_tokens: MAX_NEW_TOKENS },
    batch_size: size.rlBatch,
    total_steps: size.rlSteps,
    val_batch_size: size.evalTasks,
    test_freq: size.testFreq,
    save_freq: 0,
    seed,
  };
}

/**
 * How a checkpoint is evaluated: `greedy` (its single most likely answer) or `sampled` (answers drawn
 * at temperature 1, as during training, {@link SAMPLES_PER_TASK} per problem: the policy's success rate).
 */
export type EvalMode = 'greedy' | 'sampled';

export const SAMPLES_PER_TASK = 4;

/** A checkpoint (`job:<id>` or `job:<id>/step-0`) answering the held-out problems. */
export function quickstartInferenceSpec(size: QuickstartSize, modelPath: string, label: string, mode: EvalMode = 'greedy'): Record<string, unknown> {
  const sampled = mode === 'sampled';
  return {
    kind: 'inference',
    name: `quickstart ${label} (${mode})`,
    environment: quickstartEnvironment(size),
    model: { path: modelPath, chat_template: 'plain' },
    rollout: { temperature: sampled ? 1 : 0, max_new_tokens: MAX_NEW_TOKENS },
    split: 'test',
    num_tasks: size.evalTasks,
    samples_per_task: sampled ? SAMPLES_PER_TASK : 1,
    batch_size: Math.min(100, size.evalTasks * (sampled ? SAMPLES_PER_TASK : 1)),
    seed: 0,
  };
}
