import { isEngineError } from '../errors';
import { hasLogProb, padBatch, validateTokenBatch } from './token-batch';

function field(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return isEngineError(e) ? `${e.code}:${e.field}` : String(e);
  }
  return 'none';
}

describe('padBatch / validateTokenBatch', () => {
  it('pads right by default and left on request', () => {
    const r = padBatch([[1, 2, 3], [4]], { padId: 9 });
    expect(Array.from(r.ids)).toEqual([1, 2, 3, 4, 9, 9]);
    expect(Array.from(r.mask)).toEqual([1, 1, 1, 1, 0, 0]);
    const l = padBatch([[1, 2, 3], [4]], { side: 'left', length: 4 });
    expect(l.seqLen).toBe(4);
    expect(Array.from(l.ids)).toEqual([0, 1, 2, 3, 0, 0, 0, 4]);
    expect(Array.from(l.mask)).toEqual([0, 1, 1, 1, 0, 0, 0, 1]);
  });

  it('says which tokens have a log-prob: real, with a real token before', () => {
    const l = padBatch([[5, 6, 7], [8]], { side: 'left' });
    expect([0, 1, 2].map((t) => hasLogProb(l, 0, t))).toEqual([false, true, true]);
    expect([0, 1, 2].map((t) => hasLogProb(l, 1, t))).toEqual([false, false, false]);
  });

  it('refuses non-integer ids, ids outside the vocabulary, holes and bad sizes', () => {
    expect(field(() => padBatch([[1, 2.5]]))).toBe('ENGINE_INVALID_INPUT:ids');
    expect(field(() => padBatch([[-1]]))).toBe('ENGINE_INVALID_INPUT:ids');
    expect(field(() => validateTokenBatch(padBatch([[1, 40]]), 32))).toBe('ENGINE_INVALID_INPUT:ids');
    const holed = { batchSize: 1, seqLen: 3, ids: new Int32Array([1, 0, 2]), mask: new Uint8Array([1, 0, 1]) };
    expect(field(() => validateTokenBatch(holed, 32))).toBe('ENGINE_INVALID_INPUT:mask');
    const short = { batchSize: 2, seqLen: 3, ids: new Int32Array(5), mask: new Uint8Array(6) };
    expect(field(() => validateTokenBatch(short, 32))).toBe('ENGINE_INVALID_INPUT:ids');
    const badMask = { batchSize: 1, seqLen: 2, ids: new Int32Array(2), mask: new Uint8Array([1, 2]) };
    expect(field(() => validateTokenBatch(badMask, 32))).toBe('ENGINE_INVALID_INPUT:mask');
    expect(field(() => validateTokenBatch(padBatch([[1, 2], [3]], { side: 'left' }), 32))).toBe('none');
  });
});
