/**
 * The `session` job kind: a client-driven training session. The runner holds the policy and the
 * environment and answers calls one at a time (relayed by the worker from `POST /v1/jobs/:id/calls`):
 * `train_step` (rollouts + update on the given or next tasks), `validate`, `save_checkpoint`, `sample`
 * and `close`. It closes itself after `idle_timeout_seconds` without a call, freeing its devices.
 */
import { Prng, warmupConstantSchedule } from '@opentinker/engine';
import type { Message, TaskSet } from '@opentinker/env-sdk';
import { relative } from 'node:path';
import type { SessionSpec } from './session.kind';
import { generateChat } from '../../rollout/generation';
import type { RunContext } from '../../runner/run-context';
import type { CallMessage } from '../../runner/runner-protocol';
import { mixSeed } from '../../rollout/agent-loop';
import { withPolicyAndEnvironment } from '../../rollout/policy-and-environment';
import { IndexedTask, openTrainablePolicy, RlLearner } from '../../training/rl-learner';
import { TaskCursor } from '../../rollout/task-cursor';

export async function runSession(ctx: RunContext<SessionSpec>): Promise<void> {
  const { spec } = ctx;
  if (spec.optim.lr_schedule === 'cosine') {
    throw new Error('optim.lr_schedule: a session has no step count to decay over; use constant (with warmup_steps)');
  }
  await withPolicyAndEnvironment(
    spec,
    ctx,
    () => openTrainablePolicy(spec, ctx, null),
    async (policy, handle) => {
      const counter = { step: 0 };
      const schedule = warmupConstantSchedule({ peak: spec.optim.lr, warmupSteps: spec.optim.warmup_steps });
      const rng = new Prng(mixSeed(spec.seed, 0x7a1));
      const learner = await RlLearner.create({ ctx, spec, policy, env: handle.env, envId: handle.meta.id, resumeDir: null, lr: () => schedule(counter.step - 1), rng });
      try {
        await new Session(ctx, spec, learner, handle.env.tasks, rng, counter).serve(policy);
      } finally {
        learner.dispose();
      }
    },
  );
}

class Session {
  private readonly cursor: TaskCursor;
  private readonly trainSize: number | null;
  private readonly testSize: number | null;

  constructor(
    private readonly ctx: RunContext,
    private readonly spec: SessionSpec,
    private readonly learner: RlLearner,
    private readonly tasks: TaskSet<unknown>,
    private readonly rng: Prng,
    /** RL steps done; the learning-rate schedule reads it too. */
    private readonly counter: { step: number },
  ) {
    this.trainSize = tasks.size('train');
    this.testSize = tasks.size('test');
    this.cursor = new TaskCursor(this.trainSize === 0 ? null : this.trainSize, spec.seed);
  }

  async serve(policy: Parameters<typeof generateChat>[0]): Promise<void> {
    const { ctx } = this;
    const idleMs = this.spec.idle_timeout_seconds * 1000;
    ctx.log(
      `session ready: ${policy.source} (train split ${this.trainSize ?? 'endless'}, test ${this.testSize ?? 'endless'}); closes after ${this.spec.idle_timeout_seconds} s without a call`,
    );
    ctx.progress(0, null, 'ready');
    for (;;) {
      const call = await ctx.calls.next(idleMs);
      if (!call) {
        if (!ctx.signal.aborted) ctx.log(`no call for ${this.spec.idle_timeout_seconds} s: closing the session`);
        return;
      }
      const started = Date.now();
      let outcome: { result: unknown } | { error: string };
      try {
        outcome = { result: await this.answer(call, policy) };
      } catch (error) {
        outcome = { error: (error as Error).message };
      }
      ctx.calls.reply(call.id, outcome);
      ctx.log(`${call.op}: ${'error' in outcome ? `failed: ${outcome.error}` : 'done'} in ${((Date.now() - started) / 1000).toFixed(2)} s`);
      if (call.op === 'close' || ctx.signal.aborted) return;
    }
  }

  private async answer(call: CallMessage, policy: Parameters<typeof generateChat>[0]): Promise<unknown> {
    const args = call.args;
    switch (call.op) {
      case 'train_step': {
        const tasks = await this.pick('train', args, this.spec.batch_size);
        const step = ++this.counter.step;
        const outcome = await this.learner.step(step, tasks);
        if (!outcome) throw new Error('The session is stopping (cancelled)');
        this.ctx.metrics(step, outcome.metrics);
        this.ctx.progress(step, null, `reward ${outcome.summary.rewardMean.toFixed(2)}${outcome.summary.accuracy !== null ? ` acc ${outcome.summary.accuracy.toFixed(2)}` : ''}`);
        return { step, ...outcome.metrics };
      }
      case 'validate': {
        const tasks = await this.pick('test', args, this.spec.val_batch_size);
        const outcome = await this.learner.validate(this.counter.step, tasks, `validate call ${call.id}`);
        if (!outcome) throw new Error('The session is stopping (cancelled)');
        this.ctx.metrics(this.counter.step, outcome.metrics);
        return { step: this.counter.step, ...outcome.metrics };
      }
      case 'save_checkpoint': {
        const step = this.counter.step;
        const dir = await this.learner.save({
          step,
          total_steps: step,
          cursor: this.cursor.state,
          cursor_start: 0,
          rng: this.rng.getState(),
          metrics: {},
          sft_steps: 0,
          created: new Date().toISOString(),
        });
        return { step, dir: relative(this.ctx.workDir, dir), model_path: `job:${this.ctx.jobId}/step-${step}` };
      }
      case 'sample': {
        const r = this.spec.rollout;
        const result = generateChat(policy, {
          messages: args.messages as Message[],
          n: 1,
          temperature: (args.temperature as number | undefined) ?? r.temperature,
          topP: (args.top_p as number | undefined) ?? r.top_p,
          maxTokens: (args.max_tokens as number | undefined) ?? r.max_new_tokens,
          stop: r.stop,
          seed: (args.seed as number | undefined) ?? 0,
          logprobs: false,
          stream: false,
        });
        const choice = result.choices[0];
        return { text: choice.text, tokens: choice.completionTokens, prompt_tokens: result.promptTokens, finish_reason: choice.finishReason };
      }
      case 'close':
        return { steps: this.counter.step };
      default:
        throw new Error(`Unknown session operation ${call.op}`);
    }
  }

  /** The call's tasks: inline (negative indices), by index in the split, or the next / first N. */
  private async pick(split: 'train' | 'test', args: Record<string, unknown>, defaultCount: number): Promise<IndexedTask[]> {
    if (Array.isArray(args.tasks)) return args.tasks.map((task, i) => ({ index: -(i + 1), task }));
    const size = split === 'train' ? this.trainSize : this.testSize;
    let indices: number[];
    if (Array.isArray(args.indices)) {
      indices = args.indices as number[];
      const outside = indices.find((i) => size !== null && i >= size);
      if (outside !== undefined) throw new Error(`indices: ${outside} is outside the ${split} split (${size} tasks)`);
    } else if (split === 'train') {
      indices = this.cursor.next((args.batch_size as number | undefined) ?? defaultCount);
    } else {
      const n = (args.size as number | undefined) ?? defaultCount;
      indices = Array.from({ length: size === null ? n : Math.min(n, size) }, (_, i) => i);
      if (indices.length === 0) throw new Error('The environment has no test tasks');
    }
    return Promise.all(indices.map(async (index) => ({ index, task: await this.tasks.get(split, index) })));
  }
}
