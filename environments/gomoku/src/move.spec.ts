import { parseMove } from './move';

describe('parseMove (0-based row,col in the last <move> tag)', () => {
  it.each([
    ['<move>3,4</move>', 3, 4],
    ['<move> 3 , 4 </move>', 3, 4],
    ['<move>(3, 4)</move>', 3, 4],
    ['<move>[0,8]</move>', 0, 8],
    ['<move>+2,05</move>', 2, 5],
    ['I think the best is the centre.\n<move>4,4</move>', 4, 4],
    ['<move>1,1</move> no, better: <move>2,2</move>', 2, 2],
    ['<move>99,99</move> wait, I mean <move>0,0</move>', 0, 0],
  ])('%j → (%i, %i)', (text, row, col) => {
    expect(parseMove(text, 9)).toEqual({ ok: true, row, col });
  });

  it.each([
    ['', 'missing_tag'],
    ['4,4', 'missing_tag'],
    ['<move>4,4', 'missing_tag'],
    ['<MOVE>4,4</MOVE>', 'missing_tag'],
    ['<move></move>', 'unparsable'],
    ['<move>e5</move>', 'unparsable'],
    ['<move>4 4</move>', 'unparsable'],
    ['<move>4,4,4</move>', 'unparsable'],
    ['<move>4.5,1</move>', 'unparsable'],
    ['<move>row,col</move>', 'unparsable'],
    ['<move>0,0</move> then <move>x</move>', 'unparsable'],
  ])('%j → %s', (text, error) => {
    expect(parseMove(text, 9)).toMatchObject({ ok: false, error });
  });

  describe('a move is played, not mentioned: tags in thoughts and code do not count', () => {
    it.each([
      ['a tag in a thought', '<think>maybe <move>1,1</move></think>'],
      ['a tag in a thought the template opened', 'maybe <move>1,1</move></think> I am not sure.'],
      ['a thought that never closes', 'Fine. <think>I play <move>1,1</move>'],
      ['a tag in a fenced block', 'Format:\n```\n<move>1,1</move>\n```'],
      ['a tag in an unclosed fenced block', '```xml\n<move>1,1</move>'],
      ['a tag in inline code', 'Reply like `<move>1,1</move>`.'],
    ])('%s: missing_tag', (_name, text) => {
      expect(parseMove(text, 9)).toEqual({ ok: false, error: 'missing_tag' });
    });

    it.each([
      ['the move after a thought', '<think>not <move>1,1</move></think>\n<move>2,2</move>', 2, 2],
      ['the move after code that quotes another', '```\n<move>1,1</move>\n```\n<move>2,2</move>', 2, 2],
      ['a later tag in code does not override the move', '<move>2,2</move> e.g. `<move>1,1</move>`', 2, 2],
      ['text after the move is not read', '<move>2,2</move> and then I will play 3,3 and <move', 2, 2],
      ['the same move twice', '<move>2,2</move> <move>2,2</move>', 2, 2],
      ['two tags back to back: one move, the last', '<move>1,1</move><move>2,2</move>', 2, 2],
    ])('%s', (_name, text, row, col) => {
      expect(parseMove(text, 9)).toEqual({ ok: true, row, col });
    });

    it('one tag holds one move: two coordinate pairs in a tag are unparsable', () => {
      expect(parseMove('<move>1,1 2,2</move>', 9)).toMatchObject({ ok: false, error: 'unparsable' });
      expect(parseMove('<move>1,1;2,2</move>', 9)).toMatchObject({ ok: false, error: 'unparsable' });
      expect(parseMove('<move><move>1,1</move></move>', 9)).toMatchObject({ ok: false, error: 'unparsable' });
    });

    it('bare: thoughts aside, the reply must still be only the coordinates', () => {
      expect(parseMove('<think>centre?</think>\n2,3', 5, 'bare')).toEqual({ ok: true, row: 2, col: 3 });
      expect(parseMove('2,3\n3,3', 5, 'bare')).toEqual({ ok: false, error: 'missing_tag' });
      expect(parseMove('```\n2,3\n```', 5, 'bare')).toEqual({ ok: false, error: 'missing_tag' });
    });
  });

  it('reports off-board coordinates with the numbers read', () => {
    expect(parseMove('<move>9,0</move>', 9)).toEqual({ ok: false, error: 'out_of_range', row: 9, col: 0 });
    expect(parseMove('<move>-1,3</move>', 9)).toEqual({ ok: false, error: 'out_of_range', row: -1, col: 3 });
    expect(parseMove('<move>14,14</move>', 15)).toEqual({ ok: true, row: 14, col: 14 });
    expect(parseMove('<move>15,0</move>', 15)).toMatchObject({ ok: false, error: 'out_of_range' });
    expect(parseMove('<move>123456789012345678901234567890,1</move>', 15)).toMatchObject({ ok: false, error: 'out_of_range' });
  });

  it('never throws on odd input', () => {
    for (const text of ['\u0000<move>\ud800</move>', 'x'.repeat(100_000), undefined as unknown as string, '</move><move>']) {
      expect(parseMove(text, 9).ok).toBe(false);
    }
    const t0 = Date.now();
    for (const text of ['</think>'.repeat(20_000), '<think>'.repeat(20_000), '```\n'.repeat(20_000), '```'.repeat(20_000), '`<move>1,1</move>'.repeat(10_000)]) {
      // Only the unclosed thoughts hide the final tag (the fences pair up, and so do the backticks).
      expect(parseMove(`${text}<move>1,1</move>`, 9).ok).toBe(!text.startsWith('<think>'));
    }
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('bare: the reply may be just row,col; a tag still wins, and other text is still a missing tag', () => {
    expect(parseMove(' 2,3\n', 5, 'bare')).toEqual({ ok: true, row: 2, col: 3 });
    expect(parseMove('2,3', 5)).toEqual({ ok: false, error: 'missing_tag' });
    expect(parseMove('1,1 <move>4,0</move>', 5, 'bare')).toEqual({ ok: true, row: 4, col: 0 });
    expect(parseMove('I play 2,3', 5, 'bare')).toEqual({ ok: false, error: 'missing_tag' });
    expect(parseMove('7,0', 5, 'bare')).toEqual({ ok: false, error: 'out_of_range', row: 7, col: 0 });
  });
});
