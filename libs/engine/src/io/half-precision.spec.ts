import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bfloat16BitsToFloat32,
  decodeBfloat16,
  decodeFloat16,
  encodeBfloat16,
  encodeFloat16,
  float16BitsToFloat32,
  float32ToBfloat16Bits,
  float32ToFloat16Bits,
} from './half-precision';

const golden = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '__golden__', 'safetensors', 'expected.json'), 'utf8')) as {
  narrowing: Array<{ f32: number; f16: number | null; bf16: number | null }>;
};

function fromBits(bits: number): number {
  return new Float32Array(new Uint32Array([bits]).buffer)[0];
}

describe('half precision', () => {
  it('narrows like the independent Python reference (round half to even, subnormals, overflow), NaN stays NaN', () => {
    const inputs = new Float32Array(new Uint32Array(golden.narrowing.map((c) => c.f32)).buffer);
    expect(inputs.length).toBeGreaterThan(400);
    const f16 = encodeFloat16(inputs);
    const bf16 = encodeBfloat16(inputs);
    golden.narrowing.forEach((c, i) => {
      if (c.f16 === null) {
        expect(Number.isNaN(float16BitsToFloat32(f16[i]))).toBe(true);
        expect(Number.isNaN(bfloat16BitsToFloat32(bf16[i]))).toBe(true);
        // The sign of a NaN survives.
        expect(f16[i] >> 15).toBe(c.f32 >>> 31);
        expect(bf16[i] >> 15).toBe(c.f32 >>> 31);
      } else {
        expect([i, f16[i]]).toEqual([i, c.f16]);
        expect([i, bf16[i]]).toEqual([i, c.bf16]);
        expect(float32ToFloat16Bits(inputs[i])).toBe(c.f16);
        expect(float32ToBfloat16Bits(inputs[i])).toBe(c.bf16);
      }
    });
  });

  it('knows the landmark values', () => {
    expect(float32ToFloat16Bits(1)).toBe(0x3c00);
    expect(float32ToFloat16Bits(-0)).toBe(0x8000);
    expect(float32ToFloat16Bits(65504)).toBe(0x7bff);
    expect(float32ToFloat16Bits(65519)).toBe(0x7bff);
    expect(float32ToFloat16Bits(65520)).toBe(0x7c00);
    expect(float32ToFloat16Bits(-Infinity)).toBe(0xfc00);
    expect(float32ToFloat16Bits(2 ** -24)).toBe(0x0001);
    expect(float32ToFloat16Bits(2 ** -25)).toBe(0x0000); // tie between 0 and the smallest subnormal: even
    expect(float32ToFloat16Bits(3 * 2 ** -25)).toBe(0x0002); // tie between 1 and 2 subnormal steps: even
    expect(float32ToFloat16Bits(2 ** -14 - 2 ** -25)).toBe(0x0400); // rounds up into the normal range
    expect(float16BitsToFloat32(0x0001)).toBe(2 ** -24);
    expect(float16BitsToFloat32(0x7bff)).toBe(65504);
    expect(float32ToBfloat16Bits(1)).toBe(0x3f80);
    expect(float32ToBfloat16Bits(1 + 2 ** -8)).toBe(0x3f80); // tie: even
    expect(float32ToBfloat16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82); // tie: even (up)
    expect(float32ToBfloat16Bits(fromBits(0x7f7fffff))).toBe(0x7f80); // float32 max rounds to infinity
    expect(float32ToBfloat16Bits(fromBits(0x00000001))).toBe(0x0000); // float32 subnormals keep their top bits
    expect(float32ToBfloat16Bits(fromBits(0x00018000))).toBe(0x0002);
    // A NaN whose payload lies only in the low 16 bits must not become infinity.
    expect(Number.isNaN(bfloat16BitsToFloat32(float32ToBfloat16Bits(fromBits(0x7f800001))))).toBe(true);
    expect(Number.isNaN(float16BitsToFloat32(float32ToFloat16Bits(fromBits(0x7f800001))))).toBe(true);
  });

  it('round-trips every 16-bit pattern exactly (widening is exact, narrowing inverts it)', () => {
    const all = new Uint16Array(65536).map((_, i) => i);
    const f16 = decodeFloat16(all);
    const back16 = encodeFloat16(f16);
    const bf16 = decodeBfloat16(all);
    const backBf16 = encodeBfloat16(bf16);
    let mismatches = 0;
    for (let h = 0; h < 65536; h++) {
      const nan16 = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
      const nanBf = (h & 0x7f80) === 0x7f80 && (h & 0x7f) !== 0;
      if (nan16 ? !Number.isNaN(f16[h]) : back16[h] !== h) mismatches++;
      if (nanBf ? !Number.isNaN(bf16[h]) : backBf16[h] !== h) mismatches++;
      // Quiet NaNs keep their payload both ways.
      if (nan16 && h & 0x200 && back16[h] !== h) mismatches++;
      if (nanBf && h & 0x40 && backBf16[h] !== h) mismatches++;
    }
    expect(mismatches).toBe(0);
  });

  it('converts views at an offset without touching neighbouring values', () => {
    const whole = new Float32Array([9, 1, 2, 9]);
    expect([...decodeFloat16(encodeFloat16(whole.subarray(1, 3)))]).toEqual([1, 2]);
    expect([...decodeBfloat16(encodeBfloat16(whole.subarray(1, 3)))]).toEqual([1, 2]);
  });
});
