/**
 * Test helpers (not part of the build): golden-file loading and tolerance checks that also record the
 * largest deviation seen per file (printed when RL_REPORT_ERRORS=1).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

export function loadGolden<T = any>(name: string): T {
  const raw = JSON.parse(readFileSync(join(here, '..', '__golden__', name), 'utf8'));
  return raw.cases as T;
}

/** Turns a JSON list (null = NaN) into a Float64Array. */
export function f64(xs: ReadonlyArray<number | null>): Float64Array {
  return Float64Array.from(xs, (x) => (x === null ? NaN : x));
}

export function f32(xs: ReadonlyArray<number | null>): Float32Array {
  return Float32Array.from(xs, (x) => (x === null ? NaN : x));
}

export interface Tol {
  rtol: number;
  atol: number;
}

export const F64: Tol = { rtol: 1e-6, atol: 1e-9 };
/** Gradients from the reference are central finite differences (noise ~1e-10). */
export const F64_GRAD: Tol = { rtol: 1e-6, atol: 1e-8 };
export const F32: Tol = { rtol: 1e-4, atol: 1e-5 };

interface Worst {
  abs: number;
  rel: number;
  where: string;
}
const worst = new Map<string, Worst>();

/**
 * Asserts |a - e| <= atol + rtol·|e| element-wise and records the worst absolute and relative error
 * (relative over |e| > 1e-6) under `bucket`.
 */
export function expectClose(actual: ArrayLike<number> | number, expected: ArrayLike<number> | number, tol: Tol, label: string, bucket = 'misc'): void {
  const a = typeof actual === 'number' ? [actual] : actual;
  const e = typeof expected === 'number' ? [expected] : expected;
  if (a.length !== e.length) throw new Error(`${label}: length ${a.length} vs expected ${e.length}`);
  const w = worst.get(bucket) ?? { abs: 0, rel: 0, where: '' };
  for (let k = 0; k < e.length; k++) {
    const x = a[k];
    const y = e[k];
    const err = Math.abs(x - y);
    if (!(err <= tol.atol + tol.rtol * Math.abs(y))) {
      throw new Error(`${label}[${k}]: got ${x}, expected ${y} (|err| ${err}, tol ${tol.atol} + ${tol.rtol}·|e|)`);
    }
    if (err > w.abs) w.abs = err;
    if (Math.abs(y) > 1e-6 && err / Math.abs(y) > w.rel) {
      w.rel = err / Math.abs(y);
      w.where = `${label}[${k}]`;
    }
  }
  worst.set(bucket, w);
}

/** Prints the worst errors recorded in this test file (call from afterAll). */
export function reportWorst(): void {
  if (!process.env.RL_REPORT_ERRORS) return;
  const lines = [...worst.entries()].map(([b, w]) => `${b}: max |err| ${w.abs.toExponential(2)}, max rel ${w.rel.toExponential(2)} at ${w.where}`);
  process.stdout.write(`\n[rl golden errors]\n${lines.join('\n')}\n`);
}

/** Central finite difference of a scalar function with respect to every entry of x. */
export function finiteDiff(f: (x: Float64Array) => number, x0: ArrayLike<number>, h = 1e-6): Float64Array {
  const x = Float64Array.from(x0);
  const g = new Float64Array(x.length);
  for (let k = 0; k < x.length; k++) {
    const orig = x[k];
    x[k] = orig + h;
    const fp = f(x);
    x[k] = orig - h;
    const fm = f(x);
    x[k] = orig;
    g[k] = (fp - fm) / (2 * h);
  }
  return g;
}
