import type { DatumInput } from '@opentinker/tinker-wire';
import { chunkDatums, combineForwardBackwardOutputs } from './forward-backward-chunks';
import type { ForwardBackwardOutput } from './tinker-types';

const datum = (tokens: number): DatumInput => ({
  modelInput: [{ type: 'encoded_text', tokens: new Array(tokens).fill(1) }],
  lossFnInputs: { target_tokens: { dtype: 'int64', data: new Array(tokens).fill(1) } },
});

const output = (n: number, metrics: Record<string, number>): ForwardBackwardOutput => ({
  lossFnOutputType: 'ArrayRecord',
  lossFnOutputs: Array.from({ length: n }, () => ({ logprobs: { dtype: 'float32', shape: [1], data: new Float32Array([-n]) } })),
  metrics,
});

describe('chunkDatums', () => {
  it('cuts at the most datums per chunk and at the byte estimate (4 bytes a token plus the inputs’ values), never leaving a chunk empty', () => {
    const five = [1, 2, 3, 4, 5].map(() => datum(10));
    expect(chunkDatums(five, { maxDatums: 2, maxBytes: 1e9 }).map((c) => c.length)).toEqual([2, 2, 1]);
    // 10 tokens: 40 bytes of input + 80 of int64 targets = 120 a datum.
    expect(chunkDatums(five, { maxDatums: 100, maxBytes: 250 }).map((c) => c.length)).toEqual([2, 2, 1]);
    expect(chunkDatums([datum(1000)], { maxDatums: 100, maxBytes: 10 }).map((c) => c.length)).toEqual([1]);
  });
});

describe('combineForwardBackwardOutputs', () => {
  it('merges outputs in order and metrics by their reduction, as the SDK does', () => {
    const merged = combineForwardBackwardOutputs([
      output(1, { 'loss:sum': 2, 'ratio:mean': 1, 'lo:min': 3, 'hi:max': 3, 'gap:slack': 4, 'id:unique': 7, 'h:hash2': 5, 'odd:median': 1, 'only:sum': 1 }),
      output(3, { 'loss:sum': 3, 'ratio:mean': 2, 'lo:min': 1, 'hi:max': 5, 'gap:slack': 0, 'id:unique': 8, 'h:hash2': 6, 'odd:median': 2 }),
    ]);
    expect(merged.lossFnOutputs.map((o) => o.logprobs.data[0])).toEqual([-1, -3, -3, -3]);
    expect(merged.metrics).toEqual({ 'loss:sum': 5, 'ratio:mean': 1.75, 'lo:min': 1, 'hi:max': 5, 'gap:slack': 4 - 1, 'id:unique': 7, 'id:unique_1': 8, 'h:hash2': 11 });
  });
});
