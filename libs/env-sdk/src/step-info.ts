import type { JsonObject, JsonValue } from './messages';

/**
 * The `info.result` values that have a rate metric of their own: `val/win_rate`, `val/loss_rate` and
 * `val/draw_rate` in training, `win_rate`, `loss_rate` and `draw_rate` in an inference job.
 */
export const RATED_RESULTS = ['win', 'loss', 'draw'] as const;
export type RatedResult = (typeof RATED_RESULTS)[number];

/**
 * What an `info` key or an `info.result` value must look like to become part of a metric's name. A
 * host reads `info` from code it does not trust: longer or odd names are ignored, never reported.
 */
export const INFO_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The `info` fields hosts read by name. All are optional; report the ones that mean something for your
 * environment, with these types. Every other numeric or boolean field `k` of the last step's `info`
 * is reported as the mean `val/<k>` over a validation (up to 32 such keys, named by
 * {@link INFO_NAME_PATTERN}); other values only travel in the inference job's results.
 *
 * @example
 * ```ts
 * const info: StepInfo = { correct: graded.correct, extracted: graded.extracted }; // a typo'd type fails to compile
 * return { observation: '', reward: graded.correct ? 1 : 0, done: true, info };
 * ```
 */
export interface StandardInfo {
  /**
   * Whether the episode's answer was right. The mean over the episodes that report it is
   * `train/accuracy` (train rollouts), `val/accuracy` (validations) and `accuracy` (inference jobs).
   * Episodes without it do not count. Report it on the last step.
   */
  correct?: boolean;
  /**
   * How the episode ended, e.g. a game's outcome from the model's side. Among the episodes that report a
   * string, the fraction of each {@link RATED_RESULTS} value is `val/win_rate`, `val/loss_rate`,
   * `val/draw_rate` (and `win_rate`, … in inference jobs); other values (gomoku's `timeout`, `invalid`)
   * count in the denominator and appear in the inference summary's `results`. `null` while the episode
   * runs. Copied to each inference result line as `result`.
   */
  result?: RatedResult | (string & {}) | null;
  /**
   * The answer the episode was graded against, copied to each inference result line as `ground_truth`
   * when the task does not carry one (`ground_truth`, `reward_model.ground_truth` or
   * `extra_info.ground_truth`).
   */
  ground_truth?: JsonValue;
  /** Who won a game (e.g. `'x'`, `'o'`, `'draw'`), copied to each inference result line as `winner`. */
  winner?: JsonValue;
}

/** What a step's `info` is: any JSON object, with the {@link StandardInfo} fields typed. */
export type StepInfo = JsonObject & StandardInfo;

/** The {@link StandardInfo} keys summarised by a metric of their own, so not also as a `val/<key>` mean. */
export const SUMMARISED_INFO_KEYS: readonly (keyof StandardInfo)[] = ['correct', 'result'];

/** The standard fields of an untrusted `info`, each present only when it has a type a host accepts. */
export interface StandardInfoFields {
  /** `correct` as a number: 1 or 0 for a boolean; a finite number is taken as given (partial credit). */
  correct?: number;
  /** `result` when it is a string that {@link INFO_NAME_PATTERN} accepts. */
  result?: string;
  ground_truth?: JsonValue;
  winner?: JsonValue;
}

/**
 * Reads the {@link StandardInfo} fields the way hosts do: an `info` from another process or another
 * author is untrusted, so a field of the wrong type is left out rather than trusted.
 *
 * @example
 * ```ts
 * readStandardInfo({ correct: true, result: 'win', moves: 9 }); // { correct: 1, result: 'win' }
 * readStandardInfo({ correct: 'yes', result: 'a b' });          // {}
 * ```
 */
export function readStandardInfo(info: JsonObject | null | undefined): StandardInfoFields {
  const out: StandardInfoFields = {};
  if (!info || typeof info !== 'object') return out;
  const { correct, result, ground_truth, winner } = info;
  if (typeof correct === 'boolean') out.correct = Number(correct);
  else if (typeof correct === 'number' && Number.isFinite(correct)) out.correct = correct;
  if (typeof result === 'string' && INFO_NAME_PATTERN.test(result)) out.result = result;
  if (ground_truth !== undefined) out.ground_truth = ground_truth;
  if (winner !== undefined) out.winner = winner;
  return out;
}

/**
 * What is wrong with the {@link StandardInfo} fields of an `info`, or `null` when each one present has
 * its documented type. The conformance kit runs it on every step; hosts never refuse a step for it (they
 * ignore a mistyped field, see {@link readStandardInfo}).
 *
 * @example
 * ```ts
 * standardInfoProblem({ correct: true, result: null }); // null
 * standardInfoProblem({ correct: 1 });                 // 'info.correct must be a boolean, got number'
 * ```
 */
export function standardInfoProblem(info: JsonObject): string | null {
  const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
  if (info.correct !== undefined && typeof info.correct !== 'boolean') return `info.correct must be a boolean, got ${kind(info.correct)}`;
  const result = info.result;
  if (result !== undefined && result !== null) {
    if (typeof result !== 'string') return `info.result must be a string or null, got ${kind(result)}`;
    if (!INFO_NAME_PATTERN.test(result)) return `info.result ${JSON.stringify(result.slice(0, 80))} must match ${INFO_NAME_PATTERN} to be counted`;
  }
  return null;
}
