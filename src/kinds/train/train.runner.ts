/**
 * The `train` job kind: managed RL in the job runner process. Loads the policy and the environment,
 * optionally imitates targets first (SFT warm-up, saved as `step-0`), validates, then runs RL steps —
 * rollouts, rewards, advantages, PPO-style updates — with validation, metrics and checkpoints. A job
 * re-queued after losing its worker resumes from its latest checkpoint and ends at the same step count.
 */
import { Prng, Trainer, warmupConstantSchedule, warmupCosineSchedule, type LrSchedule } from '@opentinker/engine';
import type { EnvironmentInstance } from '@opentinker/env-sdk';
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import type { TrainSpec } from './train.kind';
import { MetricLoggers } from '../../metrics/metric-loggers';
import { egressFetch } from '../../egress/egress-fetch';
import { WANDB_URL } from '../../egress/egress-policy';
import type { RunContext } from '../../runner/run-context';
import { mixSeed } from '../../rollout/agent-loop';
import { checkpointDir, listCheckpoints, readTrainerState, type TrainerState } from '../../training/checkpoints';
import { resultRates } from '../../rollout/episode-metrics';
import type { Policy } from '../../rollout/policy';
import { openTrainablePolicy, RlLearner, type IndexedTask } from '../../training/rl-learner';
import { withPolicyAndEnvironment } from '../../rollout/policy-and-environment';
import { renderTarget, replayScript, sftBatch, type SftExample } from '../../training/sft';
import { plannedSteps, TaskCursor } from '../../rollout/task-cursor';

/** SFT loss is reported as a mean over this many metric points across the warm-up. */
const SFT_METRIC_POINTS = 50;

const secondsSince = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;

interface Resume {
  dir: string;
  state: TrainerState;
}

export async function runTrain(jobCtx: RunContext<TrainSpec>): Promise<void> {
  const { spec } = jobCtx;
  // `trainer.logger`: the job's metrics also go to the console line, TensorBoard and W&B it names; W&B
  // is reached under the same URL policy as remote environments (a self-hosted one is a tenant's URL).
  const loggers = new MetricLoggers(jobCtx, spec.trainer ?? { logger: [], project_name: 'opentinker' }, 'train', {
    wandbFetch: egressFetch(jobCtx.policy.remoteEnvironments, WANDB_URL),
  });
  const ctx = loggers.wrap(jobCtx);
  let exitCode = 1;
  try {
    const resume = await findResume(ctx);
    await withPolicyAndEnvironment(
      spec,
      ctx,
      () => openTrainablePolicy(spec, ctx, resume?.dir ?? null),
      async (policy, handle) => {
        const run = new TrainRun(ctx, spec, policy, handle.env, handle.meta.id, resume);
        try {
          await run.run();
        } finally {
          run.dispose();
        }
      },
    );
    if (!ctx.signal.aborted) exitCode = 0;
  } finally {
    await loggers.close(exitCode).catch((error: Error) => jobCtx.log(`metric loggers: could not finish their files: ${error.message}`));
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

class TrainRun {
  private readonly padId: number;
  private readonly trainSize: number | null;
  private readonly testSize: number | null;
  private readonly taskCache = new Map<string, Promise<unknown>>();
  private learner: RlLearner | null = null;
  private lastVal: Record<string, number> = {};

  constructor(
    private readonly ctx: RunContext,
    private readonly spec: TrainSpec,
    private readonly policy: Policy,
    private readonly env: EnvironmentInstance<unknown>,
    private readonly envId: string,
    private readonly resume: Resume | null,
  ) {
    this.padId = policy.tokenizer.padId ?? 0;
    this.trainSize = env.tasks.size('train');
    this.testSize = env.tasks.size('test');
  }

  private get signal(): AbortSignal {
    return this.ctx.signal;
  }

  private log(line: string): void {
    this.ctx.log(line);
  }

  dispose(): void {
    this.learner?.dispose();
    this.learner = null;
  }

  async run(): Promise<void> {
    const { spec, ctx } = this;
    const totalSteps =
      this.resume?.state.total_steps ?? plannedSteps({ totalSteps: spec.total_steps, numEpochs: spec.num_epochs, batchSize: spec.batch_size, trainSize: this.trainSize });
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
      // The warm-up's `sft/` series is numbered by its own steps and is not run again.
      ctx.resumed(step, ['sft/']);
    }

    if (!this.resume && spec.sft.steps > 0) {
      const used = await this.warmUp();
      if (used === null) return;
      sftSteps = spec.sft.steps;
      if (this.trainSize === null) cursorStart = used;
    }

    // Made after the warm-up: the reference policy is the policy as RL starts.
    const o = spec.optim;
    const schedule: LrSchedule =
      o.lr_schedule === 'cosine'
        ? warmupCosineSchedule({ peak: o.lr, warmupSteps: o.warmup_steps, totalSteps, minRatio: o.min_lr_ratio })
        : warmupConstantSchedule({ peak: o.lr, warmupSteps: o.warmup_steps });
    let lrNow = 0;
    const learner = await RlLearner.create({ ctx, spec, policy: this.policy, env: this.env, envId: this.envId, resumeDir: this.resume?.dir ?? null, lr: () => lrNow, rng });
    this.learner = learner;

    const cursor = new TaskCursor(this.trainSize, spec.seed, cursorStart, cursorState);
    const save = (n: number, metrics: Record<string, number>) =>
      learner.save({
        step: n,
        total_steps: totalSteps,
        cursor: cursor.state,
        cursor_start: cursorStart,
        rng: rng.getState(),
        metrics,
        sft_steps: sftSteps,
        created: new Date().toISOString(),
      });

    if (!this.resume && sftSteps > 0) await save(0, {});
    if (!this.resume && spec.val_before_train) {
      if (!(await this.validate(0))) return this.cancelled(0);
    }

    let lastSaved = step;
    let lastValidated = this.resume ? -1 : 0;
    let metrics: Record<string, number> = this.resume?.state.metrics ?? {};
    while (step < totalSteps) {
      step++;
      lrNow = schedule(step - 1);
      const indices = cursor.next(spec.batch_size);
      const tasks: IndexedTask[] = await Promise.all(indices.map(async (index) => ({ index, task: await this.task('train', index) })));
      const outcome = await learner.step(step, tasks);
      if (outcome === null) return this.cancelled(step);
      metrics = outcome.metrics;
      this.report(step, totalSteps, outcome);
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
    if (lastSaved !== step || !existsSync(checkpointDir(ctx.workDir, step))) await save(step, metrics);
    this.log(`done: ${step} steps${this.lastVal['val/accuracy'] !== undefined ? `, val accuracy ${pct(this.lastVal['val/accuracy'])}` : ''}`);
  }

  /** A step's metrics, progress (`reward 0.41 acc 0.35`) and log line. */
  private report(step: number, totalSteps: number, outcome: NonNullable<Awaited<ReturnType<RlLearner['step']>>>): void {
    const { metrics: m, summary } = outcome;
    this.ctx.metrics(step, m);
    const message = `reward ${summary.rewardMean.toFixed(2)}${summary.accuracy !== null ? ` acc ${summary.accuracy.toFixed(2)}` : ''}`;
    this.ctx.progress(step, totalSteps, message);
    this.log(
      `step ${step}/${totalSteps} ${message} len ${summary.responseLengthMean.toFixed(1)} mixed ${pct(m['batch/mixed_groups'])}` +
        `${outcome.updated ? ` pg ${fmt(m['actor/pg_loss'])} gn ${fmt(m['actor/grad_norm'])}` : ' (no update: no row to train)'}` +
        `${summary.envErrors ? ` env_errors ${summary.envErrors}` : ''} | rollout ${m['timing/rollout_s'].toFixed(2)}s ref ${m['timing/ref_s'].toFixed(2)}s update ${m['timing/update_s'].toFixed(2)}s`,
    );
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
    const what = s.turns
      ? `turns ${JSON.stringify(s.turns)}${s.turns_repeat_last ? ', the last repeating until the episode ends' : ''} (replayed through the environment)`
      : `target ${JSON.stringify(s.target)}`;
    this.log(`sft: ${s.steps} steps × ${s.batch_size} examples (${fixed > 0 ? `${fixed} fixed tasks` : 'fresh tasks'}), lr ${s.lr}, ${what}`);
    try {
      for (let i = 1; i <= s.steps; i++) {
        if (this.signal.aborted) {
          this.log(`stopped during SFT step ${i} (${String(this.signal.reason ?? 'cancelled')}); no checkpoint written`);
          return null;
        }
        const batch: SftExample[] = [];
        const indices = cursor.next(s.batch_size);
        // Built concurrently: a scripted replay waits on the environment (math-tool runs code in its sandbox).
        const missing = [...new Set(indices.filter((index) => !examples.has(index)))];
        const built = await Promise.all(missing.map((index) => this.sftExample(index)));
        missing.forEach((index, k) => {
          if (built[k] === null) tooLong++;
          examples.set(index, built[k]);
        });
        for (const index of indices) {
          const e = examples.get(index);
          if (e) batch.push(e);
          // Fresh tasks are seen once; only the fixed set is worth keeping.
          if (fixed === 0) examples.delete(index);
        }
        if (batch.length === 0)
          throw new Error(`sft: no example fits the context of ${this.policy.contextLength} tokens (prompt + ${s.turns ? 'scripted conversation' : 'target'})`);
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
    if (tooLong > 0)
      this.log(`sft: skipped ${tooLong} task(s) whose prompt + ${s.turns ? 'scripted conversation' : 'target'} exceed the context of ${this.policy.contextLength} tokens`);
    return fixed > 0 ? fixed : s.steps * s.batch_size;
  }

  /**
   * The prompt the environment opens task `index` with, then the target and a stop token, or the
   * scripted conversation of `sft.turns` played through the episode; null when it does not fit.
   */
  private async sftExample(index: number): Promise<SftExample | null> {
    const task = await this.task('train', index);
    const episode = this.env.newEpisode();
    const seed = mixSeed(this.spec.seed, index);
    const turns = this.spec.sft.turns;
    let messages;
    try {
      if (turns) return await replayScript(this.policy, episode, task, turns, seed, { repeatLast: this.spec.sft.turns_repeat_last, maxTurns: this.spec.rollout.max_turns });
      messages = await episode.reset(task, seed);
    } catch (error) {
      throw new Error(`sft: environment ${this.envId} failed to ${turns ? 'replay sft.turns on' : 'reset'} train task ${index}: ${(error as Error).message}`);
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

  /** Validation on the first `val_batch_size` test tasks; false when cancelled. */
  private async validate(step: number): Promise<boolean> {
    const { spec } = this;
    const n = this.testSize === null ? spec.val_batch_size : Math.min(spec.val_batch_size, this.testSize);
    if (n === 0) {
      this.log('validation skipped: the environment has no test tasks');
      return true;
    }
    const tasks: IndexedTask[] = await Promise.all(Array.from({ length: n }, async (_, index) => ({ index, task: await this.task('test', index) })));
    const result = await this.learner!.validate(step, tasks, step === 0 ? 'the validation before training' : `the validation at step ${step}`);
    if (result === null) return false;
    const { metrics, summary: s } = result;
    this.lastVal = metrics;
    this.ctx.metrics(step, metrics);
    this.log(
      `validation at step ${step}: reward ${s.rewardMean.toFixed(3)}${s.accuracy !== null ? ` accuracy ${pct(s.accuracy)}` : ''}` +
        Object.entries(resultRates(s))
          .map(([rate, x]) => ` ${rate.replace(/_rate$/, '')} ${pct(x)}`)
          .join('') +
        ` (${n} tasks, ${metrics['timing/val_s'].toFixed(1)} s)`,
    );
    return true;
  }
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const fmt = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(4));
