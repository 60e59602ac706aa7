/**
 * `@opentinker/env-math`: single-turn math problems graded 1/0 on the final answer.
 *
 * The default export is the environment definition. Named exports let other environments (such as
 * `math-tool`) reuse the grader and the task set.
 */
import math from './environment';

export default math;
export { MathEpisode, mathEnvironmentConfigSchema } from './environment';
export type { MathEnvironmentConfig } from './environment';
export { gradeAnswer, groundTruthAnswer, isEquivalent, extractAnswer, readFinalAnswer, answerFormats, lastBoxed, maskAsides, normalizeAnswer, KNOWN_UNITS } from './grader';
export type { GradeResult, GradeVerdict, GradeOptions, EquivalenceOptions, AnswerFormat, AnswerProblem, FinalAnswer } from './grader';
export { verlComputeScore, verlScorerFor, mathRewardScore, gsm8kScore, mathDapoScore } from './grader/verl';
export type { VerlScore, VerlScorer, VerlOptions } from './grader/verl';
export { createMathTasks, createSyntheticTasks, mathConfigPolicy, mathConfigShape } from './tasks';
export type { MathTask, MathTaskSet, MathTaskConfig, PromptMessage, InvalidRow } from './tasks';
export { validateMathRow } from './tasks/rows';
export { generateProblem, BOXED_INSTRUCTION, SYNTHETIC_DATA_SOURCE, EQUATION_DATA_SOURCE } from './tasks/synthetic';
export type { SyntheticProblem, ProblemStyle } from './tasks/synthetic';
export { prepareDataset } from './prepare';
export type { PrepareOptions, PrepareResult } from './prepare';
