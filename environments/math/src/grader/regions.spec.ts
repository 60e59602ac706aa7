import { maskAsides, thoughtRanges } from './regions';

describe('maskAsides', () => {
  /** [rule, text, the span that is blanked] */
  it.each([
    ['fenced code', 'a\n```py\n\\boxed{1}\n```\nb', '```py\n\\boxed{1}\n```'],
    ['an unclosed fence runs to the end', 'a\n~~~\n\\boxed{1}', '~~~\n\\boxed{1}'],
    ['inline code', 'x `\\boxed{1}` y', '`\\boxed{1}`'],
    ['a block quote', '> \\boxed{1}\nok', '> \\boxed{1}'],
    ['a quotation that mentions an answer', 'say "\\boxed{1}" now', '"\\boxed{1}"'],
    ['a quotation that does not stays', 'the "hard" part', ''],
    ['inch marks are not quotes', 'a 5" side, so \\boxed{25} and 3" more', ''],
    ['a thought', '<think>\\boxed{1}</think> \\boxed{2}', '<think>\\boxed{1}</think>'],
  ])('%s', (_name, text, span) => {
    expect(maskAsides(text)).toBe(text.replace(span, span.replace(/[^\n]/g, ' ')));
  });

  it('finds thoughts in pairs, after a template-opened <think>, and to the end when unclosed', () => {
    expect(thoughtRanges('a<think>b</think>c<think>d</think>e')).toEqual([
      [1, 17],
      [18, 34],
    ]);
    expect(thoughtRanges('reasoning</think>answer')).toEqual([[0, 17]]);
    expect(thoughtRanges('answer <think>more')).toEqual([[7, 18]]);
    expect(thoughtRanges('no thoughts')).toEqual([]);
  });

  it.each([
    ['20,000 closing tags', '</think>'.repeat(20_000)],
    ['20,000 opening tags', '<think>'.repeat(20_000)],
    ['20,000 fences', '```\n'.repeat(20_000)],
    ['20,000 fences without line breaks', '```'.repeat(20_000)],
    ['20,000 backticks', '`a'.repeat(20_000)],
    ['20,000 quotes', '"\\boxed{1}'.repeat(20_000)],
  ])('stays linear on %s', (_name, text) => {
    const t0 = Date.now();
    expect(maskAsides(text)).toHaveLength(text.length);
    // A guard against quadratic scans (seconds to minutes at this size), not a speed measure.
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
});
