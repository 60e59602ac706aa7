/**
 * The `train` job kind: managed RL in the job runner process. Loads the policy and the environment,
 * optionally imitates targets first (SFT warm-up, saved as `step-0`), validates, then runs RL steps —
 * rollouts, rewards, advantages, PPO-style updates — with validation, metrics and checkpoints. A job
 * re-queued after losing its worker resumes from its latest checkpoint and ends at the same step count.
 */
import { loadHfModelDir, loadLoraAdapter, Model, Prng, Trainer, warmupConstantSchedule, warmupCosineSchedule, type LrSchedule } from '@opentinker/engine';
import type { EnvironmentInstance } from '@opentinker/env-sdk';
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { TrainSpec } from '../jobs/kinds/train.kind';
import type { RunContext } from '../runner/runner-protocol';
import { mixSeed, runEpisodes, type EpisodeItem } from './agent-loop';
import { listCheckpoints, pruneCheckpoints, readCriticWeights, readOptimizer, readTrainerState, saveCheckpoint, type TrainerState } from './checkpoints';
import { openEnvironment } from './environment-handle';
import { rolloutMetrics, summarizeEpisodes, validationMetrics, type EpisodeSummary } from './episode-metrics';
import { ensureEngineBackend, loadPolicy, type Policy } from './policy';
import { computeAdvantages, scoreRows, selectRows, trajectoryRow, updatePolicy } from './policy-update';
import { renderTarget, sftBatch, type SftExample } from './sft';
import { plannedSteps, TaskCursor } from './task-cursor';
import type { Trajectory } from './trajectory';

/** Rows per forward pass when scoring without gradients (reference policy, critic values). */
const SCORE_CHUNK = 64;
/** SFT loss is reported as a mean over this many metric points across the warm-up. */
const SFT_METRIC_POINTS = 50;

const secondsSince = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;

interface Resume {
  dir: string;
  state: TrainerState;
}

export async function runTrain(ctx: RunContext): Promise<void> {
  const spec = ctx.spec as unknown as TrainSpec;
  await ensureEngineBackend();
  const resume = await findResume(ctx);
  const policy = await openPolicy(spec, ctx, resume);
  const disposables: Array<{ dispose(): void }> = [policy];
  const handle = await openEnvironment(spec.environment, {
    paths: ctx.paths,
    workDir: ctx.workDir,
    log: (line) => ctx.log(line),
    timeoutMs: spec.rollout.env_timeout_seconds * 1000,
  }).catch((error: unknown) => {
    policy.dispose();
    throw error;
  });
  try {
    await new TrainRun(ctx, spec, policy, handle.env, handle.meta.id, resume, disposables).run();
  } finally {
    await handle.close();
    for (const d of disposables.reverse()) d.dispose();
  }
}

/** The latest complete checkpoint of this job, when there is one (a re-queued attempt). */
async function findResume(ctx: RunContext): Promise<Resume | null> {
  const checkpoints = await listCheckpoints(ctx.workDir);
  for (const c of checkpoints.reverse()) {
    try {
      return { dir: c.dir, state: await readTrainerState(c.dir) };
    } catch (error) {
      ctx.log(`checkpoint ${c.dir} is unreadable (${(error as Error).message}); trying an older one`);
    }
  }
  if (ctx.resumeState) ctx.log('no usable checkpoint to resume from: starting over');
  return null;
}

/** The policy to train: fresh from the spec, or the checkpoint's weights (full) / adapter (LoRA). */
async function openPolicy(spec: TrainSpec, ctx: RunContext, resume: Resume | null): Promise<Policy> {
  const io = { paths: ctx.paths, log: (line: string) => ctx.log(line) };
  const lora = spec.model.lora;
  const policy =
    resume && !lora ? await loadPolicy({ path: join(resume.dir, 'model'), chat_template: spec.model.chat_template, seed: spec.model.seed }, io) : await loadPolicy(spec.model, io);
  try {
    if (lora && resume) policy.model.loadLora(await loadLoraAdapter(join(resume.dir, 'adapter'), { modelConfig: policy.model.config }));
    else if (lora) policy.model.addLora({ r: lora.rank, alpha: lora.alpha, targetModules: lora.target_modules, seed: spec.seed });
  } catch (error) {
    policy.dispose();
    throw new Error(`model.lora: ${(error as Error).message}`);
  }
  return policy;
}

class TrainRun {
  private readonly padId: number;
  private readonly lossScaleFactor: number;
  private readonly trainSize: number | null;
  private readonly testSize: number | null;
  private readonly taskCache = new Map<string, Promise<unknown>>();
  private lastVal: Record<string, number> = {};

  constructor(
    private readonly ctx: RunContext,
    private readonly spec: TrainSpec,
    private readonly policy: Policy,
    private readonly env: EnvironmentInstance<unknown>,
    private readonly envId: string,
    private readonly resume: Resume | null,
    private readonly disposables: Array<{ dispose(): void }>,
  ) {
    this.padId = policy.tokenizer.padId ?? 0;
    const r = spec.rollout;
    this.lossScaleFactor = r.max_response_tokens ?? r.max_new_tokens * r.max_turns;
    this.trainSize = env.tasks.size('train');
    this.testSize = env.tasks.size('test');
  }

  private get signal(): AbortSignal {
    return this.ctx.signal;
  }

  private log(line: string): void {
    this.ctx.log(line);
  }

  async run(): Promise<void> {
    const { spec, ctx } = this;
    const totalSteps = this.resume?.state.total_steps ?? plannedSteps({ totalSteps: spec.total_steps, numEpochs: spec.num_epochs, batchSize: spec.batch_size, trainSize: this.trainSize });
    this.log(
      `train: ${this.policy.source}${spec.model.lora ? ` + LoRA r${spec.model.lora.rank}` : ''} on ${this.envId} ` +
        `(train split ${this.trainSize ?? 'endless'}, test ${this.testSize ?? 'endless'}); ${spec.algorithm.adv_estimator}, ` +
        `${totalSteps} steps × ${spec.batch_size} tasks × ${spec.algorithm.rollout_n} samples`,
    );

    let step = 0;
    let cursorStart = 0;
    let cursorState;
    let rng = new Prng(mixSeed(spec.seed, 0x7a1));
    let sftSteps = 0;
    if (this.resume) {
      const s = this.resume.state;
      step = s.step;
      cursorStart = s.cursor_start;
      cursorState = s.cursor;
      rng = Prng.fromState(s.rng);
      sftSteps = s.sft_steps;
      this.log(`resuming from step ${step} (${relative(ctx.workDir, this.resume.dir)})`);
    }

    // The reference policy is the policy as RL starts: a frozen copy, or the base under LoRA.
    const wantsReference = spec.algorithm.kl_loss_coef > 0 && !spec.model.lora;
    const wantsCritic = spec.algorithm.adv_estimator === 'gae';

    if (!this.resume && spec.sft.steps > 0) {
      const used = await this.warmUp();
      if (used === null) return;
      sftSteps = spec.sft.steps;
      if (this.trainSize === null) cursorStart = used;
    }

    const reference = wantsReference ? await this.referenceModel() : null;
    const critic = wantsCritic ? await this.criticModel() : null;
    const o = spec.optim;
    let lrNow = 0;
    const actor = new Trainer(this.policy.model, { lr: () => lrNow, maxGradNorm: o.grad_clip, weightDecay: o.weight_decay, betas: o.betas });
    this.disposables.push(actor);
    const criticTrainer = critic ? new Trainer(critic, { lr: spec.algorithm.critic_lr, maxGradNorm: o.grad_clip, weightDecay: o.weight_decay, betas: o.betas }) : null;
    if (criticTrainer) this.disposables.push(criticTrainer);
    if (this.resume) {
      actor.loadOptimizerState(await readOptimizer(join(this.resume.dir, 'optimizer.safetensors')));
      if (criticTrainer) criticTrainer.loadOptimizerState(await readOptimizer(join(this.resume.dir, 'critic', 'optimizer.safetensors')));
    }
    const schedule: LrSchedule =
      o.lr_schedule === 'cosine'
        ? warmupCosineSchedule({ peak: o.lr, warmupSteps: o.warmup_steps, totalSteps, minRatio: o.min_lr_ratio })
        : warmupConstantSchedule({ peak: o.lr, warmupSteps: o.warmup_steps });

    const cursor = new TaskCursor(this.trainSize, spec.seed, cursorStart, cursorState);
    const save = async (n: number, metrics: Record<string, number>) => {
      const t0 = process.hrtime.bigint();
      const state: TrainerState = { step: n, total_steps: totalSteps, cursor: cursor.state, cursor_start: cursorStart, rng: rng.getState(), metrics, sft_steps: sftSteps, created: new Date().toISOString() };
      const dir = await saveCheckpoint(ctx.workDir, n, {
        policy: { model: this.policy.model, tokenizer: this.policy.tokenizer, chatTemplate: this.policy.chatTemplate.source, ...(this.policy.rawConfig ? { rawConfig: this.policy.rawConfig } : {}), baseName: this.policy.source },
        optimizer: actor.optimizerState(),
        state,
        ...(critic && criticTrainer ? { critic: { model: critic, optimizer: criticTrainer.optimizerState() } } : {}),
      });
      const removed = await pruneCheckpoints(ctx.workDir, spec.max_checkpoints);
      ctx.checkpoint({ step: n, dir: relative(ctx.workDir, dir) });
      this.log(`saved checkpoint step-${n} in ${secondsSince(t0).toFixed(1)} s${removed.length ? ` (removed step-${removed.join(', step-')})` : ''}`);
    };

    if (!this.resume && sftSteps > 0) await save(0, {});
    if (!this.resume && spec.val_before_train) {
      if (!(await this.validate(0))) return;
    }

    let lastSaved = step;
    let lastValidated = this.resume ? -1 : 0;
    let metrics: Record<string, number> = this.resume?.state.metrics ?? {};
    while (step < totalSteps) {
      step++;
      lrNow = schedule(step - 1);
      const result = await this.rlStep(step, totalSteps, cursor, actor, reference, critic, criticTrainer, rng);
      if (result === null) return this.cancelled(step);
      metrics = result;
      if (spec.test_freq > 0 && step % spec.test_freq === 0 && step < totalSteps) {
        if (!(await this.validate(step))) return this.cancelled(step);
        lastValidated = step;
      }
      if (spec.save_freq > 0 && step % spec.save_freq === 0 && step < totalSteps) {
        await save(step, metrics);
        lastSaved = step;
      }
    }
    if (lastValidated !== step && !(await this.validate(step))) return this.cancelled(step);
    if (lastSaved !== step || !existsSync(join(ctx.workDir, 'checkpoints', `step-${step}`))) await save(step, metrics);
    this.log(`done: ${step} steps${this.lastVal['val/accuracy'] !== undefined ? `, val accuracy ${pct(this.lastVal['val/accuracy'])}` : ''}`);
  }

  private cancelled(step: number): void {
    this.log(`stopped during step ${step} (${String(this.signal.reason ?? 'cancelled')}); no checkpoint written`);
  }

  private task(split: 'train' | 'test', index: number): Promise<unknown> {
    const key = `${split}:${index}`;
    let t = this.taskCache.get(key);
    if (!t) {
      t = Promise.resolve()
        .then(() => this.env.tasks.get(split, index))
        .catch((error: unknown) => {
          throw new Error(`environment ${this.envId}: cannot read ${split} task ${index}: ${(error as Error).message}`);
        });
      // Train tasks of an endless split are seen once: caching them would only grow memory.
      if (split === 'test' || this.trainSize !== null) this.taskCache.set(key, t);
    }
    return t;
  }

  /**
   * The SFT warm-up: `sft.steps` optimizer steps on `sft.batch_size` examples each, a fixed set of the
   * first `sft.examples` train tasks (shuffled per epoch) or fresh tasks. Returns how many train tasks it
   * used (an endless split's RL tasks start after them), or null when cancelled.
   */
  private async warmUp(): Promise<number | null> {
    const { spec } = this;
    const s = spec.sft;
    const fixed = s.examples > 0 ? (this.trainSize === null ? s.examples : Math.min(s.examples, this.trainSize)) : 0;
    const cursor = new TaskCursor(fixed > 0 ? fixed : this.trainSize, spec.seed ^ 0x5f7);
    const trainer = new Trainer(this.policy.model, {
      lr: warmupConstantSchedule({ peak: s.lr, warmupSteps: Math.min(20, Math.ceil(s.steps / 10)) }),
      maxGradNorm: spec.optim.grad_clip,
      weightDecay: spec.optim.weight_decay,
      betas: spec.optim.betas,
    });
    const examples = new Map<number, SftExample | null>();
    let tooLong = 0;
    const every = Math.max(1, Math.floor(s.steps / SFT_METRIC_POINTS));
    let lossSum = 0;
    let lossN = 0;
    const t0 = process.hrtime.bigint();
    this.log(`sft: ${s.steps} steps × ${s.batch_size} examples (${fixed > 0 ? `${fixed} fixed tasks` : 'fresh tasks'}), lr ${s.lr}, target ${JSON.stringify(s.target)}`);
    try {
      for (let i = 1; i <= s.steps; i++) {
        if (this.signal.aborted) {
          this.log(`stopped during SFT step ${i} (${String(this.signal.reason ?? 'cancelled')}); no checkpoint written`);
          return null;
        }
        const batch: SftExample[] = [];
        for (const index of cursor.next(s.batch_size)) {
          if (!examples.has(index)) {
            const e = await this.sftExample(index);
            if (e === null) tooLong++;
            examples.set(index, e);
          }
          const e = examples.get(index);
          if (e) batch.push(e);
          // Fresh tasks are seen once; only the fixed set is worth keeping.
          if (fixed === 0) examples.delete(index);
        }
        if (batch.length === 0) throw new Error(`sft: no example fits the context of ${this.policy.contextLength} tokens (prompt + target)`);
        const { batch: tokens, coefficients } = sftBatch(batch, this.padId);
        const r = trainer.trainStep(tokens, coefficients);
        lossSum += r.loss;
        lossN++;
        if (i % every === 0 || i === s.steps) {
          const loss = lossSum / lossN;
          this.ctx.metrics(i, { 'sft/loss': loss });
          this.ctx.progress(i, s.steps, `sft loss ${loss.toFixed(3)}`);
          this.log(`sft ${i}/${s.steps} loss ${loss.toFixed(4)} lr ${r.lr.toExponential(2)} ${secondsSince(t0).toFixed(1)} s`);
          lossSum = 0;
          lossN = 0;
        }
        // Let cancellation and IPC through between steps.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      trainer.dispose();
    }
    if (tooLong > 0) this.log(`sft: skipped ${tooLong} task(s) whose prompt + target exceed the context of ${this.policy.contextLength} tokens`);
    return fixed > 0 ? fixed : s.steps * s.batch_size;
  }

  /** The prompt the environment opens task `index` with, then the target and a stop token; null when it does not fit. */
  private async sftExample(index: number): Promise<SftExample | null> {
    const task = await this.task('train', index);
    const episode = this.env.newEpisode();
    let messages;
    try {
      messages = await episode.reset(task, mixSeed(this.spec.seed, index));
    } catch (error) {
      throw new Error(`sft: environment ${this.envId} failed to reset train task ${index}: ${(error as Error).message}`);
    } finally {
      await Promise.resolve()
        .then(() => episode.close())
        .catch(() => undefined);
    }
    const promptIds = this.policy.renderPrompt(messages);
    const stop = this.policy.stopTokenIds[0];
    const responseIds = [...this.policy.tokenizer.encode(renderTarget(this.spec.sft.target, task)), ...(stop === undefined ? [] : [stop])];
    return promptIds.length + responseIds.length > this.policy.contextLength ? null : { promptIds, responseIds };
  }

  private async referenceModel(): Promise<Model> {
    const step0 = join(this.ctx.workDir, 'checkpoints', 'step-0', 'model');
    let model: Model;
    if (!this.resume) model = this.policy.model.clone({ trainable: false });
    else if (existsSync(join(step0, 'config.json'))) {
      const folder = await loadHfModelDir(step0);
      model = Model.fromWeights(folder.config, folder.weights, { trainable: false });
    } else {
      // No warm-up: the reference is the initial policy, which the spec reproduces.
      const initial = await loadPolicy(this.spec.model, { paths: this.ctx.paths, log: () => undefined });
      model = initial.model.clone({ trainable: false });
      initial.dispose();
    }
    this.disposables.push(model);
    return model;
  }

  private async criticModel(): Promise<Model> {
    let critic: Model;
    if (this.resume) critic = Model.fromWeights(this.policy.model.config, await readCriticWeights(this.resume.dir));
    else {
      // verl initialises the critic from the actor's weights; under LoRA that is the base.
      critic = this.policy.model.clone({ trainable: true });
      critic.addValueHead(mixSeed(this.spec.seed, 0xc717));
    }
    this.disposables.push(critic);
    return critic;
  }

  /** One RL step; returns its metrics, or null when cancelled. */
  private async rlStep(
    step: number,
    totalSteps: number,
    cursor: TaskCursor,
    actor: Trainer,
    reference: Model | null,
    critic: Model | null,
    criticTrainer: Trainer | null,
    rng: Prng,
  ): Promise<Record<string, number> | null> {
    const { spec } = this;
    const a = spec.algorithm;
    const tStep = process.hrtime.bigint();
    const indices = cursor.next(spec.batch_size);
    const tasks = await Promise.all(indices.map((i) => this.task('train', i)));
    const items: EpisodeItem[] = [];
    indices.forEach((taskIndex, group) => {
      for (let sample = 0; sample < a.rollout_n; sample++) items.push({ taskIndex, group, sample, task: tasks[group] });
    });
    const seed = mixSeed(spec.seed, step);
    const tRollout = process.hrtime.bigint();
    const trajectories = await runEpisodes(this.policy, this.env, items, { rollout: spec.rollout, seed, signal: this.signal, log: (l) => this.log(l) });
    let baselines: number[] | undefined;
    if (a.adv_estimator === 'remax' && !this.signal.aborted) {
      // ReMax's baseline: each task's greedy response reward.
      const greedy = await runEpisodes(
        this.policy,
        this.env,
        indices.map((taskIndex, group) => ({ taskIndex, group, sample: a.rollout_n, task: tasks[group] })),
        { rollout: spec.rollout, temperature: 0, seed, signal: this.signal },
      );
      baselines = greedy.map((t) => t.reward);
    }
    const rolloutS = secondsSince(tRollout);
    if (this.signal.aborted) return null;
    const summary = summarizeEpisodes(trajectories);
    this.assertSomeEpisodeRan(trajectories, `step ${step}`);

    const trainable = trajectories.filter((t) => t.generatedTokens > 0 && t.finish !== 'env_error' && t.finish !== 'cancelled');
    const all = trainable.map(trajectoryRow);
    const { rows, mixedGroups } = selectRows(all, a.filter_groups);
    const tRef = process.hrtime.bigint();
    if (reference || (a.kl_loss_coef > 0 && spec.model.lora)) {
      const refs = scoreRows(reference ?? this.policy.model, rows, { padId: this.padId, micro: SCORE_CHUNK, field: 'logProbs', adapter: reference ? true : false });
      rows.forEach((r, i) => (r.refLogProb = refs[i]));
    }
    if (critic) {
      const values = scoreRows(critic, rows, { padId: this.padId, micro: SCORE_CHUNK, field: 'values' });
      rows.forEach((r, i) => (r.values = values[i]));
    }
    computeAdvantages(rows, a, baselines ? { rewardBaselines: rows.map((r) => baselines![r.group]) } : {});
    const refS = secondsSince(tRef);

    const tUpdate = process.hrtime.bigint();
    const update =
      rows.length > 0
        ? updatePolicy(
            actor,
            rows,
            {
              algorithm: a,
              padId: this.padId,
              ...(a.ppo_mini_batch_size !== undefined ? { miniBatchTasks: a.ppo_mini_batch_size } : {}),
              ...(a.ppo_micro_batch_size !== undefined ? { microBatchSize: a.ppo_micro_batch_size } : {}),
              lossScaleFactor: this.lossScaleFactor,
              random: () => rng.uniform(),
              signal: this.signal,
            },
            criticTrainer ?? undefined,
          )
        : null;
    const updateS = secondsSince(tUpdate);
    if (update?.stopped || this.signal.aborted) return null;

    const stepS = secondsSince(tStep);
    const metrics: Record<string, number> = {
      ...rolloutMetrics(summary),
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
    this.ctx.metrics(step, metrics);
    const message = `reward ${summary.rewardMean.toFixed(2)}${summary.accuracy !== null ? ` acc ${summary.accuracy.toFixed(2)}` : ''}`;
    this.ctx.progress(step, totalSteps, message);
    this.log(
      `step ${step}/${totalSteps} ${message} len ${summary.responseLengthMean.toFixed(1)} mixed ${pct(mixedGroups)}` +
        `${update ? ` pg ${fmt(update.metrics['actor/pg_loss'])} gn ${fmt(update.metrics['actor/grad_norm'])}` : ' (no update: no row to train)'}` +
        `${summary.envErrors ? ` env_errors ${summary.envErrors}` : ''} | rollout ${rolloutS.toFixed(2)}s ref ${refS.toFixed(2)}s update ${updateS.toFixed(2)}s`,
    );
    return metrics;
  }

  /** An environment that fails every episode would train on nothing forever: fail the job with its error. */
  private assertSomeEpisodeRan(trajectories: Trajectory[], where: string): void {
    if (trajectories.length > 0 && trajectories.every((t) => t.finish === 'env_error')) {
      throw new Error(`Environment ${this.envId} failed every episode of ${where}: ${trajectories[0].error ?? 'unknown error'}`);
    }
    if (trajectories.length > 0 && trajectories.every((t) => t.generatedTokens === 0 && t.finish === 'length')) {
      const lengths = trajectories.map((t) => t.promptIds.length);
      throw new Error(
        `No episode of ${where} could generate a token: the prompts (${Math.min(...lengths)}–${Math.max(...lengths)} tokens) ` +
          `fill the model's context of ${this.policy.contextLength} tokens. Use a model with a longer context or shorter prompts.`,
      );
    }
  }

  /** Validation on the test split; false when cancelled. */
  private async validate(step: number): Promise<boolean> {
    const { spec } = this;
    const n = this.testSize === null ? spec.val_batch_size : Math.min(spec.val_batch_size, this.testSize);
    if (n === 0) {
      this.log('validation skipped: the environment has no test tasks');
      return true;
    }
    const t0 = process.hrtime.bigint();
    const indices = Array.from({ length: n }, (_, i) => i);
    const tasks = await Promise.all(indices.map((i) => this.task('test', i)));
    const trajectories = await runEpisodes(
      this.policy,
      this.env,
      indices.map((taskIndex, group) => ({ taskIndex, group, sample: 0, task: tasks[group] })),
      { rollout: spec.rollout, temperature: spec.val_temperature, seed: mixSeed(spec.seed, 0x7e57), signal: this.signal, log: (l) => this.log(l) },
    );
    if (this.signal.aborted) return false;
    this.assertSomeEpisodeRan(trajectories, step === 0 ? 'the validation before training' : `the validation at step ${step}`);
    const s: EpisodeSummary = summarizeEpisodes(trajectories);
    const metrics = { ...validationMetrics(s), 'timing/val_s': secondsSince(t0) };
    this.lastVal = metrics;
    this.ctx.metrics(step, metrics);
    this.log(
      `validation at step ${step}: reward ${s.rewardMean.toFixed(3)}${s.accuracy !== null ? ` accuracy ${pct(s.accuracy)}` : ''}` +
        `${Object.keys(s.results).length ? ` win ${pct(s.results.win ?? 0)} loss ${pct(s.results.loss ?? 0)} draw ${pct(s.results.draw ?? 0)}` : ''}` +
        ` (${n} tasks, ${metrics['timing/val_s'].toFixed(1)} s)`,
    );
    return true;
  }
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const fmt = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(4));
