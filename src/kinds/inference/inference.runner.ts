import type { JsonObject, JsonValue } from '@opentinker/env-sdk';
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { InferenceSpec } from './inference.kind';
import type { RunContext } from '../../runner/run-context';
import { RESULTS_FILE, SUMMARY_FILE } from './inference-files';
import { type EpisodeItem, mixSeed, runEpisodes } from '../../rollout/agent-loop';
import { type EpisodeSummary, resultRates, summarizeEpisodes } from '../../rollout/episode-metrics';
import { loadPolicy } from '../../rollout/policy';
import { withPolicyAndEnvironment } from '../../rollout/policy-and-environment';
import type { Trajectory } from '../../rollout/trajectory';

/** One line of `results.jsonl`: an episode, readable without the tokenizer. */
export interface InferenceResultLine {
  task_index: number;
  sample: number;
  task: unknown;
  messages: Array<{ role: string; content: string }>;
  /** The last assistant message. */
  response: string;
  reward: number;
  turn_rewards: number[];
  finish: Trajectory['finish'];
  info: JsonObject;
  ground_truth?: JsonValue;
  result?: JsonValue;
  winner?: JsonValue;
  error?: string;
  tokens: { prompt: number; generated: number };
}

/** Metrics of an inference job (contracts.md): `reward/mean`, `accuracy`, `win_rate`, … */
export function inferenceMetrics(s: EpisodeSummary): Record<string, number> {
  const out: Record<string, number> = {
    'reward/mean': s.rewardMean,
    'reward/std': s.rewardStd,
    'response_length/mean': s.responseLengthMean,
    'turns/mean': s.turnsMean,
    'episodes/env_errors': s.envErrors,
  };
  if (s.accuracy !== null) out.accuracy = s.accuracy;
  return { ...out, ...resultRates(s) };
}

/**
 * Runs the `inference` kind: a policy against an environment on `num_tasks` tasks of a split
 * (`samples_per_task` episodes each, `batch_size` sampled together), one JSON line per episode appended
 * to `results.jsonl` as each batch finishes, then `summary.json`. Both are published as artifacts.
 */
export async function runInference(ctx: RunContext<InferenceSpec>): Promise<void> {
  const { spec } = ctx;
  const started = Date.now();
  await withPolicyAndEnvironment(
    spec,
    ctx,
    () => loadPolicy(spec.model, { paths: ctx.paths, log: (line) => ctx.log(line) }, { trainable: false }),
    async (policy, handle) => {
      const size = handle.env.tasks.size(spec.split);
      const available = size === null ? Number.POSITIVE_INFINITY : size - spec.start_index;
      if (available <= 0) {
        throw new Error(`start_index: the ${spec.split} split of ${handle.meta.id} has ${size} tasks; start_index ${spec.start_index} is past its end`);
      }
      const tasks = Math.min(spec.num_tasks, available);
      if (tasks < spec.num_tasks) ctx.log(`the ${spec.split} split has ${size} tasks: running ${tasks}, not ${spec.num_tasks}`);
      const total = tasks * spec.samples_per_task;
      ctx.log(`inference: ${policy.source} on ${handle.meta.id} ${spec.split}[${spec.start_index}..${spec.start_index + tasks}), ${total} episodes`);
      ctx.progress(0, total, null);

      const resultsPath = join(ctx.workDir, RESULTS_FILE);
      const fd = openSync(resultsPath, 'w');
      const all: Trajectory[] = [];
      let cancelled = false;
      try {
        const order = Array.from({ length: total }, (_, i) => ({ task: Math.floor(i / spec.samples_per_task), sample: i % spec.samples_per_task }));
        for (let start = 0, batch = 0; start < total; start += spec.batch_size, batch++) {
          if (ctx.signal.aborted) break;
          const slice = order.slice(start, start + spec.batch_size);
          const items: EpisodeItem[] = [];
          for (const { task, sample } of slice) {
            const taskIndex = spec.start_index + task;
            items.push({ taskIndex, group: task, sample, task: await fetchTask(handle.env.tasks, spec.split, taskIndex, handle.meta.id) });
          }
          const trajectories = await runEpisodes(policy, handle.env, items, {
            rollout: spec.rollout,
            seed: mixSeed(spec.seed, batch),
            signal: ctx.signal,
            batchSize: spec.batch_size,
            log: (line) => ctx.log(line),
          });
          if (ctx.signal.aborted || trajectories.some((t) => t.finish === 'cancelled')) {
            cancelled = true;
            break;
          }
          const failed = trajectories.filter((t) => t.finish === 'env_error');
          if (failed.length === trajectories.length) {
            throw new Error(`environment ${handle.meta.id} failed on every episode of a batch (${failed.length}): ${failed[0].error}`);
          }
          if (trajectories.every((t) => t.finish === 'length' && t.generatedTokens === 0)) {
            const longest = Math.max(...trajectories.map((t) => t.promptIds.length));
            throw new Error(`the prompts of ${handle.meta.id} (up to ${longest} tokens) leave no room in the model's context of ${policy.contextLength} tokens`);
          }
          writeSync(fd, trajectories.map((t, i) => JSON.stringify(resultLine(t, items[i].task)) + '\n').join(''));
          all.push(...trajectories);
          const summary = summarizeEpisodes(all);
          ctx.metrics(all.length, inferenceMetrics(summary));
          ctx.progress(all.length, total, `reward ${summary.rewardMean.toFixed(3)}${summary.accuracy !== null ? `, accuracy ${summary.accuracy.toFixed(3)}` : ''}`);
        }
      } finally {
        closeSync(fd);
      }
      if (cancelled || ctx.signal.aborted) {
        ctx.log(`cancelled after ${all.length} of ${total} episodes`);
        return;
      }
      ctx.artifact(RESULTS_FILE, resultsPath);
      const summary = summarizeEpisodes(all);
      const seconds = (Date.now() - started) / 1000;
      const summaryPath = join(ctx.workDir, SUMMARY_FILE);
      const finishes: Record<string, number> = {};
      for (const t of all) finishes[t.finish] = (finishes[t.finish] ?? 0) + 1;
      writeFileSync(
        summaryPath,
        JSON.stringify(
          {
            environment: { id: handle.meta.id, version: handle.meta.version },
            model: policy.source,
            split: spec.split,
            start_index: spec.start_index,
            tasks,
            samples_per_task: spec.samples_per_task,
            episodes: all.length,
            metrics: inferenceMetrics(summary),
            results: summary.results,
            info: summary.info,
            finish: finishes,
            generated_tokens: summary.generatedTokens,
            seconds,
            generated_tokens_per_s: summary.generatedTokens / Math.max(seconds, 1e-9),
          },
          null,
          2,
        ) + '\n',
      );
      ctx.artifact(SUMMARY_FILE, summaryPath);
      const m = inferenceMetrics(summary);
      ctx.log(
        `done: ${all.length} episodes in ${seconds.toFixed(1)} s; ${Object.entries(m)
          .map(([k, v]) => `${k} ${Number(v.toFixed(4))}`)
          .join(', ')}`,
      );
    },
  );
}

async function fetchTask(tasks: { get(split: 'train' | 'test', index: number): unknown }, split: 'train' | 'test', index: number, envId: string): Promise<unknown> {
  try {
    return await tasks.get(split, index);
  } catch (error) {
    throw new Error(`environment ${envId}: cannot read ${split} task ${index}: ${(error as Error).message}`);
  }
}

function resultLine(t: Trajectory, task: unknown): InferenceResultLine {
  const lastAssistant = [...t.messages].reverse().find((m) => m.role === 'assistant');
  // The env SDK's standard info fields (`StandardInfo`) a line repeats at its top level, as given.
  const truth = groundTruth(task) ?? t.info.ground_truth;
  return {
    task_index: t.taskIndex,
    sample: t.sample,
    task,
    messages: t.messages,
    response: lastAssistant?.content ?? '',
    reward: t.reward,
    turn_rewards: t.turnRewards,
    finish: t.finish,
    info: t.info,
    ...(truth !== undefined ? { ground_truth: truth } : {}),
    ...(t.info.result !== undefined ? { result: t.info.result } : {}),
    ...(t.info.winner !== undefined ? { winner: t.info.winner } : {}),
    ...(t.error !== undefined ? { error: t.error } : {}),
    tokens: { prompt: t.promptIds.length, generated: t.generatedTokens },
  };
}

/** The ground truth of a task in the layouts datasets use (docs/design.md section 3). */
function groundTruth(task: unknown): JsonValue | undefined {
  if (!task || typeof task !== 'object') return undefined;
  const t = task as Record<string, { ground_truth?: JsonValue } | JsonValue | undefined>;
  const nested = (key: string) => {
    const v = t[key];
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as { ground_truth?: JsonValue }).ground_truth : undefined;
  };
  return (t.ground_truth as JsonValue | undefined) ?? nested('reward_model') ?? nested('extra_info');
}
