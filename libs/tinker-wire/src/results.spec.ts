import { toBinary } from '@bufbuild/protobuf';
import { codeOf } from './testing';
import { decodeForwardBackwardOutput, encodeForwardBackwardOutput } from './forward-backward-output';
import { ForwardBackwardOutputSchema, SampleResponseSchema } from './generated/tinker_pb';
import { decodeMessage } from './message';
import { decodeSampleResponse, encodeSampleResponse } from './sample-response';

describe('forward/backward results: plain outputs in, protobuf out', () => {
  test('per-datum outputs travel batched with byte offsets and read back per datum', () => {
    const bytes = encodeForwardBackwardOutput({
      lossFnOutputs: [
        { logprobs: new Float32Array([-0.5, -1.25]), elementwise_loss: [0.5, 1.25] },
        { logprobs: new Float32Array([-2]), elementwise_loss: [2] },
      ],
      metrics: { 'loss:sum': 3.75 },
    });
    const message = decodeMessage(ForwardBackwardOutputSchema, bytes);
    expect(message.lossFnOutputs).toHaveLength(1);
    expect(message.lossFnOutputs[0].numDatums).toBe(2n);
    expect(Array.from(new BigInt64Array(message.lossFnOutputs[0].fields.logprobs.offsets.slice().buffer))).toEqual([0n, 8n, 12n]);
    const out = decodeForwardBackwardOutput(bytes);
    expect(out.lossFnOutputType).toBe('ArrayRecord');
    expect({ ...out.metrics }).toEqual({ 'loss:sum': 3.75 });
    expect(out.lossFnOutputs.map((d) => Array.from(d.logprobs.data as Float32Array))).toEqual([[-0.5, -1.25], [-2]]);
    expect(out.lossFnOutputs[1].elementwise_loss.shape).toEqual([1]);
  });

  test('dtypes and trailing shapes: with mixedLayouts a change starts a new record; bfloat16 rounds to nearest even', () => {
    const result = {
      lossFnOutputs: [
        { topk: { dtype: 'int32', data: [1, 2, 3, 4], trailingShape: [2] }, lp: { dtype: 'bfloat16', data: [1.00390625, -3] } },
        { topk: { dtype: 'int32', data: [5, 6], trailingShape: [2] }, lp: { dtype: 'bfloat16', data: [1.01171875] } },
        { topk: { dtype: 'int64', data: [7, 8, 9], trailingShape: [3] }, lp: { dtype: 'bfloat16', data: [0.5] } },
      ],
      metrics: {},
    } as const;
    // SDKs before 0.24.1 read every record with the first one's layout: refused unless asked for.
    expect(codeOf(() => encodeForwardBackwardOutput(result))).toBe('TINKER_WIRE_CANNOT_ENCODE');
    const bytes = encodeForwardBackwardOutput(result, { mixedLayouts: true });
    expect(decodeMessage(ForwardBackwardOutputSchema, bytes).lossFnOutputs.map((r) => Number(r.numDatums))).toEqual([2, 1]);
    const out = decodeForwardBackwardOutput(bytes);
    expect(out.lossFnOutputs.map((d) => d.topk.shape)).toEqual([
      [2, 2],
      [1, 2],
      [1, 3],
    ]);
    expect(out.lossFnOutputs[2].topk.data).toEqual(new BigInt64Array([7n, 8n, 9n]));
    // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one (1);
    // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties go to 1 + 2^-6.
    expect(Array.from(out.lossFnOutputs[0].lp.data as Float32Array)).toEqual([1, -3]);
    expect(Array.from(out.lossFnOutputs[1].lp.data as Float32Array)).toEqual([1.015625]);
    expect(out.lossFnOutputs[0].lp.dtype).toBe('float32');
  });

  test('no datums gives no records; datums without outputs still count', () => {
    expect(decodeMessage(ForwardBackwardOutputSchema, encodeForwardBackwardOutput({ lossFnOutputs: [], metrics: { 'loss:sum': 0 } })).lossFnOutputs).toHaveLength(0);
    const empty = decodeMessage(ForwardBackwardOutputSchema, encodeForwardBackwardOutput({ lossFnOutputs: [{}, {}], metrics: {} }));
    expect(empty.lossFnOutputs.map((r) => r.numDatums)).toEqual([2n]);
  });

  test('what the SDK cannot read is refused: metric keys not name:reduction, output names that differ, values that do not fill the shape', () => {
    for (const key of ['loss', 'loss:sum:x', ':sum', 'loss:median']) {
      expect([key, codeOf(() => encodeForwardBackwardOutput({ lossFnOutputs: [], metrics: { [key]: 1 } }))]).toEqual([key, 'TINKER_WIRE_CANNOT_ENCODE']);
    }
    for (const key of ['loss:sum', 'e_frac_with_tokens:mean', 'a:min', 'a:max', 'a:slack', 'a:hash2', 'a:unique']) {
      expect(codeOf(() => encodeForwardBackwardOutput({ lossFnOutputs: [], metrics: { [key]: 1 } }))).toBeUndefined();
    }
    expect(codeOf(() => encodeForwardBackwardOutput({ lossFnOutputs: [{ logprobs: [1] }, { elementwise_loss: [1] }], metrics: {} }))).toBe('TINKER_WIRE_CANNOT_ENCODE');
    expect(codeOf(() => encodeForwardBackwardOutput({ lossFnOutputs: [{ x: { dtype: 'float32', data: [1, 2, 3], trailingShape: [2] } }], metrics: {} }))).toBe(
      'TINKER_WIRE_CANNOT_ENCODE',
    );
    expect(codeOf(() => encodeForwardBackwardOutput({ lossFnOutputs: [{ x: { dtype: 'int32', data: [1.5] } }], metrics: {} }))).toBe('TINKER_WIRE_CANNOT_ENCODE');
  });

  test('decoding refuses offsets that run past the data or go backwards', () => {
    const bytes = encodeForwardBackwardOutput({ lossFnOutputs: [{ lp: [1, 2] }, { lp: [3] }], metrics: {} });
    const message = decodeMessage(ForwardBackwardOutputSchema, bytes);
    const field = message.lossFnOutputs[0].fields.lp;
    field.offsets = new Uint8Array(new BigInt64Array([0n, 8n, 400n]).buffer);
    expect(codeOf(() => decodeForwardBackwardOutput(toBinary(ForwardBackwardOutputSchema, message)))).toBe('TINKER_WIRE_INVALID');
    field.offsets = new Uint8Array(new BigInt64Array([0n, 8n, 4n]).buffer);
    expect(codeOf(() => decodeForwardBackwardOutput(toBinary(ForwardBackwardOutputSchema, message)))).toBe('TINKER_WIRE_INVALID');
  });
});

describe('sample results: plain sequences in, protobuf out', () => {
  test('sequences, prompt logprobs with NaN for none, top-k, target logprobs (CSR) and alternative tokens round trip', () => {
    const bytes = encodeSampleResponse({
      sequences: [
        { stopReason: 'stop', tokens: [5, 151645], logprobs: [-0.25, -0.5], topkLogprobs: { k: 2, tokenIds: [5, 6, 151645, 7], logprobs: [-0.25, -2, -0.5, -3] } },
        { stopReason: 'length', tokens: [9, 9, 9] },
      ],
      promptLogprobs: [null, -1.5, -0.75],
      topkPromptLogprobs: { k: 1, tokenIds: [0, 8, 9], logprobs: [-99999, -1, -0.5] },
      promptCacheHitTokens: 2,
      targetPromptLogprobs: { dtype: 'float32', data: [-0.05, -0.09], shape: [2, 2], sparse: { crowIndices: [0, 2, 2], colIndices: [0, 1] } },
      promptAltTokens: { tokens: { dtype: 'int64', data: [1, 2], shape: [2, 1] }, logprobs: { dtype: 'float32', data: [-1, -2], shape: [2, 1] } },
    });
    const out = decodeSampleResponse(bytes);
    expect(out.sequences.map((s) => [s.stopReason, Array.from(s.tokens), s.logprobs && Array.from(s.logprobs)])).toEqual([
      ['stop', [5, 151645], [-0.25, -0.5]],
      ['length', [9, 9, 9], undefined],
    ]);
    expect(out.sequences[0].topkLogprobs).toMatchObject({ k: 2, length: 2 });
    expect(Number.isNaN(out.promptLogprobs![0])).toBe(true);
    expect(Array.from(out.promptLogprobs!.subarray(1))).toEqual([-1.5, -0.75]);
    expect(out.topkPromptLogprobs).toMatchObject({ k: 1, length: 3 });
    expect(out.promptCacheHitTokens).toBe(2);
    expect(out.targetPromptLogprobs?.sparse?.colIndices).toEqual(new Int32Array([0, 1]));
    expect(out.promptAltTokens?.tokens.data).toEqual(new BigInt64Array([1n, 2n]));
    expect(decodeMessage(SampleResponseSchema, bytes).sequences[1].logprobs).toBeUndefined();
  });

  test('logprobs that do not match the tokens, non-integer tokens and ragged top-k are refused', () => {
    expect(codeOf(() => encodeSampleResponse({ sequences: [{ stopReason: 'stop', tokens: [1, 2], logprobs: [-1] }] }))).toBe('TINKER_WIRE_CANNOT_ENCODE');
    expect(codeOf(() => encodeSampleResponse({ sequences: [{ stopReason: 'stop', tokens: [1.5] }] }))).toBe('TINKER_WIRE_CANNOT_ENCODE');
    expect(codeOf(() => encodeSampleResponse({ sequences: [{ stopReason: 'stop', tokens: [1], topkLogprobs: { k: 2, tokenIds: [1, 2, 3], logprobs: [1, 2, 3] } }] }))).toBe(
      'TINKER_WIRE_CANNOT_ENCODE',
    );
    expect(codeOf(() => encodeSampleResponse({ sequences: [], topkPromptLogprobs: { k: 0, tokenIds: [], logprobs: [] } }))).toBe('TINKER_WIRE_CANNOT_ENCODE');
  });
});
