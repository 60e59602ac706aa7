import { isEquivalent } from './equivalence';

/**
 * Graded cases written from the grading rules: [rule, answer, reference, expected]. Each case is also
 * checked with the sides swapped (equivalence is symmetric).
 */
const CASES: Array<[string, string, string, boolean]> = [
  // Integers, thousands separators, exactness.
  ['integers: thousands commas', '1,000', '1000', true],
  ['integers: thousands commas', '1,234,567', '1234567', true],
  ['integers: thousands commas with decimals', '12,345.5', '12345.5', true],
  ['integers: LaTeX {,} separator', '1{,}000', '1000', true],
  ['integers: LaTeX thin space is not a separator', '1\\,000', '1000', false],
  ['integers: LaTeX negative space separator', '10\\!000', '10000', true],
  ['integers: spaced digit groups are not one number', '10 000', '10000', false],
  ['integers: different numbers', '1,000', '100', false],
  ['integers: different numbers', '1000', '10000', false],
  ['integers: exact beyond double precision', '123456789012345678', '123456789012345679', false],
  ['integers: exact beyond double precision', '123456789012345678', '123,456,789,012,345,678', true],
  ['integers: leading zeros', '007', '7', true],
  ['integers: trailing zero decimals', '18.00', '18', true],
  ['integers: trailing zero decimals', '18.0', '18', true],
  ['integers: close is not equal', '18.01', '18', false],

  // Decimals vs fractions.
  ['fractions: decimal vs slash', '0.5', '1/2', true],
  ['fractions: \\frac12 shorthand', '\\frac12', '0.5', true],
  ['fractions: \\frac{1}{2} vs slash', '\\frac{1}{2}', '1/2', true],
  ['fractions: \\dfrac', '\\dfrac{1}{2}', '\\frac12', true],
  ['fractions: \\tfrac', '\\tfrac{3}{4}', '0.75', true],
  ['fractions: \\cfrac', '\\cfrac{1}{2}', '0.5', true],
  ['fractions: unreduced', '\\frac{2}{4}', '\\frac{1}{2}', true],
  ['fractions: leading-dot decimal', '.5', '0.5', true],
  ['fractions: repeating decimal to 7 places', '0.3333333', '\\frac13', true],
  ['fractions: rounded decimal is not exact', '0.33', '\\frac{1}{3}', false],
  ['fractions: different fractions', '\\frac{1}{3}', '\\frac{1}{4}', false],
  ['fractions: inverted', '3/2', '2/3', false],
  ['fractions: negative numerator', '\\frac{-1}{2}', '-\\frac{1}{2}', true],
  ['fractions: negative shorthand', '-\\frac12', '-0.5', true],
  ['fractions: improper vs decimal', '\\frac{3}{2}', '1.5', true],
  ['fractions: unicode vulgar fraction is not read', '½', '0.5', false],
  ['fractions: \\frac with letters', '\\frac{x}{2}', '\\frac12 x', true],

  // Negative numbers.
  ['negatives: unicode minus is not read', '−3', '-3', false],
  ['negatives: en dash is not read', '–3', '-3', false],
  ['negatives: the same unicode on both sides', '−3', '−3', true],
  ['negatives: space after sign', '- 3', '-3', true],
  ['negatives: sign matters', '-3', '3', false],
  ['negatives: double negation', '-(-3)', '3', true],
  ['negatives: negative decimal', '-0.25', '-\\frac{1}{4}', true],

  // LaTeX spacing.
  ['spacing: \\! and \\cdot', '3\\!\\cdot\\!4', '12', true],
  ['spacing: trailing \\,', '\\frac{1}{2}\\,', '0.5', true],
  ['spacing: backslash-space', '2\\ x', '2x', true],
  ['spacing: \\; and \\quad', '2\\;x\\quad', '2x', true],
  ['spacing: tilde', '~5', '5', true],
  ['spacing: \\displaystyle', '\\displaystyle\\frac{1}{2}', '0.5', true],

  // \left( \right) and sizing.
  ['left-right: tuple', '\\left(1,2\\right)', '(1,2)', true],
  ['left-right: interval', '\\left[0,1\\right)', '[0,1)', true],
  ['left-right: set', '\\left\\{1,2\\right\\}', '\\{1,2\\}', true],
  ['left-right: absolute value', '\\left|x\\right|', '|x|', true],
  ['left-right: \\bigl \\bigr', '\\bigl(3\\bigr)', '3', true],
  ['left-right: grouping in an expression', '2\\left(x+1\\right)', '2x+2', true],

  // Degrees.
  ['degrees: ^\\circ', '30^\\circ', '30', true],
  ['degrees: ^{\\circ}', '30^{\\circ}', '30', true],
  ['degrees: unicode degree sign is not read', '30°', '30', false],
  ['degrees: word', '90 degrees', '90', true],
  ['degrees: different angle', '45^\\circ', '30', false],
  ['degrees: radians are not degrees', '\\frac{\\pi}{6}', '30^\\circ', false],

  // Percentages: the sign is optional, and X% also equals X/100 when only one side has it.
  ['percent: sign optional', '50\\%', '50', true],
  ['percent: both signs', '50%', '50\\%', true],
  ['percent: percentage vs fraction', '50\\%', '0.5', true],
  ['percent: fraction vs percentage', '0.5', '50%', true],
  ['percent: fraction form', '12.5\\%', '\\frac{1}{8}', true],
  ['percent: word', '50 percent', '50', true],
  ['percent: wrong value', '50\\%', '5', false],
  ['percent: wrong value', '5%', '50', false],

  // Units in \text{} / \mbox{} / words.
  ['units: \\text{ cm}', '5\\text{ cm}', '5', true],
  ['units: \\mbox{cm}', '5 \\mbox{cm}', '5', true],
  ['units: unit with exponent', '12\\text{ cm}^2', '12', true],
  ['units: \\text{dollars}', '18 \\text{dollars}', '18', true],
  ['units: plain word', '18 dollars', '18', true],
  ['units: plural word', '3 hours', '3', true],
  ['units: glued unit', '12cm', '12', true],
  ['units: a word that is not a unit stays', '\\text{5 apples}', '5', false],
  ['units: words that are not units stay', '12 is wrong', '12', false],
  ['units: text that is not a unit stays', '\\text{not }12', '12', false],
  ['units: a choice letter beside a value', '\\textbf{(C) }12', '12', false],
  ['units: counting word from verl', '204 ways', '204', true],
  ['units: one-letter unit in text', '3 \\text{ m}^2', '3', true],
  ['units: one-letter plain word is a variable', '3 m', '3', false],
  ['units: per', '60 miles per hour', '60', true],
  ['units: article', 'a 5', '5', true],
  ['units: article is not a variable', 'a 5', '5a', false],
  ['units: trailing LaTeX space', '\\frac{1}{2}\\ ', '\\frac12', true],
  ['units: \\mathrm', '5\\,\\mathrm{kg}', '5', true],
  ['units: wrong value with unit', '5\\text{ cm}', '6', false],
  ['units: fraction with unit', '\\frac{1}{2}\\text{ cup}', '0.5', true],
  ['units: two words', '12 square feet', '12', true],

  // Dollars.
  ['dollars: \\$', '\\$18', '18', true],
  ['dollars: bare $', '$18', '18', true],
  ['dollars: with thousands', '\\$1,000', '1000', true],
  ['dollars: cents', '\\$18.50', '18.5', true],
  ['dollars: wrong amount', '\\$18', '\\$19', false],

  // Simple algebraic forms (random-point comparison).
  ['algebra: commuted sum', '2x+1', '1+2x', true],
  ['algebra: different sign', '2x+1', '2x-1', false],
  ['algebra: factored', 'x^2-1', '(x-1)(x+1)', true],
  ['algebra: square of a sum', '(a+b)^2', 'a^2+2ab+b^2', true],
  ['algebra: commuted product', 'xy', 'yx', true],
  ['algebra: \\sqrt{2}/2', '\\sqrt{2}/2', '\\frac{\\sqrt2}{2}', true],
  ['algebra: rationalised', '\\frac{\\sqrt{2}}{2}', '\\frac{1}{\\sqrt{2}}', true],
  ['algebra: simplified radical', '2\\sqrt{3}', '\\sqrt{12}', true],
  ['algebra: different radicals', '3\\sqrt{2}', '2\\sqrt{3}', false],
  ['algebra: \\pi r^2', '\\pi r^2', 'r^2\\pi', true],
  ['algebra: rational function', '\\frac{x+1}{x-1}', '\\frac{1+x}{x-1}', true],
  ['algebra: inverted rational function', '\\frac{x+1}{x-1}', '\\frac{x-1}{x+1}', false],
  ['algebra: power vs product', 'x^{2}', 'x\\cdot x', true],
  ['algebra: coefficient placement', '\\frac{1}{2}x', '\\frac{x}{2}', true],
  ['algebra: different variables', 'x', 'y', false],
  ['algebra: negative exponent', 'x^{-1}', '\\frac1x', true],
  ['algebra: trig identity', '\\sin^2 x + \\cos^2 x', '1', true],
  ['algebra: polynomial degree differs', 'x^3', 'x^2', false],
  ['algebra: times sign', '3\\times x', '3x', true],
  ['algebra: unicode times and pi are not read', '2×π', '2\\pi', false],
  ['algebra: constant expression', '2^{10}', '1024', true],
  ['algebra: cube root', '\\sqrt[3]{8}', '2', true],
  ['algebra: cube root of a negative', '\\sqrt[3]{-8}', '-2', true],
  ['algebra: factorial', '6!', '720', true],
  ['algebra: binomial', '\\binom{5}{2}', '10', true],
  ['algebra: \\dbinom', '\\dbinom{6}{3}', '20', true],
  ['algebra: absolute value', '|-5|', '5', true],
  ['algebra: log base', '\\log_2 8', '3', true],
  ['algebra: natural log', '\\ln(e^2)', '2', true],
  ['algebra: pi to 8 places', '3.14159265', '\\pi', true],
  ['algebra: pi to 2 places is not pi', '3.14', '\\pi', false],
  ['algebra: 2\\pi', '2\\pi', '\\pi \\cdot 2', true],
  ['algebra: complex number written two ways', '3+4i', '4i+3', true],
  ['algebra: division by expression', '\\frac{6}{2(1+2)}', '1', true],

  // Scientific notation.
  ['scientific: e-notation', '1.5e3', '1500', true],
  ['scientific: \\times 10^{}', '1.5\\times10^{3}', '1500', true],
  ['scientific: \\cdot 10^', '1.5 \\cdot 10^3', '1500', true],
  ['scientific: negative exponent', '2.5E-2', '0.025', true],
  ['scientific: different exponent', '3\\times 10^8', '3\\times 10^9', false],
  ['scientific: e-notation vs LaTeX', '6.02\\times10^{23}', '6.02e23', true],
  ['scientific: 10^{-3}', '10^{-3}', '0.001', true],

  // Intervals: brackets must match, endpoints compare as numbers.
  ['intervals: open vs half-open', '(1,2]', '(1,2)', false],
  ['intervals: spacing', '[0,\\infty)', '[0, \\infty)', true],
  ['intervals: negative infinity', '(-\\infty, 3)', '(-\\infty,3)', true],
  ['intervals: closed vs half-open', '[0,1]', '[0,1)', false],
  ['intervals: endpoint forms', '(0, \\frac12]', '(0, 0.5]', true],
  ['intervals: union order', '(-\\infty,0)\\cup(1,\\infty)', '(1,\\infty)\\cup(-\\infty,0)', true],
  ['intervals: union bracket differs', '(-\\infty,0)\\cup(1,\\infty)', '(-\\infty,0]\\cup(1,\\infty)', false],
  ['intervals: inequality x > a', 'x > 3', '(3, \\infty)', true],
  ['intervals: inequality x \\ge a', 'x \\ge 3', '[3,\\infty)', true],
  ['intervals: inequality \\geq', 'x \\geq 3', '[3,\\infty)', true],
  ['intervals: double inequality', '1 < x \\le 2', '(1,2]', true],
  ['intervals: x \\in', 'x \\in [1,2]', '[1,2]', true],
  ['intervals: reversed endpoints', '(1,2)', '(2,1)', false],
  ['intervals: unicode less-or-equal is not read', 'x ≤ 2', '(-\\infty, 2]', false],
  ['intervals: infinity sign', '+\\infty', '\\infty', true],
  ['intervals: infinity sign matters', '-\\infty', '\\infty', false],

  // Tuples: element-wise, in order.
  ['tuples: spacing', '(1, 2)', '(1,2)', true],
  ['tuples: \\left \\right', '(1,2)', '\\left( 1, 2 \\right)', true],
  ['tuples: length differs', '(1,2,3)', '(1,2)', false],
  ['tuples: element forms', '(\\frac12, 3)', '(0.5, 3)', true],
  ['tuples: order matters', '(2,1)', '(1,2)', false],
  ['tuples: assignments in order of variable', 'x=1, y=2', '(1,2)', true],
  ['tuples: assignments written backwards', 'y=2, x=1', '(1,2)', true],
  ['tuples: tuple is not a bare list', '(1,2)', '1,2', false],
  ['tuples: angle brackets', '\\langle 1, 2 \\rangle', '\\langle1,2\\rangle', true],
  ['tuples: unicode minus inside is not read', '(1, -2)', '(1,−2)', false],
  ['digits: fullwidth are not read', '１２', '12', false],
  ['digits: arabic-indic are not read', '١٢', '12', false],
  ['digits: mathematical bold are not read', '𝟏𝟐', '12', false],
  ['tuples: expressions inside', '(2x, x+1)', '(x\\cdot 2, 1+x)', true],

  // Sets and lists of solutions: order-insensitive.
  ['sets: order', '\\{1,2\\}', '\\{2,1\\}', true],
  ['sets: set vs bare list', '\\{1,2\\}', '1, 2', true],
  ['sets: bare lists in any order', '1,2,3', '3, 2, 1', true],
  ['sets: different element', '\\{1,2\\}', '\\{1,3\\}', false],
  ['sets: different size', '\\{1,2\\}', '\\{1,2,3\\}', false],
  ['sets: singleton vs element', '\\{3\\}', '3', true],
  ['sets: empty set symbols', '\\emptyset', '\\varnothing', true],
  ['sets: empty braces', '\\emptyset', '\\{\\}', true],
  ['sets: "and" list', '1 \\text{ and } 2', '1,2', true],
  ['sets: repeated assignments', 'x = 1, x = 2', '2, 1', true],
  ['sets: \\pm', '\\pm 3', '3, -3', true],
  ['sets: a \\pm b', '1\\pm\\sqrt{2}', '1+\\sqrt2, 1-\\sqrt2', true],
  ['sets: \\pm vs set', '\\{-1, 1\\}', '\\pm 1', true],
  ['sets: semicolon list', '1; 2', '2, 1', true],
  ['sets: elements compared as numbers', '\\{\\frac12, 2\\}', '\\{2, 0.5\\}', true],

  // x = 3 vs 3.
  ['assignment: x = 3', 'x = 3', '3', true],
  ['assignment: both sides', 'x=3', 'x = 3', true],
  ['assignment: y = expression', 'y = 2x+1', '2x+1', true],
  ['assignment: f(x) =', 'f(x) = x^2', 'x^2', true],
  ['assignment: wrong value', 'x = 3', '4', false],
  ['assignment: subscripted variable', 'x_1 = 2', '2', true],
  ['assignment: greek variable', '\\theta = \\frac{\\pi}{4}', '\\frac{\\pi}{4}', true],

  // General equations: equal up to a non-zero constant factor.
  ['equations: scaled', 'x^2+y^2=1', '2x^2+2y^2=2', true],
  ['equations: rearranged with sign', 'y - 2x = 1', '2x - y = -1', true],
  ['equations: different line', 'x + y = 1', 'x - y = 1', false],
  ['equations: different radius', 'x^2 + y^2 = 4', 'x^2+y^2=2', false],
  ['equations: inequality flipped', '2y > x', 'x < 2y', true],

  // Text answers: case-insensitive words; multiple-choice letters.
  ['text: \\text{Monday}', '\\text{Monday}', 'Monday', true],
  ['text: case', '\\text{Monday}', 'monday', true],
  ['text: \\text{(C)}', '\\text{(C)}', 'C', true],
  ['text: parenthesised letter', '(C)', 'C', true],
  ['text: \\textbf{(B)}', '\\textbf{(B)}', 'B', true],
  ['text: different letter', 'C', 'D', false],
  ['text: different word', 'Monday', 'Tuesday', false],
  ['text: yes', '\\text{yes}', 'Yes', true],
  ['text: phrase', '\\text{no solution}', 'No solution', true],

  // Mixed numbers are off by default: 2\frac12 is the product 2 · ½.
  ['mixed numbers off: not 2.5', '2\\frac12', '2.5', false],
  ['mixed numbers off: a product', '2\\frac{1}{2}', '1', true],

  // Matrices and vectors.
  ['matrices: spacing', '\\begin{pmatrix}1\\\\2\\end{pmatrix}', '\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}', true],
  ['matrices: pmatrix vs bmatrix', '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}', '\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}', true],
  ['matrices: swapped entries', '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}', '\\begin{pmatrix}1&2\\\\4&3\\end{pmatrix}', false],
  ['matrices: entry forms', '\\begin{pmatrix}\\frac12\\\\0\\end{pmatrix}', '\\begin{pmatrix}0.5\\\\0\\end{pmatrix}', true],

  // Math delimiters and punctuation.
  ['delimiters: $…$', '$5$', '5', true],
  ['delimiters: \\(…\\)', '\\(5\\)', '5', true],
  ['delimiters: \\[…\\]', '\\[ \\frac{1}{2} \\]', '0.5', true],
  ['delimiters: trailing period', '5.', '5', true],
  ['delimiters: braces around everything', '{5}', '5', true],

  // Malformed input: false, never an exception.
  ['malformed: unclosed \\frac', '\\frac{1}{', '1', false],
  ['malformed: empty', '', '', false],
  ['malformed: empty vs number', '', '0', false],
  ['malformed: brackets only', '((', '(', false],
  ['malformed: unclosed \\sqrt', '\\sqrt{', '0', false],
  ['malformed: stray braces', '}{', '0', false],
  ['malformed: unknown command', '\\foo{3}', '3', false],
  ['malformed: division by zero', '\\frac{1}{0}', '\\frac{2}{0}', false],
];

describe('isEquivalent (table of graded cases)', () => {
  it.each(CASES)('%s: %j vs %j → %s', (_rule, a, b, expected) => {
    expect(isEquivalent(a, b)).toBe(expected);
    expect(isEquivalent(b, a)).toBe(expected);
  });

  it('has at least 150 cases, each naming its rule, with both outcomes well represented', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(150);
    expect(CASES.filter((c) => !c[3]).length).toBeGreaterThanOrEqual(40);
    for (const [rule] of CASES) expect(rule).toMatch(/^[a-z -]+: /);
  });
});

describe('isEquivalent options', () => {
  it.each([
    ['2\\frac12', '2.5', true],
    ['2\\frac{1}{2}', '\\frac52', true],
    ['2 1/2', '\\frac52', true],
    ['-1\\frac{1}{4}', '-1.25', true],
    ['2\\frac12', '1', false],
  ])('mixed numbers on: %j vs %j → %s', (a, b, expected) => {
    expect(isEquivalent(a, b, { mixedNumbers: true })).toBe(expected);
  });

  it('takes a looser tolerance when asked', () => {
    expect(isEquivalent('0.33', '\\frac13')).toBe(false);
    expect(isEquivalent('0.333', '\\frac13', { tolerance: 1e-2 })).toBe(true);
  });

  it('refuses non-strings', () => {
    expect(isEquivalent(undefined as unknown as string, '1')).toBe(false);
    expect(isEquivalent(1 as unknown as string, '1')).toBe(false);
  });
});
