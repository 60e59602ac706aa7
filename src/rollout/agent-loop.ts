import { sample, StopStringScanner } from '@opentinker/engine';
import { parseResetAnswer, parseStepAnswer } from '@opentinker/env-sdk';
import type { Episode, EnvironmentInstance, JsonObject, Message, StepResult } from '@opentinker/env-sdk';
import type { RolloutSpec } from './rl-spec';
import type { Policy } from './policy';
import type { Trajectory } from './trajectory';

/** One episode to play: a task of the split, in its group (for group-relative advantages). */
export interface EpisodeItem {
  taskIndex: number;
  group: number;
  sample: number;
  task: unknown;
}

export interface EpisodeOptions {
  rollout: RolloutSpec;
  /** Overrides `rollout.temperature` (e.g. 0 for greedy validation). */
  temperature?: number;
  seed: number;
  /** Aborting ends every live episode promptly with finish `cancelled`. */
  signal?: AbortSignal;
  /** Most episodes sampled together in one engine call (default: all live ones). */
  batchSize?: number;
  log?(line: string): void;
}

type Finish = Trajectory['finish'];

interface EpisodeState {
  item: EpisodeItem;
  episode: Episode<unknown> | null;
  messages: Message[];
  promptIds: number[];
  responseIds: number[];
  lossMask: number[];
  oldLogProbs: number[];
  turnEnds: number[];
  turnRewards: number[];
  info: JsonObject;
  finish: Finish | null;
  error?: string;
  generated: number;
  turns: number;
  // The turn being sampled:
  turnIds: number[];
  turnLogProbs: number[];
  turnCap: number;
  scanner: StopStringScanner | null;
  stoppedByToken: boolean;
}

/** A 32-bit mix of several integers: seeds that differ in any part give unrelated streams. */
export function mixSeed(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x01000193) >>> 0;
    h = Math.imul(h ^ (h >>> 15), 0x85ebca6b) >>> 0;
    h = (h ^ (h >>> 13)) >>> 0;
  }
  return h;
}

/**
 * Plays episodes of a policy against an environment and records them token in, token out
 * ({@link Trajectory}). Per turn, all live episodes are sampled together (one engine `sample()` per
 * chunk of `batchSize`, KV-cached), then their environments are stepped concurrently (at most
 * `rollout.env_concurrency` calls in flight, each bounded by `env_timeout_seconds`). Observations join
 * the sequence as rendered by the chat template with loss mask 0. An episode ends when the environment
 * says done, after `max_turns`, when the response budget (`max_response_tokens`) or the context is
 * spent (`length`), when an environment call fails (`env_error`: a `reset` is retried `env_retries`
 * times on a fresh episode; a `step` is never replayed, since the episode's state may have moved), or
 * when `signal` aborts (`cancelled`).
 *
 * Deterministic for a seed: sampling seeds derive from `seed`, the turn and the chunk; reset seeds from
 * `seed` and the task, shared by the samples of a task so a group faces the same environment.
 */
export async function runEpisodes(policy: Policy, env: EnvironmentInstance<unknown>, items: readonly EpisodeItem[], opts: EpisodeOptions): Promise<Trajectory[]> {
  const r = opts.rollout;
  const signal = opts.signal;
  const budget = Math.min(r.max_response_tokens ?? Number.POSITIVE_INFINITY, policy.contextLength);
  const states: EpisodeState[] = items.map((item) => ({
    item,
    episode: null,
    messages: [],
    promptIds: [],
    responseIds: [],
    lossMask: [],
    oldLogProbs: [],
    turnEnds: [],
    turnRewards: [],
    info: {},
    finish: null,
    generated: 0,
    turns: 0,
    turnIds: [],
    turnLogProbs: [],
    turnCap: 0,
    scanner: null,
    stoppedByToken: false,
  }));
  const limit = limiter(r.env_concurrency);
  const timeoutMs = r.env_timeout_seconds * 1000;
  const call = <T>(what: string, fn: () => T | Promise<T>): Promise<T> => limit(() => withTimeout(fn, timeoutMs, what, signal));

  try {
    await Promise.all(states.map((s) => resetEpisode(s)));
    for (let turn = 0; turn < r.max_turns; turn++) {
      const live = states.filter((s) => s.finish === null);
      if (live.length === 0) break;
      if (signal?.aborted) break;
      await sampleTurn(live, turn);
      if (signal?.aborted) break;
      await Promise.all(live.map((s) => stepEpisode(s)));
    }
  } finally {
    for (const s of states) {
      if (s.finish === null) s.finish = signal?.aborted ? 'cancelled' : 'max_turns';
      // A turn sampled but never stepped (cancelled) still gets its reward slot.
      while (s.turnRewards.length < s.turnEnds.length) s.turnRewards.push(0);
    }
    await Promise.all(states.map((s) => closeEpisode(s)));
  }
  return states.map(toTrajectory);

  async function resetEpisode(s: EpisodeState): Promise<void> {
    const seed = mixSeed(opts.seed, s.item.taskIndex);
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) return void (s.finish = 'cancelled');
      let episode: Episode<unknown> | null = null;
      try {
        episode = env.newEpisode();
        const first = await call('reset', () => episode!.reset(s.item.task, seed));
        s.episode = episode;
        s.messages = parseResetAnswer(first, 'reset');
        s.promptIds = policy.renderPrompt(s.messages);
        if (s.promptIds.length + 1 > policy.contextLength) s.finish = 'length';
        return;
      } catch (error) {
        if (episode) await closeQuietly(episode);
        if (signal?.aborted) return void (s.finish = 'cancelled');
        if (attempt >= r.env_retries) {
          s.finish = 'env_error';
          s.error = `reset failed after ${attempt + 1} attempt(s): ${errorText(error)}`;
          opts.log?.(`episode task ${s.item.taskIndex} sample ${s.item.sample}: ${s.error}`);
          return;
        }
      }
    }
  }

  async function sampleTurn(live: EpisodeState[], turn: number): Promise<void> {
    for (const s of live) {
      const used = s.promptIds.length + s.responseIds.length;
      s.turnIds = [];
      s.turnLogProbs = [];
      s.turnCap = Math.min(r.max_new_tokens, budget - s.responseIds.length, policy.contextLength - used);
      s.scanner = r.stop.length > 0 ? new StopStringScanner(policy.tokenizer, r.stop) : null;
      s.stoppedByToken = false;
    }
    const stopIds = new Set(policy.stopTokenIds);
    const unfinished = (s: EpisodeState) => !s.stoppedByToken && !s.scanner?.match && s.turnIds.length < s.turnCap;
    let pending = live.filter(unfinished);
    // A chunk's rows share one token limit that must fit every row's context; rows cut short by a
    // neighbour's context continue in the next pass (conditionals are the same, so nothing changes but
    // the cost). Sorting by room keeps that rare.
    for (let pass = 0; pending.length > 0 && !signal?.aborted; pass++) {
      const room = (s: EpisodeState) => policy.contextLength - s.promptIds.length - s.responseIds.length - s.turnIds.length;
      const order = pending
        .map((s, i) => ({ s, i }))
        .sort((a, b) => room(b.s) - room(a.s) || a.i - b.i)
        .map((x) => x.s);
      const size = Math.max(1, opts.batchSize ?? order.length);
      for (let c = 0; c * size < order.length && !signal?.aborted; c++) {
        const chunk = order.slice(c * size, (c + 1) * size);
        const maxNew = Math.min(Math.max(...chunk.map((s) => s.turnCap - s.turnIds.length)), Math.min(...chunk.map(room)));
        const outs = sample(
          policy.model,
          chunk.map((s) => [...s.promptIds, ...s.responseIds, ...s.turnIds]),
          {
            maxNewTokens: maxNew,
            temperature: opts.temperature ?? r.temperature,
            topP: r.top_p,
            topK: r.top_k,
            seed: mixSeed(opts.seed, 0x5eed, turn, pass, c),
            stopTokenIds: policy.stopTokenIds,
            // Rows of the model's vocabulary no token of its tokenizer uses are never drawn.
            vocabLimit: policy.tokenizer.vocabSize,
            stopCheck: (row, generated) => {
              if (signal?.aborted) return true;
              const s = chunk[row];
              if (s.scanner?.push(generated[generated.length - 1])) return true;
              return s.turnIds.length + generated.length >= s.turnCap;
            },
          },
        );
        outs.forEach((out, row) => {
          const s = chunk[row];
          s.turnIds.push(...out.tokens);
          s.turnLogProbs.push(...out.logProbs);
          if (out.tokens.length > 0 && stopIds.has(out.tokens[out.tokens.length - 1])) s.stoppedByToken = true;
        });
        // Let the event loop breathe between chunks: cancellation and IPC arrive there.
        await new Promise((resolve) => setImmediate(resolve));
      }
      pending = pending.filter(unfinished);
    }
    for (const s of live) {
      if (s.turnIds.length === 0) continue;
      s.responseIds.push(...s.turnIds);
      s.lossMask.push(...s.turnIds.map(() => 1));
      s.oldLogProbs.push(...s.turnLogProbs);
      s.turnEnds.push(s.responseIds.length - 1);
      s.generated += s.turnIds.length;
      s.turns++;
    }
  }

  async function stepEpisode(s: EpisodeState): Promise<void> {
    if (s.turnIds.length === 0) return void (s.finish = signal?.aborted ? 'cancelled' : 'length');
    const text = policy.tokenizer.decode(s.turnIds, { skipSpecial: true });
    s.messages.push({ role: 'assistant', content: text });
    let result: StepResult;
    try {
      result = parseStepAnswer(await call('step', () => s.episode!.step(text)), 'step');
    } catch (error) {
      // The turn was sampled; its reward slot stays so turnEnds and turnRewards keep one entry per turn.
      s.turnRewards.push(0);
      if (signal?.aborted) return void (s.finish = 'cancelled');
      s.finish = 'env_error';
      s.error = `step failed: ${errorText(error)}`;
      opts.log?.(`episode task ${s.item.taskIndex} sample ${s.item.sample}: ${s.error}`);
      return;
    }
    s.turnRewards.push(result.reward);
    s.info = result.info;
    const observation = observationMessage(result);
    if (observation) s.messages.push(observation);
    if (result.done) return void (s.finish = 'done');
    if (s.turns >= r.max_turns) return void (s.finish = 'max_turns');
    const obsIds = observationTokens(policy, observation, s.turnIds[s.turnIds.length - 1]);
    const after = s.responseIds.length + obsIds.length;
    // Room for at least one more sampled token, in the budget and in the context.
    if (after + 1 > budget || s.promptIds.length + after + 1 > policy.contextLength) return void (s.finish = 'length');
    s.responseIds.push(...obsIds);
    s.lossMask.push(...obsIds.map(() => 0));
    s.oldLogProbs.push(...obsIds.map(() => 0));
  }

  async function closeEpisode(s: EpisodeState): Promise<void> {
    if (!s.episode) return;
    const episode = s.episode;
    s.episode = null;
    await closeQuietly(episode, timeoutMs);
  }
}

function toTrajectory(s: EpisodeState): Trajectory {
  return {
    taskIndex: s.item.taskIndex,
    group: s.item.group,
    sample: s.item.sample,
    promptIds: s.promptIds,
    responseIds: s.responseIds,
    lossMask: Uint8Array.from(s.lossMask),
    oldLogProbs: Float32Array.from(s.oldLogProbs),
    turnEnds: s.turnEnds,
    turnRewards: s.turnRewards,
    reward: s.turnRewards.reduce((a, b) => a + b, 0),
    finish: s.finish ?? 'cancelled',
    messages: s.messages,
    info: s.info,
    generatedTokens: s.generated,
    ...(s.error !== undefined ? { error: s.error } : {}),
  };
}

/** The message a step's observation adds to the conversation: null when the observation is empty. */
export function observationMessage(result: Pick<StepResult, 'observation' | 'observationRole'>): Message | null {
  return result.observation.length > 0 ? { role: result.observationRole ?? 'user', content: result.observation } : null;
}

/**
 * The tokens between a model turn that ended with `lastTokenId` and the next model turn: the
 * observation as the chat template renders it there, plus the opening of the next assistant turn;
 * none for an empty observation. They join the sequence with loss mask 0. The scripted SFT replay
 * (`sft.ts`) uses this too, so its examples are token for token what an episode here records.
 */
export function observationTokens(policy: Pick<Policy, 'renderObservation'>, observation: Message | null, lastTokenId: number | undefined): number[] {
  return observation ? policy.renderObservation([observation], lastTokenId) : [];
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function closeQuietly(episode: Episode<unknown>, timeoutMs = 5000): Promise<void> {
  try {
    await withTimeout(() => episode.close(), timeoutMs, 'close');
  } catch {
    // A failing close must not lose the episode's record; the environment frees it on its own close.
  }
}

/** Runs `fn` with a deadline; the call itself cannot be interrupted, but nobody waits for it past the deadline. */
function withTimeout<T>(fn: () => T | Promise<T>, ms: number, what: string, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const settle = (fn: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const timer = setTimeout(() => settle(() => reject(new Error(`${what} took longer than ${ms / 1000} s`))), ms);
    const onAbort = () => settle(() => reject(new Error(`${what} cancelled`)));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    Promise.resolve()
      .then(fn)
      .then(
        (v) => settle(() => resolve(v)),
        (e) => settle(() => reject(e)),
      );
  });
}

/** At most `n` calls of the returned function run at once; the rest wait their turn in order. */
function limiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: Array<() => void> = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= n) await new Promise<void>((resolve) => queue.push(resolve));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      queue.shift()?.();
    }
  };
}
