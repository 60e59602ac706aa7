/**
 * Exact conversions between float32 and the two 16-bit float formats safetensors files use:
 * IEEE 754 binary16 (`F16`) and bfloat16 (`BF16`). Widening is exact (every 16-bit value is a float32);
 * narrowing rounds to nearest, ties to even, like PyTorch's `.to(torch.float16 / torch.bfloat16)` and
 * NumPy's `astype(np.float16)`: overflow goes to ±infinity, tiny values to subnormals or signed zero,
 * and NaN stays NaN (quiet, sign kept) instead of collapsing into infinity.
 */

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

let f16Table: Float32Array | undefined;

/** The 65,536 float32 values of every binary16 bit pattern, built once on first use (256 KiB). */
function float16Table(): Float32Array {
  if (f16Table) return f16Table;
  const bits = new Uint32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >>> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0x1f) {
      // Infinity or NaN: widen the payload so NaN bits survive a round trip.
      bits[h] = sign | 0x7f800000 | (mant << 13);
    } else if (exp === 0) {
      // Zero or subnormal: mant * 2^-24 is exactly representable in float32.
      scratchF32[0] = mant * 2 ** -24;
      bits[h] = sign | scratchU32[0];
    } else {
      bits[h] = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
  }
  f16Table = new Float32Array(bits.buffer);
  return f16Table;
}

/**
 * The float32 value of a binary16 bit pattern.
 *
 * @example
 * ```ts
 * float16BitsToFloat32(0x3c00); // 1
 * float16BitsToFloat32(0x0001); // 5.960464477539063e-8 (smallest subnormal)
 * ```
 */
export function float16BitsToFloat32(bits: number): number {
  return float16Table()[bits & 0xffff];
}

/** binary16 bits of float32 bits, rounding to nearest even. */
function f32BitsToF16Bits(b: number): number {
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) {
    // Keep NaN a NaN: set the quiet bit, keep the top of the payload.
    return mant !== 0 ? sign | 0x7e00 | (mant >>> 13) : sign | 0x7c00;
  }
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal result (or zero). Below 2^-25 everything rounds to zero; exp === 0 (float32
    // subnormals) lands here too, since e is then -112.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const kept = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    // A carry out of the subnormal range gives 0x400, the smallest normal: still the right encoding.
    return sign | (rest > half || (rest === half && (kept & 1) === 1) ? kept + 1 : kept);
  }
  const r = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  // A carry into the exponent is correct too, up to 0x7c00 (infinity) for values at or past 65520.
  return sign | (rest > 0x1000 || (rest === 0x1000 && (r & 1) === 1) ? r + 1 : r);
}

/**
 * The binary16 bit pattern nearest to `value` (ties to even).
 *
 * @example
 * ```ts
 * float32ToFloat16Bits(1); // 0x3c00
 * float32ToFloat16Bits(65520); // 0x7c00 (rounds up to infinity)
 * ```
 */
export function float32ToFloat16Bits(value: number): number {
  scratchF32[0] = value;
  return f32BitsToF16Bits(scratchU32[0]);
}

/**
 * The float32 value of a bfloat16 bit pattern (the top half of a float32).
 *
 * @example
 * ```ts
 * bfloat16BitsToFloat32(0x3f80); // 1
 * ```
 */
export function bfloat16BitsToFloat32(bits: number): number {
  scratchU32[0] = (bits & 0xffff) << 16;
  return scratchF32[0];
}

function f32BitsToBf16Bits(b: number): number {
  if ((b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0) {
    // Truncating could clear every payload bit and turn NaN into infinity: force the quiet bit.
    return ((b >>> 16) | 0x40) & 0xffff;
  }
  // Round to nearest even on the 16 dropped bits. b + 0x8000 stays below 2^32 for non-NaN inputs.
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * The bfloat16 bit pattern nearest to `value` (ties to even).
 *
 * @example
 * ```ts
 * float32ToBfloat16Bits(1); // 0x3f80
 * float32ToBfloat16Bits(1 + 2 ** -8); // 0x3f80 (tie, rounds to even)
 * ```
 */
export function float32ToBfloat16Bits(value: number): number {
  scratchF32[0] = value;
  return f32BitsToBf16Bits(scratchU32[0]);
}

/**
 * Widens binary16 bit patterns into `out` (same length).
 *
 * @example
 * ```ts
 * const f32 = decodeFloat16(new Uint16Array([0x3c00, 0xc000])); // Float32Array [1, -2]
 * ```
 */
export function decodeFloat16(src: Uint16Array, out: Float32Array = new Float32Array(src.length)): Float32Array {
  const table = float16Table();
  for (let i = 0; i < src.length; i++) out[i] = table[src[i]];
  return out;
}

/**
 * Narrows float32 values into binary16 bit patterns (round to nearest even).
 *
 * @example
 * ```ts
 * encodeFloat16(new Float32Array([1, 0.1])); // Uint16Array [0x3c00, 0x2e66]
 * ```
 */
export function encodeFloat16(src: Float32Array, out: Uint16Array = new Uint16Array(src.length)): Uint16Array {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < src.length; i++) out[i] = f32BitsToF16Bits(bits[i]);
  return out;
}

/**
 * Widens bfloat16 bit patterns into `out` (same length).
 *
 * @example
 * ```ts
 * decodeBfloat16(new Uint16Array([0x3f80])); // Float32Array [1]
 * ```
 */
export function decodeBfloat16(src: Uint16Array, out: Float32Array = new Float32Array(src.length)): Float32Array {
  const bits = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < src.length; i++) bits[i] = src[i] << 16;
  return out;
}

/**
 * Narrows float32 values into bfloat16 bit patterns (round to nearest even).
 *
 * @example
 * ```ts
 * encodeBfloat16(new Float32Array([1, Math.PI])); // Uint16Array [0x3f80, 0x4049]
 * ```
 */
export function encodeBfloat16(src: Float32Array, out: Uint16Array = new Uint16Array(src.length)): Uint16Array {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < src.length; i++) out[i] = f32BitsToBf16Bits(bits[i]);
  return out;
}
