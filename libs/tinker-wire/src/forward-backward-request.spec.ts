import { create, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { codeOf } from './testing';
import { decodeForwardBackwardRequest, encodeForwardBackwardRequest, type ForwardBackwardRequestInput } from './forward-backward-request';
import { decodeMessage } from './message';
import { ChunkSchema, DatumSchema, DType, ForwardBackwardRequestSchema, ImageChunkSchema, SparseCsrSchema, TensorSchema, type Tensor } from './generated/tinker_pb';
import { tensorAsFloat32, tensorAsInt32 } from './tensor';

const request: ForwardBackwardRequestInput = {
  modelId: 'session-1:train:0',
  seqId: 3,
  lossFn: 'cispo',
  lossFnConfig: { clip_low_threshold: 0, clip_high_threshold: 4, tag: 'wire-test' },
  data: [
    {
      modelInput: [
        { type: 'encoded_text', tokens: [1, 2, 3] },
        { type: 'encoded_text', tokens: [151644, 872] },
      ],
      lossFnInputs: {
        target_tokens: { dtype: 'int64', data: [2, 3, 4, 5, 6] },
        weights: { dtype: 'float32', data: [0, 0, 1, 1, 0.5] },
      },
      modelInputSpans: [
        { kind: 'prompt', sequenceId: 's:seq:0:0', offset: 0, length: 2 },
        { kind: 'sampled', sequenceId: 's:seq:0:0', offset: 0, length: 3 },
      ],
      lossFnInputSpans: [{ kind: 'sampled', sequenceId: 's:seq:0:0', offset: 1, length: 5 }],
    },
    {
      modelInput: [20, 21, 22],
      lossFnInputs: {
        target_tokens: { dtype: 'int64', data: [21, 99, 22, 23], shape: [3, 2], sparse: { crowIndices: [0, 2, 3, 4], colIndices: [0, 1, 0, 0] } },
        weights: { dtype: 'float32', data: [1, 0.25, 1, 1], shape: [3, 2], sparse: { crowIndices: [0, 2, 3, 4], colIndices: [0, 1, 0, 0] } },
      },
    },
  ],
};

function bodyWith(tensor: Tensor, extra: Partial<{ datums: number }> = {}): Uint8Array {
  const datum = create(DatumSchema, {
    modelInput: [create(ChunkSchema, { chunk: { case: 'encodedText', value: { $typeName: 'tinker_public.EncodedTextChunk', tokens: new Uint8Array(4) } } })],
    lossFnInputs: { weights: tensor },
  });
  return toBinary(
    ForwardBackwardRequestSchema,
    create(ForwardBackwardRequestSchema, { modelId: 'm', seqId: 1, lossFn: 'cross_entropy', data: Array.from({ length: extra.datums ?? 1 }, () => datum) }),
  );
}

const dense = (bytes: number[], shape: number[], dtype = DType.DTYPE_FLOAT32) =>
  create(TensorSchema, { dtype, shape: shape.map(BigInt), encoding: { case: 'dense', value: new Uint8Array(bytes) } });

describe('forward_backward request: protobuf in, plain arrays out', () => {
  test.each([false, true])('round trip, zstd %s: tokens, loss inputs (dense and CSR), spans, config', (compress) => {
    const body = encodeForwardBackwardRequest(request, { compress });
    const plain = decodeForwardBackwardRequest(body, { contentEncoding: compress ? 'zstd' : undefined });
    expect(plain).toMatchObject({ modelId: 'session-1:train:0', seqId: 3, lossFn: 'cispo', forwardOnly: false });
    expect({ ...plain.lossFnConfig }).toEqual({ clip_low_threshold: 0, clip_high_threshold: 4, tag: 'wire-test' });
    const [a, b] = plain.data;
    expect(Array.from(a.tokens)).toEqual([1, 2, 3, 151644, 872]);
    expect(a.modelInput.map((c) => c.type)).toEqual(['encoded_text', 'encoded_text']);
    expect(Array.from(tensorAsInt32(a.lossFnInputs.target_tokens, 't'))).toEqual([2, 3, 4, 5, 6]);
    expect(a.lossFnInputs.target_tokens.data).toBeInstanceOf(BigInt64Array);
    expect(Array.from(tensorAsFloat32(a.lossFnInputs.weights))).toEqual([0, 0, 1, 1, 0.5]);
    expect(a.modelInputSpans).toEqual(request.data[0].modelInputSpans);
    expect(a.lossFnInputSpans).toEqual(request.data[0].lossFnInputSpans);
    expect(b.lossFnInputs.weights.shape).toEqual([3, 2]);
    expect(Array.from(tensorAsFloat32(b.lossFnInputs.weights))).toEqual([1, 0.25, 1, 0, 1, 0]);
    expect(Array.from(tensorAsInt32(b.lossFnInputs.target_tokens, 't'))).toEqual([21, 99, 22, 0, 23, 0]);
    expect(Array.from(b.lossFnInputs.weights.sparse!.colIndices)).toEqual([0, 1, 0, 0]);
    expect(b.modelInputSpans).toBeUndefined();
  });

  test('numbers go to both config maps and text to v2 only, as SDK 0.27+ writes; the legacy map is read when v2 is empty', () => {
    const message = create(ForwardBackwardRequestSchema, { modelId: 'm', seqId: 1, lossFn: 'ppo', lossFnConfig: { clip_low_threshold: 0.75 } });
    expect({ ...decodeForwardBackwardRequest(toBinary(ForwardBackwardRequestSchema, message)).lossFnConfig }).toEqual({ clip_low_threshold: 0.75 });
    const sent = decodeMessage(ForwardBackwardRequestSchema, encodeForwardBackwardRequest({ ...request, data: [] }));
    expect(sent.lossFnConfig).toEqual({ clip_low_threshold: 0, clip_high_threshold: 4 });
    expect(Object.fromEntries(Object.entries(sent.lossFnConfigV2).map(([k, v]) => [k, v.value]))).toEqual({
      clip_low_threshold: { case: 'number', value: 0 },
      clip_high_threshold: { case: 'number', value: 4 },
      tag: { case: 'text', value: 'wire-test' },
    });
  });

  test('truncated, overlong, malformed or deeply nested bytes fail with TINKER_WIRE_BAD_PROTOBUF', () => {
    const body = encodeForwardBackwardRequest(request);
    for (const cut of [1, 2, 5, 17]) expect([cut, codeOf(() => decodeForwardBackwardRequest(body.subarray(0, body.length - cut)))]).toEqual([cut, 'TINKER_WIRE_BAD_PROTOBUF']);
    // field 3 (data) declaring 2^31 - 1 bytes, holding 3
    const huge = new BinaryWriter()
      .tag(3, WireType.LengthDelimited)
      .uint32(0x7fffffff)
      .raw(new Uint8Array([1, 2, 3]))
      .finish();
    expect(codeOf(() => decodeForwardBackwardRequest(huge))).toBe('TINKER_WIRE_BAD_PROTOBUF');
    // a varint that never ends
    expect(codeOf(() => decodeForwardBackwardRequest(new Uint8Array([0x10, ...new Array(12).fill(0xff)])))).toBe('TINKER_WIRE_BAD_PROTOBUF');
    // model_id (a string) sent as a varint
    expect(codeOf(() => decodeForwardBackwardRequest(new BinaryWriter().tag(1, WireType.Varint).uint32(5).finish()))).toBe('TINKER_WIRE_BAD_PROTOBUF');
    // 200,000 nested unknown groups, never closed
    const groups = new BinaryWriter();
    for (let i = 0; i < 200_000; i++) groups.tag(99, WireType.StartGroup);
    expect(codeOf(() => decodeForwardBackwardRequest(groups.finish()))).toBe('TINKER_WIRE_BAD_PROTOBUF');
    // invalid UTF-8 in model_id
    expect(
      codeOf(() =>
        decodeForwardBackwardRequest(
          new BinaryWriter()
            .tag(1, WireType.LengthDelimited)
            .bytes(new Uint8Array([0xc3, 0x28]))
            .finish(),
        ),
      ),
    ).toBe('TINKER_WIRE_BAD_PROTOBUF');
  });

  test('tensor bytes that cannot be what they claim fail with TINKER_WIRE_INVALID, naming the field', () => {
    const err = (() => {
      try {
        decodeForwardBackwardRequest(bodyWith(dense([0, 0, 128, 63, 0, 0, 0], [2])));
      } catch (e) {
        return e as Error & { field?: string; code?: string };
      }
    })();
    expect(err?.code).toBe('TINKER_WIRE_INVALID');
    expect(err?.field).toBe('data[0].loss_fn_inputs.weights.dense');
    expect(codeOf(() => decodeForwardBackwardRequest(bodyWith(dense([0, 0, 128, 63], [2]))))).toBe('TINKER_WIRE_INVALID');
    expect(
      codeOf(() =>
        decodeForwardBackwardRequest(bodyWith(create(TensorSchema, { dtype: DType.DTYPE_FLOAT32, shape: [-1n], encoding: { case: 'dense', value: new Uint8Array(0) } }))),
      ),
    ).toBe('TINKER_WIRE_INVALID');
    const csr = (crow: number[], col: number[], values: number[], shape: number[]) =>
      create(TensorSchema, {
        dtype: DType.DTYPE_FLOAT32,
        shape: shape.map(BigInt),
        encoding: {
          case: 'sparseCsr',
          value: create(SparseCsrSchema, {
            values: new Uint8Array(new Float32Array(values).buffer),
            crowIndices: new Uint8Array(new BigInt64Array(crow.map(BigInt)).buffer),
            colIndices: new Uint8Array(new BigInt64Array(col.map(BigInt)).buffer),
          }),
        },
      });
    expect(decodeForwardBackwardRequest(bodyWith(csr([0, 1, 2], [1, 0], [5, 6], [2, 2]))).data[0].lossFnInputs.weights.data).toEqual(new Float32Array([0, 5, 6, 0]));
    for (const [crow, col, values, shape] of [
      [
        [1, 1, 2],
        [1, 0],
        [5, 6],
        [2, 2],
      ], // does not start at 0
      [
        [0, 2, 1],
        [1, 0],
        [5, 6],
        [2, 2],
      ], // decreases
      [
        [0, 1, 2],
        [2, 0],
        [5, 6],
        [2, 2],
      ], // column out of range
      [[0, 1], [0], [5], [1, 2, 1]], // not 2-D
      [[0, 1, 2], [0], [5, 6], [2, 2]], // one column for two values
      [
        [0, 1, 2, 2],
        [0, 0],
        [5, 6],
        [2, 2],
      ], // too many row pointers
    ] as const) {
      expect([crow, codeOf(() => decodeForwardBackwardRequest(bodyWith(csr([...crow], [...col], [...values], [...shape]))))]).toEqual([crow, 'TINKER_WIRE_INVALID']);
    }
  });

  test('declared sizes over the limits fail with TINKER_WIRE_TOO_LARGE before anything is allocated', () => {
    const sparseHuge = create(TensorSchema, {
      dtype: DType.DTYPE_FLOAT32,
      shape: [1_000_000_000n, 1_000_000_000n],
      encoding: { case: 'sparseCsr', value: create(SparseCsrSchema, { values: new Uint8Array(0), crowIndices: new Uint8Array(8), colIndices: new Uint8Array(0) }) },
    });
    expect(codeOf(() => decodeForwardBackwardRequest(bodyWith(sparseHuge)))).toBe('TINKER_WIRE_TOO_LARGE');
    expect(codeOf(() => decodeForwardBackwardRequest(bodyWith(dense([0, 0, 0, 0], [1]), { datums: 5 }), { maxDatums: 4 }))).toBe('TINKER_WIRE_TOO_LARGE');
    // five datums of 1 token + 1 weight each: 10 values in all
    expect(codeOf(() => decodeForwardBackwardRequest(bodyWith(dense([0, 0, 0, 0], [1]), { datums: 5 }), { maxElements: 9 }))).toBe('TINKER_WIRE_TOO_LARGE');
    expect(decodeForwardBackwardRequest(bodyWith(dense([0, 0, 0, 0], [1]), { datums: 5 }), { maxElements: 10 }).data).toHaveLength(5);
  });

  test('unspecified dtypes and image chunks are TINKER_WIRE_UNSUPPORTED for a text-only server; images pass when allowed', () => {
    expect(codeOf(() => decodeForwardBackwardRequest(bodyWith(dense([0, 0, 0, 0], [1], DType.DTYPE_UNSPECIFIED))))).toBe('TINKER_WIRE_UNSUPPORTED');
    const withImage = toBinary(
      ForwardBackwardRequestSchema,
      create(ForwardBackwardRequestSchema, {
        modelId: 'm',
        data: [
          create(DatumSchema, {
            modelInput: [create(ChunkSchema, { chunk: { case: 'image', value: create(ImageChunkSchema, { data: new Uint8Array([137, 80]), format: 'png', expectedTokens: 4 }) } })],
          }),
        ],
      }),
    );
    expect(codeOf(() => decodeForwardBackwardRequest(withImage))).toBe('TINKER_WIRE_UNSUPPORTED');
    expect(decodeForwardBackwardRequest(withImage, { textOnly: false }).data[0].modelInput[0]).toEqual({
      type: 'image',
      data: new Uint8Array([137, 80]),
      format: 'png',
      expectedTokens: 4,
    });
  });

  test('a loss input named __proto__ stays an ordinary entry: nothing is polluted', () => {
    const datum = create(DatumSchema, { lossFnInputs: {} });
    Object.defineProperty(datum.lossFnInputs, '__proto__', { value: dense([0, 0, 128, 63], [1]), enumerable: true, configurable: true, writable: true });
    const body = toBinary(ForwardBackwardRequestSchema, create(ForwardBackwardRequestSchema, { modelId: 'm', data: [datum] }));
    const plain = decodeForwardBackwardRequest(body);
    expect(Object.getPrototypeOf(plain.data[0].lossFnInputs)).toBeNull();
    expect(Object.keys(plain.data[0].lossFnInputs)).toEqual(['__proto__']);
    expect(Array.from(tensorAsFloat32(plain.data[0].lossFnInputs['__proto__']))).toEqual([1]);
    expect(({} as Record<string, unknown>).dtype).toBeUndefined();
  });
});
