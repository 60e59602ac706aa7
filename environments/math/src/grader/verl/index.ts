/** TypeScript ports of verl's math scorers (commit b178a3cd), for `grader: 'verl'`. */
export { verlComputeScore, verlScorerFor, VERL_MATH_REWARD_SOURCES, VERL_MATH_DAPO_SOURCES } from './dispatch';
export type { VerlScore, VerlScorer, VerlOptions } from './dispatch';
export { mathRewardScore, lastBoxedOnlyString, removeBoxed, stripString, isEquiv } from './math-reward';
export type { MathRewardResult } from './math-reward';
export { gsm8kScore, gsm8kExtractSolution } from './gsm8k';
export type { Gsm8kMethod, Gsm8kResult } from './gsm8k';
export { mathDapoScore, normalizeFinalAnswer, isCorrectMinerva, isCorrectStrictBox } from './math-dapo';
export type { MathDapoResult, MathDapoOptions } from './math-dapo';
export { PyError } from './python';
