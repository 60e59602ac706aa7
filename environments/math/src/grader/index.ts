/** The math grader: answer extraction, normalisation and equivalence; verl's scorers in `./verl`. */
export { gradeAnswer, groundTruthAnswer } from './grade';
export type { GradeResult, GradeVerdict, GradeOptions } from './grade';
export { isEquivalent } from './equivalence';
export type { EquivalenceOptions } from './equivalence';
export { readFinalAnswer, extractAnswer, answerFormats, lastBoxed, lastHashAnswer, lastAnswerLine, firstLine, stripMathDelimiters } from './extract';
export type { AnswerFormat, AnswerProblem, FinalAnswer, ReadOptions } from './extract';
export { maskAsides, thoughtRanges } from './regions';
export { KNOWN_UNITS } from './units';
export { normalizeAnswer } from './normalize';
export type { Normalized } from './normalize';
export { parseExpression, evaluate, ExpressionError } from './expression';
export type { Expr } from './expression';
export { parseValue } from './value';
export type { Value } from './value';
