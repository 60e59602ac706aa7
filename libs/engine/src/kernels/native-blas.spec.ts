import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Prng } from '../util/prng';
import { nativeAddonPath, openNativeBlas } from './native-blas';

// The addon's own contract, below the tfjs kernel (whose results wasm-batch-matmul.spec.ts compares
// with the stock kernel): products against a float64 loop, broadcasting by stride 0, and shapes that
// would read or write past the arrays refused with a RangeError rather than run.
const status = openNativeBlas();
const describeIfBlas = status.ok ? describe : describe.skip;

interface Gemm {
  gemm(ta: boolean, tb: boolean, batch: number, m: number, n: number, k: number, a: Float32Array, sa: number, b: Float32Array, sb: number, c: Float32Array): void;
}

function reference(ta: boolean, tb: boolean, batch: number, m: number, n: number, k: number, a: Float32Array, sa: number, b: Float32Array, sb: number): Float64Array {
  const c = new Float64Array(batch * m * n);
  for (let i = 0; i < batch; i++) {
    for (let r = 0; r < m; r++) {
      for (let col = 0; col < n; col++) {
        let s = 0;
        for (let p = 0; p < k; p++) {
          const av = a[i * sa + (ta ? p * m + r : r * k + p)];
          const bv = b[i * sb + (tb ? col * k + p : p * n + col)];
          s += av * bv;
        }
        c[i * m * n + r * n + col] = s;
      }
    }
  }
  return c;
}

function randomArray(n: number, seed: number): Float32Array {
  const rng = new Prng(seed);
  return Float32Array.from({ length: n }, () => rng.normal());
}

describe('native OpenBLAS addon', () => {
  it('is available where CI installs OpenBLAS and a compiler', () => {
    if (process.env.CI === 'true') expect(status).toMatchObject({ ok: true });
    else expect(typeof status.ok).toBe('boolean');
    if (!status.ok) expect(status.error).toMatch(/addon not built|OpenBLAS/);
  });
});

describeIfBlas('native OpenBLAS gemm', () => {
  const req = typeof require === 'function' ? require : createRequire(join(process.cwd(), 'package.json'));
  const addon = req(nativeAddonPath()) as Gemm;

  it('reports the library and threads it opened', () => {
    expect(status.path).toMatch(/openblas/);
    expect(status.threads).toBeGreaterThanOrEqual(1);
    expect(status.config).toMatch(/OpenBLAS/);
  });

  it.each([
    [false, false, 1, 7, 5, 3, 1, 1],
    [true, false, 2, 6, 9, 4, 1, 1],
    [false, true, 3, 5, 4, 8, 1, 0], // B broadcast over the batch
    [true, true, 4, 3, 6, 5, 0, 1], // A broadcast
    [false, false, 2, 64, 48, 96, 1, 1], // large enough for OpenBLAS's threaded path
  ])('tA=%s tB=%s batch %d, %d×%d×%d matches a float64 loop', (ta, tb, batch, m, n, k, aBatched, bBatched) => {
    const sa = aBatched ? m * k : 0;
    const sb = bBatched ? k * n : 0;
    const a = randomArray((aBatched ? batch : 1) * m * k, 1);
    const b = randomArray((bBatched ? batch : 1) * k * n, 2);
    const c = new Float32Array(batch * m * n).fill(Number.NaN);
    addon.gemm(ta, tb, batch, m, n, k, a, sa, b, sb, c);
    const want = reference(ta, tb, batch, m, n, k, a, sa, b, sb);
    let worst = 0;
    for (let i = 0; i < c.length; i++) worst = Math.max(worst, Math.abs(c[i] - want[i]));
    expect(worst).toBeLessThan(1e-4 * Math.sqrt(k));
  });

  it('works on views at offsets inside a larger buffer (the wasm heap)', () => {
    const heap = new ArrayBuffer(4 * 100);
    const a = new Float32Array(heap, 4 * 10, 6).fill(1); // 2×3
    const b = new Float32Array(heap, 4 * 20, 6).fill(2); // 3×2
    const c = new Float32Array(heap, 4 * 40, 4);
    addon.gemm(false, false, 1, 2, 2, 3, a, 0, b, 0, c);
    expect(Array.from(c)).toEqual([6, 6, 6, 6]);
    expect(new Float32Array(heap, 4 * 44, 4).every((v) => v === 0)).toBe(true); // nothing written past C
  });

  it.each([
    ['A too short', 2, 3, 3, 3, 17, 9, 18],
    ['B too short', 1, 3, 3, 3, 9, 8, 9],
    ['C too short', 2, 3, 3, 3, 18, 18, 17],
    ['a zero dimension', 1, 0, 3, 3, 9, 9, 9],
  ])('refuses %s', (_what, batch, m, n, k, la, lb, lc) => {
    const call = () => addon.gemm(false, false, batch, m, n, k, new Float32Array(la), m * k, new Float32Array(lb), k * n, new Float32Array(lc));
    // Matched by message and name: the addon's errors come from Node's realm, not Jest's sandbox.
    expect(call).toThrow(/gemm: shapes and strides exceed the arrays/);
    expect(() => call()).toThrow(expect.objectContaining({ name: 'RangeError', code: 'OT_ENGINE_NATIVE' }));
  });

  it('refuses arrays that are not Float32Array', () => {
    expect(() => addon.gemm(false, false, 1, 1, 1, 1, new Float64Array(1) as unknown as Float32Array, 0, new Float32Array(1), 0, new Float32Array(1))).toThrow(/must be Float32Arrays/);
  });
});
