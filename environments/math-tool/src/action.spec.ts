import { parseReply } from './action';

describe('parseReply', () => {
  const cases: Array<[string, string, ReturnType<typeof parseReply>]> = [
    ['code only', 'Let me compute.\n```python\nprint(6*7)\n```', { code: 'print(6*7)', blocks: 1, answer: null }],
    ['answer only', 'So the answer is $\\boxed{42}$.', { code: null, blocks: 0, answer: '42' }],
    ['nested braces', 'Thus \\boxed{\\frac{1}{2}}', { code: null, blocks: 0, answer: '\\frac{1}{2}' }],
    ['the last box is the answer (the grader checks that the others agree)', '\\boxed{1} then \\boxed{2}', { code: null, blocks: 0, answer: '2' }],
    ['py and python3 aliases, joined in order', '```py\nx = 2\n```\ntext\n```python3\nprint(x)\n```', { code: 'x = 2\n\nprint(x)', blocks: 2, answer: null }],
    ['other languages are not run', '```bash\nrm -rf /\n```\n```\nprint(1)\n```', { code: null, blocks: 0, answer: null }],
    ['a box inside code is not an answer', '```python\nprint(r"\\boxed{5}")\n```', { code: 'print(r"\\boxed{5}")', blocks: 1, answer: null }],
    ['a box inside an output block is not an answer', '```output\n\\boxed{5}\n```', { code: null, blocks: 0, answer: null }],
    ['code and answer: both found', '```python\nprint(1)\n```\nAnswer: \\boxed{1}', { code: 'print(1)', blocks: 1, answer: '1' }],
    ['unclosed fence: no code', '```python\nprint(1)\n', { code: null, blocks: 0, answer: null }],
    ['blank block: no code', '```python\n   \n```', { code: null, blocks: 0, answer: null }],
    ['empty box: no answer', 'put it within \\boxed{}.', { code: null, blocks: 0, answer: null }],
    ['unclosed box: no answer', '\\boxed{12', { code: null, blocks: 0, answer: null }],
    ['nothing', 'I think it is 12.', { code: null, blocks: 0, answer: null }],
    ['empty', '', { code: null, blocks: 0, answer: null }],
    ['a box in inline code is not an answer', 'Format: `\\boxed{5}`', { code: null, blocks: 0, answer: null }],
    ['a box in an unclosed fence is not an answer', '```\n\\boxed{5}', { code: null, blocks: 0, answer: null }],
    ['a box in a thought is not an answer', '<think>it is \\boxed{5}</think> Let me check.', { code: null, blocks: 0, answer: null }],
    ['a box in a quote is not an answer', '> \\boxed{5}', { code: null, blocks: 0, answer: null }],
    ['the answer after a thought', '<think>\\boxed{4}?</think> \\boxed{5}', { code: null, blocks: 0, answer: '5' }],
    ["an Answer: line is not this environment's format", 'Answer: 5', { code: null, blocks: 0, answer: null }],
    ['a trailing LaTeX space is not part of the answer', '\\boxed{\\frac{1}{2}\\ }', { code: null, blocks: 0, answer: '\\frac{1}{2}' }],
  ];
  it.each(cases)('%s', (_name, text, expected) => {
    expect(parseReply(text)).toEqual(expected);
  });

  it('never throws on odd input', () => {
    for (const odd of [undefined, null, 42, {}, '\u0000\ud800', 'x'.repeat(200_000), '```'.repeat(10_000), '\\boxed{'.repeat(5000)]) {
      expect(() => parseReply(odd)).not.toThrow();
    }
  });
});
