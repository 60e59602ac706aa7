import { create } from '@bufbuild/protobuf';
import { bfloat16Bytes, bytesOf, int64Bytes, readBfloat16, readFloat32, readInt32, readInt64, readInt64AsNumbers, bigintInRange } from './binary';
import { TinkerWireError } from './errors';
import { DType, SparseCsrSchema, TensorSchema, type Tensor } from './generated/tinker_pb';

/**
 * Tensors as plain typed arrays: the SDK's `TensorData` (loss inputs, target prompt logprobs) on the
 * protobuf wire is a {@link Tensor} message, dense or CSR-sparse, in float32 or int64 (bfloat16 and
 * int32 are readable too).
 */

/** The dtypes of the wire, by the SDK's names. */
export type TensorDType = 'float32' | 'int64' | 'int32' | 'bfloat16';

/** Values of a {@link PlainTensor}: bfloat16 arrives widened to float32. */
export type TensorValues = Float32Array | Int32Array | BigInt64Array;

/**
 * A tensor with its values dense and row-major. A CSR-sparse tensor is densified (cells it does not
 * name are 0) and keeps its layout in `sparse`, so a reader can tell a named 0 from a pad.
 */
export interface PlainTensor {
  dtype: TensorDType;
  /** The dense shape; `[n]` when the sender gave none. */
  shape: number[];
  /** Row-major values: Float32Array for float32 and bfloat16, Int32Array for int32, BigInt64Array for int64. */
  data: TensorValues;
  /** Present when the tensor came CSR-sparse (2-D only): the row pointers, the column of each value, and the values in the order sent. */
  sparse?: { crowIndices: Int32Array; colIndices: Int32Array; values: TensorValues };
}

const DTYPE_NAMES: Record<number, TensorDType | undefined> = {
  [DType.DTYPE_FLOAT32]: 'float32',
  [DType.DTYPE_INT64]: 'int64',
  [DType.DTYPE_INT32]: 'int32',
  [DType.DTYPE_BFLOAT16]: 'bfloat16',
};

const DTYPE_OF: Record<TensorDType, DType> = { float32: DType.DTYPE_FLOAT32, int64: DType.DTYPE_INT64, int32: DType.DTYPE_INT32, bfloat16: DType.DTYPE_BFLOAT16 };

/** The dtype name of a wire enum value, or `TINKER_WIRE_UNSUPPORTED` for DTYPE_UNSPECIFIED and unknown values. */
export function dtypeName(dtype: DType, field: string): TensorDType {
  const name = DTYPE_NAMES[dtype];
  if (name === undefined) throw new TinkerWireError('TINKER_WIRE_UNSUPPORTED', `dtype ${dtype} is not one of float32, int64, int32, bfloat16`, field);
  return name;
}

/** The wire enum value of a dtype name. */
export function dtypeValue(dtype: TensorDType): DType {
  return DTYPE_OF[dtype];
}

/** Values of `bytes` in `dtype`, bfloat16 widened to float32. */
export function readValues(bytes: Uint8Array, dtype: TensorDType, field: string): TensorValues {
  switch (dtype) {
    case 'float32':
      return readFloat32(bytes, field);
    case 'bfloat16':
      return readBfloat16(bytes, field);
    case 'int32':
      return readInt32(bytes, field);
    case 'int64':
      return readInt64(bytes, field);
  }
}

/** Bytes of `values` in `dtype` (float values rounded to bfloat16 when asked; integers must be integral). */
export function writeValues(values: TensorValues | ArrayLike<number>, dtype: TensorDType, field: string): Uint8Array {
  switch (dtype) {
    case 'float32':
      return bytesOf(values instanceof Float32Array ? values : Float32Array.from(values as ArrayLike<number>, Number));
    case 'bfloat16':
      return bfloat16Bytes(values instanceof Float32Array ? values : Float32Array.from(values as ArrayLike<number>, Number));
    case 'int64':
      return values instanceof BigInt64Array ? bytesOf(values) : int64Bytes(values as ArrayLike<number>, field);
    case 'int32': {
      if (values instanceof Int32Array) return bytesOf(values);
      const out = new Int32Array(values.length);
      for (let i = 0; i < values.length; i++) {
        const v = Number(values[i]);
        if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) throw new TinkerWireError('TINKER_WIRE_CANNOT_ENCODE', `${v} is not an int32`, field);
        out[i] = v;
      }
      return bytesOf(out);
    }
  }
}

/** A running count of dense elements against a cap, shared by every tensor of one request. */
export class ElementBudget {
  private used = 0;
  constructor(readonly max: number) {}

  /** Takes `count` elements, or throws `TINKER_WIRE_TOO_LARGE` naming the limit. */
  take(count: number, field: string): void {
    if (!Number.isFinite(count) || count > this.max - this.used) {
      throw new TinkerWireError('TINKER_WIRE_TOO_LARGE', `the request's tensors hold more than ${this.max} values in all`, field);
    }
    this.used += count;
  }
}

/** The element count of a shape, checked against the budget before anything is allocated. */
function shapeSize(shape: number[], budget: ElementBudget, field: string): number {
  let size = 1;
  for (const d of shape) {
    size *= d;
    if (size > budget.max) break;
  }
  budget.take(size, field);
  return size;
}

/**
 * A wire {@link Tensor} as a {@link PlainTensor}. Dense values must fill the shape exactly; CSR needs a
 * 2-D shape, `rows + 1` non-decreasing row pointers from 0 to the value count, and columns in range.
 */
export function tensorFromProto(tensor: Tensor, field: string, budget: ElementBudget): PlainTensor {
  const dtype = dtypeName(tensor.dtype, `${field}.dtype`);
  const shape = tensor.shape.map((d, i) => bigintInRange(d, `${field}.shape[${i}]`, 0, Number.MAX_SAFE_INTEGER));
  const encoding = tensor.encoding;
  if (encoding.case === 'sparseCsr') {
    if (shape.length !== 2) throw new TinkerWireError('TINKER_WIRE_INVALID', `a CSR tensor needs a 2-D shape, got [${shape.join(', ')}]`, `${field}.shape`);
    const [rows, cols] = shape;
    const size = shapeSize(shape, budget, field);
    const values = readValues(encoding.value.values, dtype, `${field}.sparse_csr.values`);
    const crow = readInt64AsNumbers(encoding.value.crowIndices, `${field}.sparse_csr.crow_indices`, 0, values.length);
    const col = readInt64AsNumbers(encoding.value.colIndices, `${field}.sparse_csr.col_indices`, 0, cols - 1);
    if (crow.length !== rows + 1)
      throw new TinkerWireError('TINKER_WIRE_INVALID', `${crow.length} row pointers for ${rows} rows (need ${rows + 1})`, `${field}.sparse_csr.crow_indices`);
    if (col.length !== values.length)
      throw new TinkerWireError('TINKER_WIRE_INVALID', `${col.length} column indices for ${values.length} values`, `${field}.sparse_csr.col_indices`);
    if (crow[0] !== 0 || crow[rows] !== values.length)
      throw new TinkerWireError('TINKER_WIRE_INVALID', `row pointers must run from 0 to ${values.length}`, `${field}.sparse_csr.crow_indices`);
    const data = newValues(dtype, size);
    const cells = data as unknown as { [index: number]: number | bigint };
    for (let r = 0; r < rows; r++) {
      if (crow[r + 1] < crow[r]) throw new TinkerWireError('TINKER_WIRE_INVALID', `row pointers decrease at row ${r}`, `${field}.sparse_csr.crow_indices`);
      for (let k = crow[r]; k < crow[r + 1]; k++) cells[r * cols + col[k]] = values[k];
    }
    return { dtype, shape, data, sparse: { crowIndices: Int32Array.from(crow), colIndices: Int32Array.from(col), values } };
  }
  const bytes = encoding.case === 'dense' ? encoding.value : new Uint8Array(0);
  const data = readValues(bytes, dtype, `${field}.dense`);
  if (shape.length === 0) {
    budget.take(data.length, field);
    return { dtype, shape: [data.length], data };
  }
  const size = shapeSize(shape, budget, field);
  if (size !== data.length) throw new TinkerWireError('TINKER_WIRE_INVALID', `${data.length} values do not fill shape [${shape.join(', ')}] (${size})`, `${field}.dense`);
  return { dtype, shape, data };
}

function newValues(dtype: TensorDType, size: number): TensorValues {
  if (dtype === 'int64') return new BigInt64Array(size);
  if (dtype === 'int32') return new Int32Array(size);
  return new Float32Array(size);
}

/** What {@link tensorToProto} takes: values in any numeric form, a shape (default `[n]`), optional CSR layout. */
export interface TensorInput {
  dtype: TensorDType;
  data: TensorValues | ArrayLike<number>;
  shape?: number[];
  /** Send CSR-sparse: `data` then holds only the listed values. */
  sparse?: { crowIndices: ArrayLike<number>; colIndices: ArrayLike<number> };
}

/** A {@link TensorInput} as a wire {@link Tensor}. */
export function tensorToProto(input: TensorInput, field: string): Tensor {
  const shape = (input.shape ?? [input.data.length]).map((d) => BigInt(d));
  const values = writeValues(input.data, input.dtype, field);
  if (input.sparse) {
    return create(TensorSchema, {
      dtype: dtypeValue(input.dtype),
      shape,
      encoding: {
        case: 'sparseCsr',
        value: create(SparseCsrSchema, {
          values,
          crowIndices: int64Bytes(input.sparse.crowIndices, `${field}.crow_indices`),
          colIndices: int64Bytes(input.sparse.colIndices, `${field}.col_indices`),
        }),
      },
    });
  }
  return create(TensorSchema, { dtype: dtypeValue(input.dtype), shape, encoding: { case: 'dense', value: values } });
}

/**
 * A tensor's values as an Int32Array (token ids): int64 and int32 values must fit int32, float values
 * must be integers.
 *
 * @example
 * ```ts
 * const targets = tensorAsInt32(datum.lossFnInputs.target_tokens, 'data[0].loss_fn_inputs.target_tokens');
 * ```
 */
export function tensorAsInt32(tensor: PlainTensor, field: string): Int32Array {
  if (tensor.data instanceof Int32Array) return tensor.data;
  const out = new Int32Array(tensor.data.length);
  for (let i = 0; i < out.length; i++) {
    const v = Number(tensor.data[i]);
    if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) throw new TinkerWireError('TINKER_WIRE_INVALID', `value ${tensor.data[i]} at ${i} is not an int32`, field);
    out[i] = v;
  }
  return out;
}

/**
 * A tensor's values as a Float32Array (weights, advantages, logprobs); integer values are converted.
 *
 * @example
 * ```ts
 * const weights = tensorAsFloat32(datum.lossFnInputs.weights);
 * ```
 */
export function tensorAsFloat32(tensor: PlainTensor): Float32Array {
  if (tensor.data instanceof Float32Array) return tensor.data;
  return Float32Array.from(tensor.data as ArrayLike<number | bigint>, Number);
}
