/** The math grader: answer extraction, normalisation and equivalence. */
export { gradeAnswer, groundTruthAnswer } from './grade';
export type { GradeResult } from './grade';
export { isEquivalent } from './equivalence';
export type { EquivalenceOptions } from './equivalence';
export { extractAnswer, answerFormats, lastBoxed, lastHashAnswer, lastAnswerLine, firstLine, stripMathDelimiters } from './extract';
export type { AnswerFormat } from './extract';
export { normalizeAnswer } from './normalize';
export type { Normalized } from './normalize';
export { parseExpression, evaluate, ExpressionError } from './expression';
export type { Expr } from './expression';
export { parseValue } from './value';
export type { Value } from './value';
