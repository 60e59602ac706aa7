/**
 * Summary metrics of a set of episodes, with the names contracts.md fixes: rewards, response length,
 * turns, accuracy (math's `info.correct`), game outcomes (gomoku's `info.result`) and the means of the
 * other numeric `info` fields the environment reports.
 */
import type { Trajectory } from './trajectory';

/** `info` keys summarised by name of their own (not as generic means). */
const NAMED_INFO = new Set(['correct', 'result']);
/** An environment's info is untrusted: bound how many generic keys become metrics and how they are named. */
const MAX_INFO_KEYS = 32;
const INFO_KEY = /^[A-Za-z0-9_.-]{1,64}$/;

export interface EpisodeSummary {
  count: number;
  rewardMean: number;
  rewardStd: number;
  rewardMin: number;
  rewardMax: number;
  responseLengthMean: number;
  turnsMean: number;
  envErrors: number;
  /** Mean of `info.correct` over episodes that report it, or null when none does. */
  accuracy: number | null;
  /** Fractions of `info.result` values (`win`, `loss`, `draw`, …) among episodes that report one. */
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
    if (typeof i.correct === 'boolean' || typeof i.correct === 'number') correct.push(Number(i.correct));
    if (typeof i.result === 'string' && INFO_KEY.test(i.result)) {
      withResult++;
      results.set(i.result, (results.get(i.result) ?? 0) + 1);
    }
    for (const [k, v] of Object.entries(i)) {
      if (NAMED_INFO.has(k) || !INFO_KEY.test(k)) continue;
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
    'response_length/mean': s.responseLengthMean,
    'turns/mean': s.turnsMean,
    'episodes/env_errors': s.envErrors,
    ...(s.accuracy !== null ? { 'train/accuracy': s.accuracy } : {}),
  };
}

/** Validation metrics: `val/reward_mean`, `val/accuracy`, `val/win_rate`, `val/loss_rate`, `val/draw_rate`, `val/<info key>`. */
export function validationMetrics(s: EpisodeSummary): Record<string, number> {
  const out: Record<string, number> = { 'val/reward_mean': s.rewardMean, 'val/response_length': s.responseLengthMean };
  if (s.accuracy !== null) out['val/accuracy'] = s.accuracy;
  if (Object.keys(s.results).length > 0) {
    out['val/win_rate'] = s.results.win ?? 0;
    out['val/loss_rate'] = s.results.loss ?? 0;
    out['val/draw_rate'] = s.results.draw ?? 0;
  }
  for (const [k, v] of Object.entries(s.info)) out[`val/${k}`] = v;
  return out;
}
