/**
 * The reward of a math episode under the configured grader: `'strict'` (the default, this package's
 * grader, 1 / 0 / `format_penalty`) or `'verl'` (verl's own scorer for the task's data source, with the
 * value verl returns).
 */
import { EnvironmentError } from '@opentinker/env-sdk';
import type { StepInfo, TaskSet } from '@opentinker/env-sdk';
import { gradeAnswer } from './grader/grade';
import { verlComputeScore, verlScorerFor } from './grader/verl';
import type { Gsm8kMethod } from './grader/verl';
import type { MathTask } from './tasks';

/** The config keys scoring reads. */
export interface ScoringConfig {
  grader: 'strict' | 'verl';
  format_penalty: number;
  mixed_numbers: boolean;
  verl_gsm8k_method: Gsm8kMethod;
  verl_strict_box_verify: boolean;
}

/** A step's reward and the grading part of its `info` (`correct` is the standard field: accuracy). */
export interface Scored {
  reward: number;
  info: StepInfo;
}

/**
 * Scores one response.
 *
 * - strict: 1 when correct, `format_penalty` when no answer was found, else 0; `info.verdict` says why
 *   (`correct`, `wrong`, `no_answer`, `unclosed_box`, `several_answers`, `hedged`, `retracted`).
 * - verl: the score of verl's scorer for the data source (math_reward 0/1, gsm8k 0/1, math_dapo −1/+1),
 *   given the raw ground truth as verl would be; `info.scorer` names it.
 */
export function scoreResponse(config: ScoringConfig, response: string, truth: string, task: MathTask): Scored {
  const text = typeof response === 'string' ? response : '';
  if (config.grader === 'verl') {
    const scored = verlComputeScore(task.data_source, text, rawGroundTruth(task), {
      gsm8kMethod: config.verl_gsm8k_method,
      strictBoxVerify: config.verl_strict_box_verify,
    });
    // reset refuses tasks without a ported scorer, so this is only reached with one.
    if (!scored) throw new EnvironmentError('ENV_INVALID_TASK', unsupported(task.data_source), 'task.data_source');
    return {
      reward: scored.score,
      info: { correct: scored.correct, extracted: scored.extracted, grader: 'verl', scorer: scored.scorer },
    };
  }
  const graded = gradeAnswer(text, truth, task.data_source, { mixedNumbers: config.mixed_numbers });
  const reward = graded.correct ? 1 : graded.extracted === null ? config.format_penalty : 0;
  return { reward, info: { correct: graded.correct, extracted: graded.extracted, verdict: graded.verdict } };
}

/** The ground truth as verl receives it (`reward_model.ground_truth`): the task's, unreduced. */
function rawGroundTruth(task: MathTask): string {
  const t: unknown = task.ground_truth;
  return typeof t === 'string' ? t : String(t);
}

function unsupported(source: unknown): string {
  return `grader 'verl' has no scorer for data_source ${JSON.stringify(source)}: verl's math scorers cover openai/gsm8k, lighteval/MATH, DigitalLearningGmbH/MATH-lighteval, HuggingFaceH4/MATH-500, math_dapo, math, math_dapo_reasoning and aime*`;
}

/** Refuses a task `grader: 'verl'` cannot score (`ENV_INVALID_TASK`), at reset rather than mid-episode. */
export function checkTaskForGrader(config: Pick<ScoringConfig, 'grader'>, task: MathTask): void {
  if (config.grader === 'verl' && verlScorerFor(task.data_source) === null) {
    throw new EnvironmentError('ENV_INVALID_TASK', unsupported(task.data_source), 'task.data_source');
  }
}

/**
 * Refuses, when the environment is created, a `grader: 'verl'` config whose tasks verl cannot score
 * (the synthetic generator, or dataset rows of other sources) or that sets `format_penalty` (verl's
 * scores have no format penalty): `ENV_INVALID_CONFIG`.
 */
export async function checkGraderConfig(config: Pick<ScoringConfig, 'grader' | 'format_penalty'>, tasks: TaskSet<MathTask>): Promise<void> {
  if (config.grader !== 'verl') return;
  if (config.format_penalty !== 0) {
    throw new EnvironmentError('ENV_INVALID_CONFIG', "format_penalty applies to grader 'strict' only: grader 'verl' rewards what verl's scorer returns", 'config.format_penalty');
  }
  const seen = new Set<string>();
  for (const split of ['train', 'test'] as const) {
    const n = tasks.size(split);
    // The synthetic train split is endless: its data source is that of its first task.
    const count = n === null ? 1 : n;
    for (let i = 0; i < count; i++) {
      const task = await tasks.get(split, i);
      const source = String(task.data_source);
      if (seen.has(source)) continue;
      seen.add(source);
      if (verlScorerFor(task.data_source) === null) {
        throw new EnvironmentError('ENV_INVALID_CONFIG', `${unsupported(task.data_source)} (${split} task ${i})`, 'config.grader');
      }
    }
  }
}
