/**
 * Summary metrics of a set of episodes: rewards, response length, turns, accuracy and game outcomes
 * (the env SDK's standard `info` fields `correct` and `result`, see `StandardInfo`) and the means of
 * the other numeric `info` fields the environment reports.
 */
import { INFO_NAME_PATTERN, RATED_RESULTS, readStandardInfo, SUMMARISED_INFO_KEYS } from '@opentinker/env-sdk';
import type { RatedResult } from '@opentinker/env-sdk';
import type { Trajectory } from './trajectory';

const NAMED_INFO = new Set<string>(SUMMARISED_INFO_KEYS);
/** An environment's info is untrusted: bound how many generic keys become metrics. */
const MAX_INFO_KEYS = 32;

export interface EpisodeSummary {
  count: number;
  rewardMean: number;
  rewardStd: number;
  rewardMin: number;
  rewardMax: number;
  responseLengthMean: number;
  /** Mean tokens of the first prompt (what the policy was given before its first turn). */
  promptLengthMean: number;
  turnsMean: number;
  envErrors: number;
  /** Mean of `info.correct` over episodes that report it, or null when none does. */
  accuracy: number | null;
  /** Fractions of `info.result` values (`win`, `loss`, `draw`, `timeout`, …) among episodes that report one. */
  results: Record<string, number>;
  /** Means of other numeric or boolean `info` fields. */
  info: Record<string, number>;
  generatedTokens: number;
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

export function summarizeEpisodes(trajectories: readonly Trajectory[]): EpisodeSummary {
  const rewards = trajectories.map((t) => t.reward);
  const m = mean(rewards);
  const correct: number[] = [];
  const results = new Map<string, number>();
  let withResult = 0;
  const info = new Map<string, number[]>();
  for (const t of trajectories) {
    const i = t.info ?? {};
    const standard = readStandardInfo(i);
    if (standard.correct !== undefined) correct.push(standard.correct);
    if (standard.result !== undefined) {
      withResult++;
      results.set(standard.result, (results.get(standard.result) ?? 0) + 1);
    }
    for (const [k, v] of Object.entries(i)) {
      if (NAMED_INFO.has(k) || !INFO_NAME_PATTERN.test(k)) continue;
      if (typeof v !== 'number' && typeof v !== 'boolean') continue;
      if (typeof v === 'number' && !Number.isFinite(v)) continue;
      const list = info.get(k) ?? (info.size < MAX_INFO_KEYS ? [] : null);
      if (!list) continue;
      list.push(Number(v));
      info.set(k, list);
    }
  }
  return {
    count: trajectories.length,
    rewardMean: m,
    rewardStd: Math.sqrt(mean(rewards.map((r) => (r - m) ** 2))),
    rewardMin: rewards.length ? Math.min(...rewards) : 0,
    rewardMax: rewards.length ? Math.max(...rewards) : 0,
    responseLengthMean: mean(trajectories.map((t) => t.generatedTokens)),
    promptLengthMean: mean(trajectories.map((t) => t.promptIds.length)),
    turnsMean: mean(trajectories.map((t) => t.turnEnds.length)),
    envErrors: trajectories.filter((t) => t.finish === 'env_error').length,
    accuracy: correct.length ? mean(correct) : null,
    results: Object.fromEntries([...results].map(([k, n]) => [k, n / withResult])),
    info: Object.fromEntries([...info].map(([k, v]) => [k, mean(v)])),
    generatedTokens: trajectories.reduce((n, t) => n + t.generatedTokens, 0),
  };
}

/** Train-rollout metrics of a step. */
export function rolloutMetrics(s: EpisodeSummary): Record<string, number> {
  return {
    'reward/mean': s.rewardMean,
    'reward/std': s.rewardStd,
    'reward/min': s.rewardMin,
    'reward/max': s.rewardMax,
    // verl's names (compute_data_metrics) for the same per-episode scores, so its dashboards and
    // TensorBoard/W&B panels find them; no KL penalty is folded into rewards here, so verl's
    // critic/rewards/* would only repeat them.
    'critic/score/mean': s.rewardMean,
    'critic/score/max': s.rewardMax,
    'critic/score/min': s.rewardMin,
    'response_length/mean': s.responseLengthMean,
    'prompt_length/mean': s.promptLengthMean,
    'turns/mean': s.turnsMean,
    'episodes/env_errors': s.envErrors,
    ...(s.accuracy !== null ? { 'train/accuracy': s.accuracy } : {}),
  };
}

/**
 * `<result>_rate` for each of the SDK's `RATED_RESULTS` (`win_rate`, `loss_rate`, `draw_rate`), 0 for
 * one no episode reached; empty when no episode reports a result.
 */
export function resultRates(s: EpisodeSummary): Record<`${RatedResult}_rate`, number> | Record<string, never> {
  if (Object.keys(s.results).length === 0) return {};
  return Object.fromEntries(RATED_RESULTS.map((r) => [`${r}_rate`, s.results[r] ?? 0])) as Record<`${RatedResult}_rate`, number>;
}

/** Validation metrics: `val/reward_mean`, `val/accuracy`, `val/win_rate`, `val/loss_rate`, `val/draw_rate`, `val/<info key>`. */
export function validationMetrics(s: EpisodeSummary): Record<string, number> {
  const out: Record<string, number> = { 'val/reward_mean': s.rewardMean, 'val/response_length': s.responseLengthMean };
  if (s.accuracy !== null) out['val/accuracy'] = s.accuracy;
  for (const [k, v] of Object.entries(resultRates(s))) out[`val/${k}`] = v;
  for (const [k, v] of Object.entries(s.info)) out[`val/${k}`] = v;
  return out;
}
