/**
 * The supervised warm-up before RL: imitate a response rendered from each task's fields (`sft.target`),
 * placed after the rendered prompt, or a scripted conversation of several assistant turns played
 * through the environment (`sft.turns`); the loss covers the assistant's tokens and their stop tokens
 * only, never the prompt's or the environment's.
 */
import { crossEntropyCoefficients, padBatch, type LossCoefficients, type TokenBatch } from '@opentinker/engine';
import { parseStepAnswer } from '@opentinker/env-sdk';
import type { Episode } from '@opentinker/env-sdk';
import { observationMessage, observationTokens } from '../rollout/agent-loop';
import type { Policy } from '../rollout/policy';

const FIELD = /\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}/g;

/**
 * `sft.target` with each `{field}` (or `{a.b}` path) replaced by the task's value; other braces stay,
 * so `\boxed{{ground_truth}}` renders as `\boxed{42}`. A missing or non-scalar field is an error naming it.
 * Given `info` (a scripted turn after the first: the previous step's `info`), `{info.x}` reads `x` from it
 * instead of the task.
 *
 * @example
 * ```ts
 * renderTarget('\\boxed{{ground_truth}}', { ground_truth: '42' }); // '\\boxed{42}'
 * renderTarget('{info.hint}', {}, 'sft.turns[1]', { hint: '2,3' }); // '2,3'
 * ```
 */
export function renderTarget(template: string, task: unknown, key = 'sft.target', info?: object): string {
  return template.replace(FIELD, (_, path: string) => {
    const fromInfo = info !== undefined && path.startsWith('info.');
    let value: unknown = fromInfo ? info : task;
    for (const key of (fromInfo ? path.slice('info.'.length) : path).split('.')) {
      value = value !== null && typeof value === 'object' && Object.prototype.hasOwnProperty.call(value, key) ? (value as Record<string, unknown>)[key] : undefined;
    }
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    const owner = fromInfo ? "the previous step's info" : 'the task';
    throw new Error(
      `${key}: ${owner} has no text field ${fromInfo ? path.slice('info.'.length) : path}${value === undefined ? '' : ` (it is ${value === null ? 'null' : typeof value})`}`,
    );
  });
}

/** One imitation example: the prompt as the policy sees it, then the response to learn (stop tokens included). */
export interface SftExample {
  promptIds: number[];
  responseIds: number[];
  /** 1 where `responseIds[i]` is learned (assistant tokens), 0 for environment tokens; absent: all are learned. */
  lossMask?: number[];
}

/** What a scripted replay needs of the policy: how it renders conversations, and its context. */
export type ReplayPolicy = Pick<Policy, 'renderPrompt' | 'renderObservation' | 'tokenizer' | 'stopTokenIds' | 'contextLength'>;

/** How a script is played beyond its templates. */
export interface ReplayOptions {
  /**
   * `sft.turns_repeat_last`: the last template repeats until the environment ends the episode (no
   * error then) or `maxTurns` assistant turns are played, so a script can follow a whole game.
   */
  repeatLast?: boolean;
  /** The most assistant turns a repeating script plays (`rollout.max_turns`). */
  maxTurns?: number;
}

/**
 * Plays a scripted conversation (`sft.turns`) through a real episode and records it as the policy would
 * see it in RL: `reset`, then for each template its rendering from the task's fields (and, after the
 * first turn, `{info.x}` from the previous step's `info`) as the assistant's turn (with the stop token),
 * `step` with that text, and the environment's real observation rendered by the agent loop's own
 * helpers ({@link observationTokens}). The assistant's tokens get loss mask 1, the observations' 0.
 * Nothing is added after the last turn. Returns null as soon as the conversation outgrows the context
 * (the caller skips and counts it); throws when the environment ends the episode before a fixed script
 * does (a repeating one, `repeatLast`, just ends there), or when a call fails. The caller owns (and
 * closes) the episode.
 *
 * @example
 * ```ts
 * // math-tool, plain template: 347*958= | ```py\nprint(347*958)\n```<eos> | 332426\n | \boxed{332426}<eos>
 * const example = await replayScript(policy, env.newEpisode(), task, ['```py\nprint({extra_info.expression})\n```', '\\boxed{{ground_truth}}'], seed);
 * // gomoku with task_hints: the greedy move on every turn until the game ends (at most 13 turns)
 * const game = await replayScript(policy, env.newEpisode(), task, ['{hint}', '{info.hint}'], seed, { repeatLast: true, maxTurns: 13 });
 * ```
 */
export async function replayScript(
  policy: ReplayPolicy,
  episode: Episode<unknown>,
  task: unknown,
  turns: readonly string[],
  seed: number,
  options: ReplayOptions = {},
): Promise<SftExample | null> {
  const promptIds = policy.renderPrompt(await episode.reset(task, seed));
  const stop = policy.stopTokenIds[0];
  const responseIds: number[] = [];
  const lossMask: number[] = [];
  const fits = () => promptIds.length + responseIds.length <= policy.contextLength;
  const total = options.repeatLast ? Math.max(turns.length, options.maxTurns ?? turns.length) : turns.length;
  let info: object | undefined;
  for (let k = 0; k < total; k++) {
    const t = Math.min(k, turns.length - 1);
    const text = renderTarget(turns[t], task, `sft.turns[${t}]`, info);
    const turnIds = [...policy.tokenizer.encode(text), ...(stop === undefined ? [] : [stop])];
    responseIds.push(...turnIds);
    lossMask.push(...turnIds.map(() => 1));
    if (!fits()) return null;
    if (k === total - 1) break;
    const result = parseStepAnswer(await episode.step(text), 'step');
    if (result.done) {
      if (options.repeatLast && k >= turns.length - 1) break;
      throw new Error(`sft.turns: the environment ended the episode after turn ${k + 1} of ${turns.length} (reward ${result.reward})`);
    }
    info = result.info;
    const obsIds = observationTokens(policy, observationMessage(result), turnIds[turnIds.length - 1]);
    responseIds.push(...obsIds);
    lossMask.push(...obsIds.map(() => 0));
    if (!fits()) return null;
  }
  return { promptIds, responseIds, lossMask };
}

/**
 * The padded batch of examples and its cross-entropy coefficients: the mean negative log-likelihood of
 * the learned response tokens (token-aligned, so the prompt's and the environment's tokens get no loss).
 */
export function sftBatch(examples: readonly SftExample[], padId: number): { batch: TokenBatch; coefficients: LossCoefficients; tokens: number } {
  const batch = padBatch(
    examples.map((e) => [...e.promptIds, ...e.responseIds]),
    { padId },
  );
  const lossMask = new Float32Array(batch.batchSize * batch.seqLen);
  let tokens = 0;
  examples.forEach((e, b) => {
    e.responseIds.forEach((_, i) => {
      const learned = e.lossMask ? e.lossMask[i] : 1;
      lossMask[b * batch.seqLen + e.promptIds.length + i] = learned;
      tokens += learned;
    });
  });
  return { batch, coefficients: crossEntropyCoefficients(batch, lossMask), tokens };
}
