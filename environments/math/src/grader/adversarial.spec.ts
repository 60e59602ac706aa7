import { gradeAnswer } from './grade';
import type { GradeVerdict } from './grade';

/**
 * Answers a reward-seeking policy would try, each with the grade a careful human gives and the rule
 * that decides it (README: "Adversarial answers"). Ground truth 12 unless stated.
 */
const MATH = 'DigitalLearningGmbH/MATH-lighteval';
const GSM8K = 'openai/gsm8k';
const DAPO = 'math_dapo';
const EQUATION = 'opentinker/synthetic-equation';

/** [rule, response, data source, verdict] */
const CASES: Array<[string, string, string, GradeVerdict]> = [
  // Baselines: plain correct answers stay correct.
  ['baseline: one box', 'So the total is $\\boxed{12}$.', MATH, 'correct'],
  ['baseline: the same answer boxed twice', 'We get \\boxed{12}. Checking: 3 \\cdot 4 = 12, so \\boxed{12}.', MATH, 'correct'],
  ['baseline: two spellings of one answer', 'That is \\boxed{\\frac{24}{2}}, i.e. \\boxed{12}.', MATH, 'correct'],
  ['baseline: a remark after the answer', 'Thus \\boxed{12}.\n\nI hope it is correct.', MATH, 'correct'],
  ['baseline: a clause before the answer that negates something else', 'Since x cannot be negative, x = \\boxed{12}.', MATH, 'correct'],
  ['baseline: the echoed instruction is an empty box', 'Output the final answer within \\boxed{}. It is \\boxed{12}.', MATH, 'correct'],

  // Several answers.
  ['several boxes: \\boxed{12} then \\boxed{13}', 'Maybe \\boxed{13}. No: \\boxed{12}', MATH, 'several_answers'],
  ['several boxes: the last is right, the first is not', 'First guess \\boxed{11}, but correcting: \\boxed{12}.', MATH, 'several_answers'],
  ['several boxes: a box per candidate', '\\boxed{10} \\boxed{11} \\boxed{12} \\boxed{13}', MATH, 'several_answers'],
  ['several boxes: a hundred of them', Array.from({ length: 100 }, (_, i) => `\\boxed{${i}}`).join(' '), MATH, 'several_answers'],
  ['several boxes: joined by or', '\\boxed{12} or \\boxed{13}', MATH, 'several_answers'],
  ['several formats: a box and a different #### line', '\\boxed{13}\n#### 12', GSM8K, 'several_answers'],
  ['several formats: an Answer: line and a different box', 'Answer: 13\n\\boxed{12}', MATH, 'several_answers'],
  ['several #### lines', '#### 13\nOn reflection:\n#### 12', GSM8K, 'several_answers'],
  ['several Answer: lines', 'Answer: 13\nWait, recheck.\nAnswer: 12', DAPO, 'several_answers'],

  // All candidates listed.
  ['candidates listed in one box', '\\boxed{10, 11, 12, 13}', MATH, 'wrong'],
  ['candidates as a set', '\\boxed{\\{10, 11, 12\\}}', MATH, 'wrong'],
  ['candidates in prose, no box', 'The answer is one of 10, 11, 12 or 13.', MATH, 'wrong'],
  ['candidates after ####', '#### 12, 13', GSM8K, 'hedged'],
  ['candidates after ####, spaced', '#### 12 13 14', GSM8K, 'hedged'],
  ['candidates on an Answer: line', 'Answer: 10, 11, 12', DAPO, 'wrong'],

  // Boxes that are not the response's answer.
  ['a box in a fenced code block', 'Format:\n```\n\\boxed{12}\n```\nI could not solve it.', MATH, 'no_answer'],
  ['a box in a code block that is never closed', 'Here:\n```latex\n\\boxed{12}', MATH, 'no_answer'],
  ['a box in inline code', 'Write it as `\\boxed{12}`.', MATH, 'no_answer'],
  ['a box in a block quote', '> The answer is \\boxed{12}\n\nI do not know.', MATH, 'no_answer'],
  ['a box in a quotation', 'The instructions say "write \\boxed{12} at the end".', MATH, 'no_answer'],
  ['a box in a thought only', '<think>it is \\boxed{12}</think>', MATH, 'no_answer'],
  ['a thought that never closes', 'Let me think. <think> so \\boxed{12}', MATH, 'no_answer'],
  ['a different box in code does not count against the answer', '```python\nprint("\\\\boxed{13}")\n```\nSo \\boxed{12}.', MATH, 'correct'],
  ['a different box in a thought does not count against the answer', '<think>maybe \\boxed{13}</think>\nThe answer is \\boxed{12}.', MATH, 'correct'],

  // The answer followed by its negation.
  ['negation in the same sentence', '\\boxed{12} is wrong.', MATH, 'hedged'],
  ['negation in the next sentence', 'The answer is \\boxed{12}. That is wrong, though.', MATH, 'retracted'],
  ['retraction after a line break', '\\boxed{12}\n\nWait, that is incorrect.', MATH, 'retracted'],
  ['retraction: not correct', '\\boxed{12}\nThis is not correct.', MATH, 'retracted'],
  ['negation before', 'The answer is not \\boxed{12}.', MATH, 'hedged'],
  ['negation inside the box, in text', '\\boxed{\\text{not }12}', MATH, 'wrong'],
  ['negation inside the box, plain words', '\\boxed{12 is wrong}', MATH, 'wrong'],
  ['negation after ####', '#### 12 is wrong', GSM8K, 'hedged'],
  ['negation on the Answer: line', 'Answer: 12 is wrong', DAPO, 'wrong'],

  // Hedges.
  ['hedge: 12 or 13 in a box', '\\boxed{12 or 13}', MATH, 'wrong'],
  ['hedge: either 12 or 13 in a box', '\\boxed{either 12 or 13}', MATH, 'wrong'],
  ['hedge: either … or around the box', 'It is either \\boxed{12} or 13.', MATH, 'hedged'],
  ['hedge: another candidate before the box', 'It is 13 or \\boxed{12}.', MATH, 'hedged'],
  ['hedge: or after the box', '\\boxed{12} (or maybe 13)', MATH, 'hedged'],
  ['hedge: question mark in the box', '\\boxed{12?}', MATH, 'wrong'],
  ['hedge: question mark after the box', 'Is it $\\boxed{12}$?', MATH, 'hedged'],
  ['hedge: maybe', 'Maybe the answer is \\boxed{12}.', MATH, 'hedged'],
  ['hedge: could be', 'It could be \\boxed{12}.', MATH, 'hedged'],
  ['hedge: I guess', 'I guess the answer is \\boxed{12}.', MATH, 'hedged'],
  ['hedge: or after ####', '#### 12 or 13', GSM8K, 'hedged'],
  ['hedge: question mark after ####', '#### 12?', GSM8K, 'hedged'],
  ['hedge: or on an Answer: line', 'Answer: 12 or 13', DAPO, 'wrong'],
  ['hedge: question mark on an Answer: line', 'Answer: 12?', DAPO, 'wrong'],
  ['hedge: an equation answer with or', '12 or 13\n', EQUATION, 'wrong'],
  ['hedge: an equation answer with a question mark', '12?\n', EQUATION, 'wrong'],

  // Text beside a number.
  ['text: a choice letter beside the value', '\\boxed{\\textbf{(C) }12}', MATH, 'wrong'],
  ['text: a word that is not a unit', '\\boxed{12 \\text{ or so}}', MATH, 'wrong'],
  ['text: a known unit', '\\boxed{12 \\text{ cm}}', MATH, 'correct'],
  ['text: a known unit as a word', 'Answer: 12 inches', DAPO, 'correct'],
  ['text: an article', 'Answer: a 12', DAPO, 'correct'],
  ['text: a remark after the #### number', '#### 12 We double-check every step.', GSM8K, 'correct'],

  // Unicode look-alike digits.
  ['unicode: fullwidth digits', '\\boxed{１２}', MATH, 'wrong'],
  ['unicode: Arabic-Indic digits', '\\boxed{١٢}', MATH, 'wrong'],
  ['unicode: mathematical bold digits', '\\boxed{𝟏𝟐}', MATH, 'wrong'],
  ['unicode: superscript digits', '\\boxed{¹²}', MATH, 'wrong'],
  ['unicode: a zero-width space between digits', '\\boxed{1\u200b2}', MATH, 'wrong'],
  ['unicode: fullwidth digits after ####', '#### １２', GSM8K, 'no_answer'],
  ['unicode: fullwidth digits in an equation answer', '１２\n', EQUATION, 'wrong'],

  // Malformed boxes.
  ['a box that never closes', '\\boxed{12} and then \\boxed{13', MATH, 'unclosed_box'],
  ['a box inside a box', '\\boxed{\\boxed{12}}', MATH, 'correct'],
];

describe('adversarial answers (ground truth 12)', () => {
  it.each(CASES)('%s', (_rule, response, source, verdict) => {
    const result = gradeAnswer(response, '12', source);
    expect(result.verdict).toBe(verdict);
    expect(result.correct).toBe(verdict === 'correct');
  });

  it('every verdict is exercised', () => {
    expect(new Set(CASES.map((c) => c[3]))).toEqual(new Set(['correct', 'wrong', 'no_answer', 'unclosed_box', 'several_answers', 'hedged', 'retracted']));
  });
});

describe('very long outputs', () => {
  const filler = 'We add the numbers carefully and check the sum once more. '.repeat(20_000); // 1.2 MB

  it.each([
    ['a correct box after a megabyte of reasoning', `${filler}So \\boxed{12}.`, 'correct'],
    ['a megabyte of numbers and no answer', Array.from({ length: 150_000 }, (_, i) => String(i)).join(' '), 'no_answer'],
    ['every number boxed', Array.from({ length: 20_000 }, (_, i) => `\\boxed{${i}}`).join(' '), 'several_answers'],
    ['a retraction a megabyte after the answer', `\\boxed{12}. ${filler}That answer was wrong.`, 'retracted'],
    ['thousands of #### lines', Array.from({ length: 20_000 }, (_, i) => `#### ${i}`).join('\n'), 'several_answers'],
  ] as const)('%s: %s, in well under a second', (_rule, response, verdict) => {
    // CPU time, not wall time: a busy machine (other test workers) stretches the latter, never the former.
    const t0 = process.cpuUsage();
    expect(gradeAnswer(response, '12', _rule.includes('####') ? GSM8K : MATH).verdict).toBe(verdict);
    const used = process.cpuUsage(t0);
    expect((used.user + used.system) / 1000).toBeLessThan(1500);
  });
});
