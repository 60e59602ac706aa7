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
  });

  it("bare: the reply may be just row,col; a tag still wins, and other text is still a missing tag", () => {
    expect(parseMove(' 2,3\n', 5, 'bare')).toEqual({ ok: true, row: 2, col: 3 });
    expect(parseMove('2,3', 5)).toEqual({ ok: false, error: 'missing_tag' });
    expect(parseMove('1,1 <move>4,0</move>', 5, 'bare')).toEqual({ ok: true, row: 4, col: 0 });
    expect(parseMove('I play 2,3', 5, 'bare')).toEqual({ ok: false, error: 'missing_tag' });
    expect(parseMove('7,0', 5, 'bare')).toEqual({ ok: false, error: 'out_of_range', row: 7, col: 0 });
  });
});
