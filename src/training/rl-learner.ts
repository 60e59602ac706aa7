/**
 * The RL half both training kinds share: the policy's optimizer, the reference policy and the critic,
 * one RL step on a batch of tasks (rollouts, rewards, advantages, PPO-style update), validation on a set
 * of tasks, and checkpoints. The `train` runner drives it on a schedule; the `session` runner drives it
 * call by call.
 */
import { loadHfModelDir, loadLoraAdapter, Model, Prng, Trainer } from '@opentinker/engine';
import type { EnvironmentInstance } from '@opentinker/env-sdk';
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { RunContext } from '../runner/run-context';
import { mixSeed, runEpisodes, type EpisodeItem } from '../rollout/agent-loop';
import { pruneCheckpoints, readCriticWeights, readOptimizer, saveCheckpoint, type TrainerState } from './checkpoints';
import { rolloutMetrics, summarizeEpisodes, validationMetrics, type EpisodeSummary } from '../rollout/episode-metrics';
import { loadPolicy, type Policy } from '../rollout/policy';
import type { LearnerSpec } from './learner-spec';
import { computeAdvantages, OPTIMAL_TOKEN_BASELINES, scoreRows, scoreSumPiSquared, selectRows, trajectoryRow, updatePolicy } from './policy-update';
import type { Trajectory } from '../rollout/trajectory';

/** Rows per forward pass when scoring without gradients (reference policy, critic values). */
const SCORE_CHUNK = 64;

const secondsSince = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;

/** A task of a split, by its index (inline tasks of a session call get negative indices). */
export interface IndexedTask {
  index: number;
  task: unknown;
}

export interface StepOutcome {
  metrics: Record<string, number>;
  summary: EpisodeSummary;
  /** Whether the step updated the policy (no row to train: none). */
  updated: boolean;
}

export interface LearnerOptions {
  ctx: RunContext;
  spec: LearnerSpec;
  policy: Policy;
  env: EnvironmentInstance<unknown>;
  envId: string;
  /** The checkpoint a re-queued job resumes from. */
  resumeDir: string | null;
  /** The learning rate of the next optimizer step. */
  lr: () => number;
  rng: Prng;
}

export class RlLearner {
  private readonly disposables: Array<{ dispose(): void }> = [];
  private readonly padId: number;
  private readonly lossScaleFactor: number;

  private constructor(
    private readonly o: LearnerOptions,
    readonly actor: Trainer,
    private readonly reference: Model | null,
    private readonly critic: { model: Model; trainer: Trainer } | null,
  ) {
    this.padId = o.policy.tokenizer.padId ?? 0;
    const r = o.spec.rollout;
    this.lossScaleFactor = r.max_response_tokens ?? r.max_new_tokens * r.max_turns;
  }

  /** Builds the optimizer, the reference policy (when `kl_loss_coef > 0`) and the critic (gae), resuming their state when asked. */
  static async create(o: LearnerOptions): Promise<RlLearner> {
    const { spec } = o;
    const opt = spec.optim;
    const made: Array<{ dispose(): void }> = [];
    try {
      const reference = spec.algorithm.kl_loss_coef > 0 && !spec.model.lora ? await referenceModel(o) : null;
      if (reference) made.push(reference);
      const critic = spec.algorithm.adv_estimator === 'gae' ? await criticModel(o) : null;
      if (critic) made.push(critic);
      const actor = new Trainer(o.policy.model, { lr: () => o.lr(), maxGradNorm: opt.grad_clip, weightDecay: opt.weight_decay, betas: opt.betas });
      made.push(actor);
      const criticTrainer = critic ? new Trainer(critic, { lr: spec.algorithm.critic_lr, maxGradNorm: opt.grad_clip, weightDecay: opt.weight_decay, betas: opt.betas }) : null;
      if (criticTrainer) made.push(criticTrainer);
      if (o.resumeDir) {
        actor.loadOptimizerState(await readOptimizer(join(o.resumeDir, 'optimizer.safetensors')));
        if (criticTrainer) criticTrainer.loadOptimizerState(await readOptimizer(join(o.resumeDir, 'critic', 'optimizer.safetensors')));
      }
      const learner = new RlLearner(o, actor, reference, critic && criticTrainer ? { model: critic, trainer: criticTrainer } : null);
      learner.disposables.push(...made);
      return learner;
    } catch (error) {
      for (const d of made.reverse()) d.dispose();
      throw error;
    }
  }

  private get signal(): AbortSignal {
    return this.o.ctx.signal;
  }

  /**
   * One RL step: `rollout_n` episodes per task, advantages by `adv_estimator` over each task's group,
   * then the policy (and critic) update. Returns null when the job was cancelled mid-step (the update,
   * if it started, is dropped).
   */
  async step(step: number, tasks: readonly IndexedTask[]): Promise<StepOutcome | null> {
    const { spec, policy, env } = this.o;
    const a = spec.algorithm;
    const tStep = process.hrtime.bigint();
    const items: EpisodeItem[] = [];
    tasks.forEach(({ index, task }, group) => {
      for (let sample = 0; sample < a.rollout_n; sample++) items.push({ taskIndex: index, group, sample, task });
    });
    const seed = mixSeed(spec.seed, step);
    const log = (l: string) => this.o.ctx.log(l);
    const tRollout = process.hrtime.bigint();
    await beginBatchStats(env);
    const trajectories = await runEpisodes(policy, env, items, { rollout: spec.rollout, seed, signal: this.signal, log });
    let baselines: number[] | undefined;
    if (a.adv_estimator === 'remax' && !this.signal.aborted) {
      // ReMax's baseline: each task's greedy response reward.
      const greedy = await runEpisodes(
        policy,
        env,
        tasks.map(({ index, task }, group) => ({ taskIndex: index, group, sample: a.rollout_n, task })),
        { rollout: spec.rollout, temperature: 0, seed, signal: this.signal },
      );
      baselines = greedy.map((t) => t.reward);
    }
    const rolloutS = secondsSince(tRollout);
    if (this.signal.aborted) return null;
    const gameStats = await readBatchStats(env, 'game/');
    const summary = summarizeEpisodes(trajectories);
    this.assertSomeEpisodeRan(trajectories, `step ${step}`);

    const trainable = trajectories.filter((t) => t.generatedTokens > 0 && t.finish !== 'env_error' && t.finish !== 'cancelled');
    const { rows, mixedGroups } = selectRows(trainable.map(trajectoryRow), a.filter_groups);
    const tRef = process.hrtime.bigint();
    if (this.reference || (a.kl_loss_coef > 0 && spec.model.lora)) {
      const refs = scoreRows(this.reference ?? policy.model, rows, { padId: this.padId, micro: SCORE_CHUNK, field: 'logProbs', adapter: this.reference !== null });
      rows.forEach((r, i) => (r.refLogProb = refs[i]));
    }
    if (this.critic) {
      const values = scoreRows(this.critic.model, rows, { padId: this.padId, micro: SCORE_CHUNK, field: 'values' });
      rows.forEach((r, i) => (r.values = values[i]));
    }
    if (OPTIMAL_TOKEN_BASELINES.has(a.adv_estimator)) {
      // Σπ² of the policy that sampled the rows (it has not been updated yet this step).
      const sums = scoreSumPiSquared(policy.model, rows, { padId: this.padId });
      rows.forEach((r, i) => (r.sumPiSquared = sums[i]));
    }
    computeAdvantages(rows, a, baselines ? { rewardBaselines: rows.map((r) => baselines![r.group]) } : {});
    const refS = secondsSince(tRef);

    const tUpdate = process.hrtime.bigint();
    const update =
      rows.length > 0
        ? updatePolicy(
            this.actor,
            rows,
            {
              algorithm: a,
              padId: this.padId,
              ...(a.ppo_mini_batch_size !== undefined ? { miniBatchTasks: a.ppo_mini_batch_size } : {}),
              ...(a.ppo_micro_batch_size !== undefined ? { microBatchSize: a.ppo_micro_batch_size } : {}),
              lossScaleFactor: this.lossScaleFactor,
              random: () => this.o.rng.uniform(),
              signal: this.signal,
            },
            this.critic?.trainer,
          )
        : null;
    const updateS = secondsSince(tUpdate);
    if (update?.stopped || this.signal.aborted) return null;

    const stepS = secondsSince(tStep);
    const metrics: Record<string, number> = {
      ...rolloutMetrics(summary),
      ...gameStats,
      ...(update?.metrics ?? {}),
      'batch/mixed_groups': mixedGroups,
      'batch/rows_trained': rows.length,
      'perf/sampled_tokens_per_s': rolloutS > 0 ? summary.generatedTokens / rolloutS : 0,
      'perf/trained_tokens_per_s': update && updateS > 0 ? update.trainedTokens / updateS : 0,
      'timing/rollout_s': rolloutS,
      'timing/ref_s': refS,
      'timing/update_s': updateS,
      'timing/step_s': stepS,
    };
    return { metrics, summary, updated: update !== null };
  }

  /** Validation episodes (one per task, `val_temperature`); null when cancelled. */
  async validate(step: number, tasks: readonly IndexedTask[], where: string): Promise<{ metrics: Record<string, number>; summary: EpisodeSummary } | null> {
    const { spec } = this.o;
    const t0 = process.hrtime.bigint();
    await beginBatchStats(this.o.env);
    const trajectories = await runEpisodes(
      this.o.policy,
      this.o.env,
      tasks.map(({ index, task }, group) => ({ taskIndex: index, group, sample: 0, task })),
      { rollout: spec.rollout, temperature: spec.val_temperature, seed: mixSeed(spec.seed, 0x7e57), signal: this.signal, log: (l) => this.o.ctx.log(l) },
    );
    if (this.signal.aborted) return null;
    this.assertSomeEpisodeRan(trajectories, where);
    const summary = summarizeEpisodes(trajectories);
    const gameStats = await readBatchStats(this.o.env, 'val_game/');
    return { metrics: { ...validationMetrics(summary), ...gameStats, 'timing/val_s': secondsSince(t0) }, summary };
  }

  /** Writes checkpoint `step-<n>` (policy, optimizer, critic, `state`), prunes old ones, records the resume state. */
  async save(state: TrainerState): Promise<string> {
    const { ctx, policy, spec } = this.o;
    const t0 = process.hrtime.bigint();
    const dir = await saveCheckpoint(ctx.workDir, state.step, {
      policy: {
        model: policy.model,
        tokenizer: policy.tokenizer,
        chatTemplate: policy.chatTemplate.source,
        ...(policy.rawConfig ? { rawConfig: policy.rawConfig } : {}),
        baseName: policy.source,
      },
      optimizer: this.actor.optimizerState(),
      state,
      ...(this.critic ? { critic: { model: this.critic.model, optimizer: this.critic.trainer.optimizerState() } } : {}),
    });
    const removed = await pruneCheckpoints(ctx.workDir, spec.max_checkpoints);
    ctx.checkpoint({ step: state.step, dir: relative(ctx.workDir, dir) });
    ctx.log(`saved checkpoint step-${state.step} in ${secondsSince(t0).toFixed(1)} s${removed.length ? ` (removed step-${removed.join(', step-')})` : ''}`);
    return dir;
  }

  dispose(): void {
    for (const d of this.disposables.reverse()) d.dispose();
    this.disposables.length = 0;
  }

  /** An environment that fails every episode would train on nothing forever: fail with its error. */
  private assertSomeEpisodeRan(trajectories: Trajectory[], where: string): void {
    if (trajectories.length > 0 && trajectories.every((t) => t.finish === 'env_error')) {
      throw new Error(`Environment ${this.o.envId} failed every episode of ${where}: ${trajectories[0].error ?? 'unknown error'}`);
    }
    if (trajectories.length > 0 && trajectories.every((t) => t.generatedTokens === 0 && t.finish === 'length')) {
      const lengths = trajectories.map((t) => t.promptIds.length);
      throw new Error(
        `No episode of ${where} could generate a token: the prompts (${Math.min(...lengths)}–${Math.max(...lengths)} tokens) ` +
          `fill the model's context of ${this.o.policy.contextLength} tokens. Use a model with a longer context or shorter prompts.`,
      );
    }
  }
}

/**
 * Statistics an environment keeps per batch (OpenTinker's game servers), reset before a batch's episodes
 * and read after them, where OpenTinker's training client calls `/stats/reset` and `/stats/step`; reported
 * under `game/` (training steps) and `val_game/` (validation), upstream's prefixes. They never fail a step.
 */
async function beginBatchStats(env: EnvironmentInstance<unknown>): Promise<void> {
  await env.batchStats?.begin().catch(() => undefined);
}

async function readBatchStats(env: EnvironmentInstance<unknown>, prefix: string): Promise<Record<string, number>> {
  if (!env.batchStats) return {};
  const stats = await env.batchStats.read().catch(() => ({}) as Record<string, number>);
  return Object.fromEntries(Object.entries(stats).map(([k, v]) => [`${prefix}${k}`, v]));
}

/**
 * The policy to train: fresh from the spec, or a checkpoint's weights (full) / adapter (LoRA on the
 * spec's base), with LoRA adapters added when the spec asks for them.
 */
export async function openTrainablePolicy(spec: Pick<LearnerSpec, 'model' | 'seed'>, ctx: Pick<RunContext, 'paths' | 'log'>, resumeDir: string | null): Promise<Policy> {
  const io = { paths: ctx.paths, log: (line: string) => ctx.log(line) };
  const lora = spec.model.lora;
  const policy =
    resumeDir && !lora
      ? await loadPolicy({ path: join(resumeDir, 'model'), chat_template: spec.model.chat_template, seed: spec.model.seed }, io)
      : await loadPolicy(spec.model, io, { trainable: !lora }); // under LoRA the base is frozen: outside the heap
  try {
    if (lora && resumeDir) policy.model.loadLora(await loadLoraAdapter(join(resumeDir, 'adapter'), { modelConfig: policy.model.config }));
    else if (lora) policy.model.addLora({ r: lora.rank, alpha: lora.alpha, targetModules: lora.target_modules, seed: spec.seed });
  } catch (error) {
    policy.dispose();
    throw new Error(`model.lora: ${(error as Error).message}`);
  }
  return policy;
}

/** The reference policy is the policy as RL starts: a frozen copy (after any warm-up), or what the spec loads. */
async function referenceModel(o: LearnerOptions): Promise<Model> {
  const step0 = join(o.ctx.workDir, 'checkpoints', 'step-0', 'model');
  if (!o.resumeDir) return o.policy.model.clone({ trainable: false });
  if (existsSync(join(step0, 'config.json'))) {
    const folder = await loadHfModelDir(step0);
    return Model.fromWeights(folder.config, folder.weights, { trainable: false });
  }
  // No warm-up: the reference is the initial policy, which the spec reproduces.
  const initial = await loadPolicy(o.spec.model, { paths: o.ctx.paths, log: () => undefined }, { trainable: false });
  return initial.model;
}

async function criticModel(o: LearnerOptions): Promise<Model> {
  if (o.resumeDir) return Model.fromWeights(o.policy.model.config, await readCriticWeights(o.resumeDir));
  // verl initialises the critic from the actor's weights; under LoRA that is the base.
  const critic = o.policy.model.clone({ trainable: true });
  critic.addValueHead(mixSeed(o.spec.seed, 0xc717));
  return critic;
}
