import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeBfloat16, decodeFloat16, encodeBfloat16, encodeFloat16 } from '../io/half-precision';
import { Prng } from '../util/prng';
import { engineAddon, loadEngineAddon, NATIVE_DTYPES, nativeMemory, type EngineAddon, type TensorHandle } from './addon';

// The addon's own contract, below the tfjs kernels (whose results the model specs compare with the
// float64 reference): products against a float64 loop for every transpose and weight dtype, tensors
// copied and mapped, the fused head against a float64 log-softmax, and calls that would read or write
// past their arrays refused with a RangeError rather than run.
const status = loadEngineAddon();
const describeIfAddon = status.ok ? describe : describe.skip;

function randomArray(n: number, seed: number, scale = 1): Float32Array {
  const rng = new Prng(seed);
  return Float32Array.from({ length: n }, () => rng.normal() * scale);
}

/** C = op(A)·op(B) in float64 for one batch slice; B given as float32 values. */
function reference(ta: boolean, tb: boolean, m: number, n: number, k: number, a: ArrayLike<number>, b: ArrayLike<number>): Float64Array {
  const c = new Float64Array(m * n);
  for (let r = 0; r < m; r++) {
    for (let col = 0; col < n; col++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += a[ta ? p * m + r : r * k + p] * b[tb ? col * k + p : p * n + col];
      c[r * n + col] = s;
    }
  }
  return c;
}

function worstError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  return worst;
}

describe('native addon', () => {
  it('is available where CI installs a compiler', () => {
    if (process.env.CI === 'true') expect(status).toMatchObject({ ok: true });
    if (!status.ok) expect(status.error).toMatch(/not built|cannot|invalid/i);
    else expect(status.kernel).toMatch(/^(avx512|avx2|generic|[\w-]+)$/);
  });
});

describeIfAddon('native gemm', () => {
  let addon: EngineAddon;
  beforeAll(() => (addon = engineAddon()!));

  it.each([
    [false, false, 1, 7, 5, 3, 1, 1],
    [true, false, 2, 6, 9, 4, 1, 1],
    [false, true, 3, 5, 4, 8, 1, 0], // B broadcast over the batch
    [true, true, 4, 3, 6, 5, 0, 1], // A broadcast
    [false, false, 2, 64, 48, 96, 1, 1],
    [false, true, 1, 130, 67, 257, 1, 1], // sizes that are no multiple of any tile
  ])('tA=%s tB=%s batch %d, %d×%d×%d matches a float64 loop', (ta, tb, batch, m, n, k, aBatched, bBatched) => {
    const sa = aBatched ? m * k : 0;
    const sb = bBatched ? k * n : 0;
    const a = randomArray((aBatched ? batch : 1) * m * k, 1);
    const b = randomArray((bBatched ? batch : 1) * k * n, 2);
    const c = new Float32Array(batch * m * n).fill(Number.NaN);
    addon.gemm(ta, tb, batch, m, n, k, a, sa, b, sb, c);
    for (let i = 0; i < batch; i++) {
      const want = reference(ta, tb, m, n, k, a.subarray(i * sa), b.subarray(i * sb));
      expect(worstError(c.subarray(i * m * n, (i + 1) * m * n), want)).toBeLessThan(1e-4 * Math.sqrt(k));
    }
  });

  it.each([
    ['BF16', encodeBfloat16, decodeBfloat16],
    ['F16', encodeFloat16, decodeFloat16],
  ] as const)('multiplies by a %s weight exactly as by its float32 value, both layouts', (dtype, encode, decode) => {
    const [m, n, k] = [9, 37, 70];
    const bits = encode(randomArray(n * k, 3));
    const values = decode(bits);
    const w = addon.tensorCopy(bits, NATIVE_DTYPES[dtype]);
    for (const tb of [true, false]) {
      const a = randomArray(m * (tb ? k : n), 4);
      const [rows, inner, cols] = tb ? [m, k, n] : [m, n, k];
      const c = new Float32Array(rows * cols);
      addon.gemm(false, tb, 1, rows, cols, inner, a, 0, w, 0, c);
      expect(worstError(c, reference(false, tb, rows, cols, inner, a, values))).toBeLessThan(1e-4 * Math.sqrt(inner));
    }
    addon.tensorFree(w);
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

  it('refuses a weight tensor too small for the product, and a freed one', () => {
    const w = addon.tensorCopy(new Float32Array(6), NATIVE_DTYPES.F32);
    expect(() => addon.gemm(false, true, 1, 1, 3, 3, new Float32Array(3), 0, w, 0, new Float32Array(3))).toThrow(/exceed/);
    addon.tensorFree(w);
    expect(() => addon.gemm(false, true, 1, 1, 2, 3, new Float32Array(3), 0, w, 0, new Float32Array(2))).toThrow(/freed/);
  });

  it('refuses arrays that are not Float32Array and handles of the wrong kind', () => {
    expect(() => addon.gemm(false, false, 1, 1, 1, 1, new Float64Array(1) as unknown as Float32Array, 0, new Float32Array(1), 0, new Float32Array(1))).toThrow(/Float32Array/);
    expect(() => addon.gemm(false, false, 1, 1, 1, 1, new Float32Array(1), 0, {} as TensorHandle, 0, new Float32Array(1))).toThrow(/native tensor/);
  });
});

describeIfAddon('native tensors', () => {
  let addon: EngineAddon;
  let dir: string;
  beforeAll(() => {
    addon = engineAddon()!;
    dir = mkdtempSync(join(tmpdir(), 'ot-native-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('copies, reads back (widened) and frees, keeping count of the bytes', () => {
    const before = nativeMemory().allocatedBytes;
    const bits = encodeBfloat16(Float32Array.from([1.5, -2, 3.25, 1e-3]));
    const t = addon.tensorCopy(bits, NATIVE_DTYPES.BF16);
    expect(nativeMemory().allocatedBytes - before).toBe(8);
    const out = new Float32Array(2);
    addon.tensorRead(t, 1, out);
    expect(Array.from(out)).toEqual(Array.from(decodeBfloat16(bits.subarray(1, 3))));
    expect(() => addon.tensorRead(t, 3, out)).toThrow(/outside/);
    addon.tensorFree(t);
    addon.tensorFree(t); // idempotent
    expect(nativeMemory().allocatedBytes).toBe(before);
    expect(() => addon.tensorRead(t, 0, out)).toThrow(/freed/);
  });

  it('maps a file and views tensors inside it without copying', () => {
    const values = Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
    const file = join(dir, 'weights.bin');
    const bytes = new Uint8Array(8 + values.byteLength);
    bytes.set(new Uint8Array(values.buffer), 8);
    writeFileSync(file, bytes);
    const mapping = addon.mapFile(file);
    const before = nativeMemory().allocatedBytes;
    const t = addon.tensorView(mapping, 8 + 4 * 2, NATIVE_DTYPES.F32, 4);
    expect(nativeMemory().allocatedBytes).toBe(before); // a view, not a copy
    const out = new Float32Array(4);
    addon.tensorRead(t, 0, out);
    expect(Array.from(out)).toEqual([3, 4, 5, 6]);
    expect(() => addon.tensorView(mapping, 8, NATIVE_DTYPES.F32, 9)).toThrow(/outside the mapped file/);
    expect(() => addon.tensorView(t as never, 0, 0, 1)).toThrow(/mapping/);
    expect(() => addon.mapFile(join(dir, 'missing.bin'))).toThrow(/cannot map/);
    addon.tensorFree(t);
  });

  it('gathers embedding rows and refuses ids outside the table', () => {
    const table = addon.tensorCopy(Float32Array.from([0, 1, 10, 11, 20, 21]), NATIVE_DTYPES.F32);
    const out = new Float32Array(6);
    addon.gatherRows(table, 2, Int32Array.from([2, 0, 2]), out);
    expect(Array.from(out)).toEqual([20, 21, 0, 1, 20, 21]);
    expect(() => addon.gatherRows(table, 2, Int32Array.from([3]), out)).toThrow(/outside the table/);
    expect(() => addon.gatherRows(table, 2, Int32Array.from([-1]), out)).toThrow(/outside the table/);
    addon.tensorFree(table);
  });
});

/** Float64 log-softmax statistics of one row of logits. */
function rowStats(z: Float64Array, target: number): { logp: number; entropy: number; p: Float64Array; lse: number } {
  const max = Math.max(...z);
  let sum = 0;
  for (const v of z) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  const p = z.map((v) => Math.exp(v - lse));
  let entropy = 0;
  for (let v = 0; v < z.length; v++) entropy -= p[v] * (z[v] - lse);
  return { logp: z[target] - lse, entropy, p, lse };
}

describeIfAddon('fused token scores', () => {
  // 37 rows: more than one block of 32, so block edges are crossed.
  const [n, d, vocab] = [37, 24, 301];
  let addon: EngineAddon;
  const h = randomArray(n * d, 11);
  const wValues = randomArray(vocab * d, 12, 0.3);
  const targets = Int32Array.from({ length: n }, (_, i) => (i * 97) % vocab);
  const logits = () => Float64Array.from(reference(false, true, n, vocab, d, h, wValues));

  beforeAll(() => (addon = engineAddon()!));

  it('gives the float64 log-prob, entropy and log-sum-exp of every row, from a native or an array head', () => {
    const z = logits();
    for (const head of [addon.tensorCopy(wValues, NATIVE_DTYPES.F32), wValues]) {
      const logp = new Float32Array(n);
      const lse = new Float32Array(n);
      const entropy = new Float32Array(n);
      addon.tokenScores(h, n, d, head, vocab, targets, logp, lse, entropy, null);
      for (let i = 0; i < n; i++) {
        const want = rowStats(z.subarray(i * vocab, (i + 1) * vocab), targets[i]);
        expect(Math.abs(logp[i] - want.logp)).toBeLessThan(1e-4);
        expect(Math.abs(entropy[i] - want.entropy)).toBeLessThan(1e-4);
        expect(Math.abs(lse[i] - want.lse)).toBeLessThan(1e-4);
      }
      if (head !== wValues) addon.tensorFree(head as TensorHandle);
    }
  });

  it('back-propagates Σ a·logp + Σ e·H to h and to an array head, skipping rows without coefficients', () => {
    const z = logits();
    const a = Float32Array.from({ length: n }, (_, i) => (i % 5 === 0 ? 0 : Math.sin(i)));
    const e = Float32Array.from({ length: n }, (_, i) => (i % 5 === 0 ? 0 : Math.cos(i) * 0.5));
    const logp = new Float32Array(n);
    const lse = new Float32Array(n);
    const entropy = new Float32Array(n);
    addon.tokenScores(h, n, d, wValues, vocab, targets, logp, lse, entropy, null);
    const dh = new Float32Array(n * d).fill(Number.NaN);
    const dw = new Float32Array(vocab * d);
    addon.tokenScoresGrad(h, n, d, wValues, vocab, targets, lse, entropy, a, e, dh, dw);
    // dL/dz_v = a(δ_vt − p_v) − e·p_v(log p_v + H); dh = dz·W; dW = dzᵀ·h.
    const wantDh = new Float64Array(n * d);
    const wantDw = new Float64Array(vocab * d);
    for (let i = 0; i < n; i++) {
      const s = rowStats(z.subarray(i * vocab, (i + 1) * vocab), targets[i]);
      for (let v = 0; v < vocab; v++) {
        const dz = a[i] * ((v === targets[i] ? 1 : 0) - s.p[v]) - e[i] * s.p[v] * (z[i * vocab + v] - s.lse + s.entropy);
        for (let j = 0; j < d; j++) {
          wantDh[i * d + j] += dz * wValues[v * d + j];
          wantDw[v * d + j] += dz * h[i * d + j];
        }
      }
    }
    expect(worstError(dh, wantDh)).toBeLessThan(1e-4);
    expect(worstError(dw, wantDw)).toBeLessThan(1e-4);
    expect(dh.subarray(0, d).every((x) => x === 0)).toBe(true); // row 0 has no coefficient
  });

  it('gives E_p[W] in the forward pass (over several vocabulary tiles), and from it the log-prob gradient', () => {
    // 9,000 columns: three tiles of 4,096, so the running max rescales the sums.
    const [m, dd, big] = [5, 16, 9000];
    const hb = randomArray(m * dd, 21, 2);
    const wb = randomArray(big * dd, 22, 0.5);
    const tb = Int32Array.from({ length: m }, (_, i) => (i * 1777) % big);
    const zb = Float64Array.from(reference(false, true, m, big, dd, hb, wb));
    const head = addon.tensorCopy(wb, NATIVE_DTYPES.F32);
    const out = () => new Float32Array(m);
    const ew = new Float32Array(m * dd);
    addon.tokenScores(hb, m, dd, head, big, tb, out(), out(), null, ew);
    const a = Float32Array.from({ length: m }, (_, i) => i - 1.5);
    const dh = new Float32Array(m * dd);
    addon.tokenScoresGradEw(m, dd, head, big, tb, a, ew, dh);
    const wantEw = new Float64Array(m * dd);
    const wantDh = new Float64Array(m * dd);
    for (let i = 0; i < m; i++) {
      const s = rowStats(zb.subarray(i * big, (i + 1) * big), tb[i]);
      for (let v = 0; v < big; v++) for (let j = 0; j < dd; j++) wantEw[i * dd + j] += s.p[v] * wb[v * dd + j];
      for (let j = 0; j < dd; j++) wantDh[i * dd + j] = a[i] * (wb[tb[i] * dd + j] - wantEw[i * dd + j]);
    }
    expect(worstError(ew, wantEw)).toBeLessThan(1e-5);
    expect(worstError(dh, wantDh)).toBeLessThan(1e-5);
    addon.tensorFree(head);
  });

  it('refuses targets outside the vocabulary and short outputs', () => {
    const out = new Float32Array(n);
    const bad = Int32Array.from(targets);
    bad[3] = vocab;
    expect(() => addon.tokenScores(h, n, d, wValues, vocab, bad, out, out, null, null)).toThrow(/outside the vocabulary/);
    expect(() => addon.tokenScores(h, n, d, wValues, vocab, targets, new Float32Array(n - 1), out, null, null)).toThrow(/too short/);
    expect(() => addon.tokenScores(h, n, d, wValues.subarray(1), vocab, targets, out, out, null, null)).toThrow(/exceed/);
  });
});
