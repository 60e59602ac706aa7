import { createRng } from '@opentinker/env-sdk';
import { gradeAnswer, groundTruthAnswer } from './grade';
import { answerFormats, extractAnswer, lastAnswerLine, lastBoxed } from './extract';
import { isEquivalent } from './equivalence';
import { normalizeAnswer } from './normalize';

const GSM8K = 'openai/gsm8k';
const MATH = 'DigitalLearningGmbH/MATH-lighteval';
const DAPO = 'math_dapo';

/** [rule, response, data source, extracted answer] */
const EXTRACTIONS: Array<[string, string, string | undefined, string | null]> = [
  ['boxed: the last box wins', 'First \\boxed{3}, finally \\boxed{4}.', undefined, '4'],
  ['boxed: nested braces', 'So $\\boxed{\\frac{1}{2}}$.', MATH, '\\frac{1}{2}'],
  ['boxed: escaped set braces', '\\boxed{\\{1,2\\}}', undefined, '\\{1,2\\}'],
  ['boxed: an unclosed box leaves no answer', '\\boxed{5} then \\boxed{6', undefined, null],
  ['boxed: a trailing LaTeX space is not a dangling backslash', '\\boxed{\\frac{1}{2}\\ }', undefined, '\\frac{1}{2}'],
  ['boxed: \\fbox', 'Thus \\fbox{7}', undefined, '7'],
  ['boxed: without braces', 'Thus $\\boxed 5$.', undefined, '5'],
  ['boxed: box inside a box', '\\boxed{\\boxed{8}}', undefined, '8'],
  ['boxed: empty box is no answer', 'I give up: \\boxed{}', undefined, null],
  ['boxed: \\boxedfoo is not a box', '\\boxedfoo{3}', undefined, null],
  ['gsm8k: #### line', 'She pays 3 + 4 = 7 dollars.\n#### 7', GSM8K, '7'],
  ['gsm8k: #### wins over a box for GSM8K', '\\boxed{8}\n#### 7', GSM8K, '7'],
  ['gsm8k: a box wins over #### for MATH', '\\boxed{8}\n#### 7', MATH, '8'],
  ['gsm8k: box is a fallback for GSM8K', 'The total is \\boxed{12}.', GSM8K, '12'],
  ['gsm8k: dollars and commas kept for the grader', '#### $1,000', GSM8K, '$1,000'],
  ['gsm8k: trailing period', '#### 42.', GSM8K, '42'],
  ['dapo: Answer: line', 'Work...\nAnswer: 42', DAPO, '42'],
  ['dapo: Answer: wins over a box for DAPO', 'maybe \\boxed{41}\nAnswer: 42', DAPO, '42'],
  ['dapo: the last Answer: line', 'Answer: 1\nwait, no.\nAnswer: 2', DAPO, '2'],
  ['answer line: fallback for other sources', 'So the result follows.\nAnswer: 12', undefined, '12'],
  ['answer line: markdown bold', '**Answer:** 12', undefined, '12'],
  ['answer line: bold label then colon', '**Answer**: $\\frac{1}{2}$', undefined, '\\frac{1}{2}'],
  ['answer line: Final answer', 'Final answer: $\\frac{1}{2}$', undefined, '\\frac{1}{2}'],
  ['answer line: the answer is', 'Therefore, the answer is 5.', undefined, '5'],
  ['answer line: the answer is, then more text', 'The answer is 5. I hope it is correct.', undefined, '5'],
  ['answer line: the answer is a decimal', 'The answer is 3.5.', undefined, '3.5'],
  ['answer line: the final answer is a box', 'The final answer is $\\boxed{9}$. I hope it is correct.', undefined, '9'],
  ['answer line: Final Answer heading', '**Final Answer**\n12', undefined, '12'],
  ['gsm8k: "the answer is" after ####', '#### The answer is 12', GSM8K, '12'],
  ['gsm8k: #### is followed by a number; the rest of the line is a remark', '5 * 3 = 15\n#### 15 apples', GSM8K, '15'],
  ['gsm8k: #### needs a space before its number', '####72', GSM8K, null],
  ['gsm8k: a minus sign must touch its number', '#### - 3', GSM8K, null],
  ['answer line: an article is not a variable', 'Answer: a 5', DAPO, '5'],
  ['boxed: a box in code is not an answer', '```\n\\boxed{5}\n```\nI do not know.', undefined, null],
  ['boxed: a box in a thought is not an answer', '<think>maybe \\boxed{5}</think> It is \\boxed{6}.', undefined, '6'],
  ['no answer: plain prose', 'I think it is probably 5', undefined, null],
  ['no answer: empty', '', undefined, null],
  ['boxed: after an equals sign', 'x = \\boxed{3}', undefined, '3'],
];

describe('extractAnswer', () => {
  it.each(EXTRACTIONS)('%s', (_rule, response, source, expected) => {
    expect(extractAnswer(response, source)).toBe(expected);
  });

  it('orders formats by data source convention', () => {
    expect(answerFormats(GSM8K)).toEqual(['hash', 'boxed', 'answer-line']);
    expect(answerFormats(MATH)).toEqual(['boxed', 'hash', 'answer-line']);
    expect(answerFormats('BytedTsinghua-SIA/DAPO-Math-17k')).toEqual(['answer-line', 'boxed', 'hash']);
    expect(answerFormats(undefined)).toEqual(['boxed', 'hash', 'answer-line']);
  });

  it('never throws on non-strings', () => {
    expect(extractAnswer(undefined as unknown as string)).toBeNull();
    expect(lastBoxed(null as unknown as string)).toBeNull();
    expect(lastAnswerLine(42 as unknown as string)).toBeNull();
  });
});

/** [rule, response, ground truth, data source, correct] */
const GRADES: Array<[string, string, string, string | undefined, boolean]> = [
  ['grade: boxed fraction vs decimal truth', 'so $\\boxed{\\frac{1}{2}}$', '0.5', MATH, true],
  ['grade: GSM8K with commas', 'blah\n#### 1,000', '1000', GSM8K, true],
  ['grade: GSM8K with dollars', 'The total is\n#### $18', '18', GSM8K, true],
  ['grade: GSM8K wrong number', '#### 17', '18', GSM8K, false],
  ['grade: the last box counts, not the first', '\\boxed{18} no wait \\boxed{17}', '18', undefined, false],
  ['grade: truth given as a full solution with a box', 'answer \\boxed{5}', 'Adding, we get $\\boxed{5}$.', MATH, true],
  ['grade: truth given as a GSM8K solution', '\\boxed{72}', 'Natalia sold 48/2 = 24 clips.\n#### 72', GSM8K, true],
  ['grade: DAPO answer line', 'Answer: 34', '34', DAPO, true],
  ['grade: interval answer', 'So $x \\in \\boxed{[0, \\infty)}$', '[0,\\infty)', MATH, true],
  ['grade: no answer', 'It is 5', '5', undefined, false],
];

describe('gradeAnswer', () => {
  it.each(GRADES)('%s', (_rule, response, truth, source, correct) => {
    expect(gradeAnswer(response, truth, source).correct).toBe(correct);
  });

  it('reports the extracted answer, or null', () => {
    expect(gradeAnswer('\\boxed{1,000}', '1000')).toEqual({ correct: true, extracted: '1,000', verdict: 'correct' });
    expect(gradeAnswer('I am not sure.', '7')).toEqual({ correct: false, extracted: null, verdict: 'no_answer' });
    expect(gradeAnswer('\\boxed{7}', '')).toEqual({ correct: false, extracted: '7', verdict: 'wrong' });
    expect(gradeAnswer('\\boxed{7} or \\boxed{8}', '8')).toEqual({ correct: false, extracted: '8', verdict: 'several_answers' });
    expect(gradeAnswer('The answer is \\boxed{8', '8')).toEqual({ correct: false, extracted: null, verdict: 'unclosed_box' });
  });

  it('reduces ground truths', () => {
    expect(groundTruthAnswer('  42 ')).toBe('42');
    expect(groundTruthAnswer(42)).toBe('42');
    expect(groundTruthAnswer('so \\boxed{\\frac12}')).toBe('\\frac12');
    expect(groundTruthAnswer('#### 3')).toBe('3');
    expect(groundTruthAnswer('')).toBeNull();
    expect(groundTruthAnswer(null)).toBeNull();
  });

  it('takes options for mixed numbers', () => {
    expect(gradeAnswer('\\boxed{2\\frac{1}{2}}', '\\frac52').correct).toBe(false);
    expect(gradeAnswer('\\boxed{2\\frac{1}{2}}', '\\frac52', undefined, { mixedNumbers: true }).correct).toBe(true);
  });
});

describe('more normalisation rules', () => {
  it.each([
    ['repeating decimal', '0.\\overline{3}', '\\frac13', true],
    ['repeating decimal with a fixed part', '0.1\\overline{6}', '\\frac16', true],
    ['MATH thousands ,\\!', '1,\\!000', '1000', true],
    ['spaces are not thousands separators', '1 000 000', '1000000', false],
    ['nor are spacing commands', '10\\,000', '10000', false],
    ['\\! is (MATH writes 10,\\!000)', '10\\!000', '10000', true],
    ['two numbers side by side are not a product', '2 3', '6', false],
    ['plain sqrt()', 'sqrt(2)/2', '\\frac{\\sqrt{2}}{2}', true],
    ['plain pi', '2pi', '2\\pi', true],
    ['\\approx', '\\approx 3.5', '3.5', true],
    ['x for times before 10^', '1.5 x 10^3', '1500', true],
    ['"or" list of assignments', 'x = 2 or x = 3', '3, 2', true],
    ['anagrams are different words', 'listen', 'silent', false],
    ['subscript braces', '1010_{2}', '1010_2', true],
    ['\\operatorname', '\\operatorname{sin} x', '\\sin x', true],
  ])('%s: %j vs %j → %s', (_rule, a, b, expected) => {
    expect(isEquivalent(a, b)).toBe(expected);
  });

  it('reports percent signs', () => {
    expect(normalizeAnswer('50\\%')).toEqual({ text: '50', percent: true });
    expect(normalizeAnswer('$\\dfrac{1}{2}\\,\\text{cm}$')).toEqual({ text: '\\frac{1}{2}', percent: false });
  });
});

describe('malformed input never throws (fuzz)', () => {
  const PIECES = [
    '\\frac',
    '\\dfrac',
    '\\sqrt',
    '\\boxed{',
    '\\boxed',
    '{',
    '}',
    '(',
    ')',
    '[',
    ']',
    '\\{',
    '\\}',
    '\\left',
    '\\right',
    '^',
    '_',
    '\\text{',
    '\\%',
    '%',
    '$',
    '\\$',
    ',',
    '=',
    '<',
    '\\le',
    '\\infty',
    '\\pi',
    '\\cup',
    '\\pm',
    '|',
    '!',
    '.',
    '-',
    '+',
    '*',
    '/',
    'x',
    'y',
    'e',
    '1',
    '2',
    '10',
    '0',
    '\\circ',
    '\\begin{pmatrix}',
    '\\end{pmatrix}',
    '&',
    '\\\\',
    ' ',
    '\n',
    '####',
    'Answer:',
    'the answer is',
    '\u2212',
    '°',
    '∞',
    '\u0000',
    '\ud800',
    '🎲',
    '\\overline{',
    '\\mbox{',
    '\\operatorname{',
    'sqrt(',
    '\\log_',
    '\\binom',
    '\\sin^',
    '\\ne',
    '\\in',
    ';',
    'and',
    '\\approx',
  ];
  const random = (rng: ReturnType<typeof createRng>, n: number) => Array.from({ length: n }, () => rng.pick(PIECES)).join('');

  it('answers booleans for 3,000 random strings, quickly', () => {
    const rng = createRng(2024);
    const start = Date.now();
    let slowest = 0;
    for (let i = 0; i < 3000; i++) {
      const a = random(rng, rng.int(0, 30));
      const b = rng.next() < 0.3 ? a.replace(/ /g, '') : random(rng, rng.int(0, 30));
      const t0 = Date.now();
      expect(typeof isEquivalent(a, b)).toBe('boolean');
      const g = gradeAnswer(a, b, rng.pick([undefined, GSM8K, MATH, DAPO]));
      expect(typeof g.correct).toBe('boolean');
      expect(g.extracted === null || typeof g.extracted === 'string').toBe(true);
      slowest = Math.max(slowest, Date.now() - t0);
    }
    expect(slowest).toBeLessThan(250);
    expect(Date.now() - start).toBeLessThan(20_000);
  });

  it.each([
    ['deep braces', '{'.repeat(20_000)],
    ['deep parentheses', '('.repeat(1999) + '1' + ')'.repeat(1999)],
    ['many fracs', '\\frac'.repeat(3000)],
    ['power tower', '2^'.repeat(900) + '2'],
    ['nested boxes', '\\boxed{'.repeat(3000) + '1' + '}'.repeat(3000)],
    ['15,000 unclosed boxes', '\\boxed{'.repeat(15_000)],
    ['many answer lines', 'Answer: '.repeat(12_000)],
    ['huge factorial', '1000000!'],
    ['long number', '9'.repeat(3000)],
    ['many text commands', '\\text{a}'.repeat(500) + '5'],
    ['100 KB', 'x'.repeat(100 * 1024)],
  ])('survives %s', (_name, input) => {
    const t0 = Date.now();
    expect(typeof isEquivalent(input, '1')).toBe('boolean');
    expect(typeof isEquivalent(input, input + ' ')).toBe('boolean');
    expect(typeof gradeAnswer(input, '1').correct).toBe('boolean');
    expect(typeof gradeAnswer(`\\boxed{${input}}`, input).correct).toBe('boolean');
    // A guard against runaway (super-linear) parsing, not a speed measure: wide enough for a loaded machine.
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});

describe('exact arithmetic, overflow and more shapes', () => {
  it.each([
    ['exact: big powers differ by one', '2^{100}', '1267650600228229401496703205377', false],
    ['exact: big power equals its value', '2^{100}', '1267650600228229401496703205376', true],
    ['exact: overflowing powers are not all equal', '2^{2005}', '2^{2006}', false],
    ['exact: overflowing powers written two ways', '2^{2005}', '2\\cdot 2^{2004}', true],
    ['exact: factorial', '20!', '2432902008176640000', true],
    ['exact: fractions', '\\frac{1}{3}+\\frac{1}{6}', '\\frac12', true],
    ['overflow: huge exponent decides nothing', '10^{100000}', '10^{100001}', false],
    ['floor', '\\lfloor 3.7 \\rfloor', '3', true],
    ['ceil', '\\lceil 3.2 \\rceil', '4', true],
    ['lists: thousands inside a spaced list', '1,000, 2,000', '2000, 1000', true],
    ['lists: an unspaced interval is not a thousands number', '(1,100)', '(1, 100)', true],
    ['lists: an interval starting at zero', '[0,100]', '[0, 100]', true],
    ['equations: assignment vs general form', 'y = 2x + 1', '2x - y + 1 = 0', true],
    ['equations: assignment vs a different line', 'y = 2x + 1', '2x - y - 1 = 0', false],
    ['boxed wrapper inside an answer', '\\boxed{5}', '5', true],
    ['segment name on the left', 'AB = 3', '3', true],
    ['angle name on the left', '\\angle ABC = 30^\\circ', '30', true],
    ['the real line', '\\mathbb{R}', '(-\\infty, \\infty)', true],
    ['square root of a square is |x|, not x', '\\sqrt{x^2}', 'x', false],
    ['square root of a square is |x|', '\\sqrt{x^2}', '|x|', true],
    ['column vector is not a tuple', '\\begin{pmatrix} 1 \\\\ -2 \\end{pmatrix}', '(1,-2)', false],
    ['different monomials', 'xy^2', 'x^2y', false],
  ])('%s: %j vs %j → %s', (_rule, a, b, expected) => {
    expect(isEquivalent(a, b)).toBe(expected);
    expect(isEquivalent(b, a)).toBe(expected);
  });
});

describe('equation tasks (opentinker/synthetic-equation)', () => {
  const source = 'opentinker/synthetic-equation';

  it('reads the answer from the first line, or a \\boxed{} answer', () => {
    expect(answerFormats(source)).toEqual(['boxed', 'first-line']);
    expect(gradeAnswer('432', '432', source)).toEqual({ correct: true, extracted: '432', verdict: 'correct' });
    expect(gradeAnswer(' 432 \n9+9=18', '432', source)).toEqual({ correct: true, extracted: '432', verdict: 'correct' });
    expect(gradeAnswer('\\boxed{432}', '432', source)).toEqual({ correct: true, extracted: '432', verdict: 'correct' });
    expect(gradeAnswer('1,024', '1024', source).correct).toBe(true);
    expect(gradeAnswer('431\n432', '432', source)).toEqual({ correct: false, extracted: '431', verdict: 'wrong' });
    expect(gradeAnswer('\n432', '432', source)).toEqual({ correct: false, extracted: null, verdict: 'no_answer' });
    expect(gradeAnswer('', '432', source)).toEqual({ correct: false, extracted: null, verdict: 'no_answer' });
    // Only the first line is read: what a tiny model writes after it does not count.
    expect(gradeAnswer('432\nwrong or not', '432', source).correct).toBe(true);
  });

  it('wants a number: an expression equal to the answer (a copy of the prompt) is wrong', () => {
    expect(gradeAnswer('47+385', '432', source).correct).toBe(false);
    expect(gradeAnswer('\\boxed{47+385}', '432', source).correct).toBe(false);
    expect(gradeAnswer('the answer is 432', '432', source).correct).toBe(false);
    // Other sources keep their rules.
    expect(gradeAnswer('\\boxed{47+385}', '432').correct).toBe(true);
    expect(gradeAnswer('432', '432').correct).toBe(false);
  });
});
