import { maskThoughtsAndCode, thoughtRanges } from './asides';

const blanked = (text: string, span: string) => text.replace(span, span.replace(/[^\n]/g, ' '));

describe('maskThoughtsAndCode', () => {
  it.each([
    ['a thought', '<think><move>1,1</move></think> <move>2,2</move>', '<think><move>1,1</move></think>'],
    ['a thought the template opened', 'maybe <move>1,1</move></think><move>2,2</move>', 'maybe <move>1,1</move></think>'],
    ['an unclosed thought', '<move>2,2</move> <think>or <move>1,1</move>', '<think>or <move>1,1</move>'],
    ['fenced code', 'a\n```py\n<move>1,1</move>\n```\nb', '```py\n<move>1,1</move>\n```'],
    ['an unclosed fence', 'a\n~~~\n<move>1,1</move>', '~~~\n<move>1,1</move>'],
    ['inline code', 'x `<move>1,1</move>` y', '`<move>1,1</move>`'],
    ['double-backtick inline code', 'x ``<move>1,1</move>`` y', '``<move>1,1</move>``'],
  ])('blanks %s, keeping length and line breaks', (_name, text, span) => {
    expect(maskThoughtsAndCode(text)).toBe(blanked(text, span));
  });

  it('leaves plain replies alone and never throws', () => {
    expect(maskThoughtsAndCode('<move>2,2</move>')).toBe('<move>2,2</move>');
    expect(maskThoughtsAndCode(undefined as unknown as string)).toBe('');
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
});
