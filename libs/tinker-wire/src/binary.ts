import { TinkerWireError } from './errors';

/**
 * Little-endian arrays in protobuf `bytes` fields, to and from typed arrays. Reads copy into a fresh,
 * aligned buffer (a field's bytes sit at any offset of the message), so the result never aliases the
 * body it came from. Every host this runs on is little-endian; a big-endian one swaps through DataView.
 */

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

type Typed = Int32Array | Float32Array | BigInt64Array | Uint16Array;
type TypedConstructor<T extends Typed> = { new (length: number): T; BYTES_PER_ELEMENT: number };

function read<T extends Typed>(bytes: Uint8Array, Kind: TypedConstructor<T>, what: string, field: string): T {
  const size = Kind.BYTES_PER_ELEMENT;
  if (bytes.byteLength % size !== 0) {
    throw new TinkerWireError('TINKER_WIRE_INVALID', `${bytes.byteLength} bytes are not a whole number of ${what} values (${size} bytes each)`, field);
  }
  const out = new Kind(bytes.byteLength / size);
  const target = new Uint8Array(out.buffer);
  target.set(bytes);
  if (!LITTLE_ENDIAN) for (let i = 0; i < target.length; i += size) target.subarray(i, i + size).reverse();
  return out;
}

/** int32 little-endian bytes (token ids) as an Int32Array. */
export function readInt32(bytes: Uint8Array, field: string): Int32Array {
  return read(bytes, Int32Array, 'int32', field);
}

/** float32 little-endian bytes as a Float32Array. */
export function readFloat32(bytes: Uint8Array, field: string): Float32Array {
  return read(bytes, Float32Array, 'float32', field);
}

/** int64 little-endian bytes as a BigInt64Array. */
export function readInt64(bytes: Uint8Array, field: string): BigInt64Array {
  return read(bytes, BigInt64Array, 'int64', field);
}

/** bfloat16 bytes widened to float32: each value is the upper half of a float32, exactly. */
export function readBfloat16(bytes: Uint8Array, field: string): Float32Array {
  const halves = read(bytes, Uint16Array, 'bfloat16', field);
  const bits = new Uint32Array(halves.length);
  for (let i = 0; i < halves.length; i++) bits[i] = halves[i] << 16;
  return new Float32Array(bits.buffer);
}

/**
 * int64 little-endian bytes as numbers, each checked to lie in [min, max] (indices, offsets, shapes:
 * values a hostile body could make huge or negative).
 */
export function readInt64AsNumbers(bytes: Uint8Array, field: string, min: number, max: number): number[] {
  const values = readInt64(bytes, field);
  const out = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) out[i] = bigintInRange(values[i], field, min, max);
  return out;
}

/** A protobuf int64 as a number in [min, max], or a TinkerWireError naming the field. */
export function bigintInRange(value: bigint, field: string, min: number, max: number): number {
  if (value < BigInt(min) || value > BigInt(max)) {
    throw new TinkerWireError('TINKER_WIRE_INVALID', `${value} is outside [${min}, ${max}]`, field);
  }
  return Number(value);
}

/** A typed array's values as little-endian bytes (a copy). */
export function bytesOf(values: Typed): Uint8Array {
  const out = new Uint8Array(values.byteLength);
  out.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
  if (!LITTLE_ENDIAN) for (let i = 0; i < out.length; i += values.BYTES_PER_ELEMENT) out.subarray(i, i + values.BYTES_PER_ELEMENT).reverse();
  return out;
}

/** float32 values rounded to bfloat16 (round to nearest, ties to even; NaN stays NaN), as bytes. */
export function bfloat16Bytes(values: Float32Array): Uint8Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const halves = new Uint16Array(values.length);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i];
    if ((b & 0x7f800000) === 0x7f800000 && (b & 0x007fffff) !== 0) halves[i] = (b >>> 16) | 0x0040;
    else halves[i] = (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
  }
  return bytesOf(halves);
}

/** Numbers as int64 little-endian bytes; every value must be a safe integer. */
export function int64Bytes(values: ArrayLike<number | bigint>, field: string): Uint8Array {
  const out = new BigInt64Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v === 'number' && !Number.isSafeInteger(v)) throw new TinkerWireError('TINKER_WIRE_CANNOT_ENCODE', `${v} is not an integer`, field);
    out[i] = BigInt(v);
  }
  return bytesOf(out);
}
