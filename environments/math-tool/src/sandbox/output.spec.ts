import { OutputCollector, splitBudget } from './output';

const collect = (maxChars: number, maxBytes: number, chunks: Array<string | Buffer>) => {
  const c = new OutputCollector(maxChars, maxBytes);
  const accepted = chunks.map((chunk) => c.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, 'utf8')));
  return { accepted, out: c.finish() };
};

describe('OutputCollector', () => {
  it('keeps short output whole', () => {
    expect(collect(10, 100, ['ab', 'c\n']).out).toEqual({ text: 'abc\n', tail: '', truncated: false, totalBytes: 4, overBudget: false });
  });

  it('counts characters, not bytes', () => {
    expect(collect(4, 100, ['é中🎲x']).out).toMatchObject({ text: 'é中🎲x', truncated: false, totalBytes: 10 });
  });

  it('cuts a long output into its start and its end', () => {
    expect(splitBudget(8)).toEqual({ headChars: 6, tailChars: 2 });
    expect(collect(8, 1000, ['0123456789', 'abcdef']).out).toEqual({ text: '012345', tail: 'ef', truncated: true, totalBytes: 16, overBudget: false });
  });

  it('keeps the end of a very long output with bounded memory', () => {
    const chunks = Array.from({ length: 1000 }, (_, i) => `line ${i}\n`);
    const { out } = collect(20, 1 << 20, chunks);
    expect(out.text).toBe('line 0\nline 1\nl');
    expect(out.tail).toBe(' 999\n');
    expect(out.truncated).toBe(true);
  });

  it('never leaves half a character at a cut', () => {
    const { out } = collect(4, 1 << 20, ['中'.repeat(50)]);
    expect(out.text).toBe('中中中');
    expect(out.tail).toBe('中');
    // Half a character written by the program itself stays visible as U+FFFD.
    const half = collect(4, 1 << 20, [Buffer.from('a'.repeat(30)), Buffer.from('中', 'utf8').subarray(0, 2)]);
    expect(half.out.tail).toBe('\uFFFD');
  });

  it('reports when the byte budget is passed', () => {
    const { accepted, out } = collect(4, 10, ['12345', '67890', 'x']);
    expect(accepted).toEqual([true, true, false]);
    expect(out).toMatchObject({ overBudget: true, totalBytes: 11, truncated: true, text: '123', tail: '0x'.slice(-1) });
  });
});
