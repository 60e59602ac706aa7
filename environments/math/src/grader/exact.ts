/**
 * Exact rational evaluation of constant expressions (integers, fractions, `+ - * /`, integer powers,
 * `n!`, `\binom`), so `2^{100}` and `1267650600228229401496703205377` differ and `2^{2005}` does not
 * overflow. Anything else (roots, `\pi`, variables, huge results) is not exact: `null`.
 */
import type { Expr } from './expression';

/** A reduced fraction n/d with d > 0; `decimal` when a decimal literal (`0.5`, `1e-3`) took part. */
export interface Rational {
  n: bigint;
  d: bigint;
  decimal: boolean;
}

/** Results larger than this many bits are not computed exactly. */
const MAX_BITS = 20_000;

/** The exact value of a constant expression, or null. Never throws. */
export function evaluateExact(e: Expr): Rational | null {
  try {
    return exact(e);
  } catch {
    return null;
  }
}

function exact(e: Expr): Rational | null {
  switch (e.t) {
    case 'num':
      return fromLiteral(e.raw);
    case 'neg': {
      const a = exact(e.a);
      return a && { n: -a.n, d: a.d, decimal: a.decimal };
    }
    case 'bin': {
      const a = exact(e.a);
      if (!a) return null;
      const b = exact(e.b);
      if (!b) return null;
      const decimal = a.decimal || b.decimal;
      switch (e.op) {
        case '+':
          return make(a.n * b.d + b.n * a.d, a.d * b.d, decimal);
        case '-':
          return make(a.n * b.d - b.n * a.d, a.d * b.d, decimal);
        case '*':
          return make(a.n * b.n, a.d * b.d, decimal);
        case '/':
          return b.n === 0n ? null : make(a.n * b.d, a.d * b.n, decimal);
        case '^': {
          if (b.d !== 1n) return null;
          const k = b.n < 0n ? -b.n : b.n;
          if (k > 100_000n) return null;
          if (a.n === 0n) return b.n < 0n ? null : b.n === 0n ? make(1n, 1n, decimal) : make(0n, 1n, decimal);
          const bits = (bitLength(a.n) + bitLength(a.d)) * Number(k);
          if (bits > MAX_BITS) return null;
          const n = a.n ** k;
          const d = a.d ** k;
          return b.n < 0n ? make(d, n, decimal) : make(n, d, decimal);
        }
      }
      return null;
    }
    case 'fact': {
      const a = exact(e.a);
      if (!a || a.d !== 1n || a.n < 0n || a.n > 2000n) return null;
      let r = 1n;
      for (let k = 2n; k <= a.n; k++) r *= k;
      return make(r, 1n, a.decimal);
    }
    case 'binom': {
      const a = exact(e.a);
      const b = exact(e.b);
      if (!a || !b || a.d !== 1n || b.d !== 1n || a.n < 0n || a.n > 100_000n) return null;
      if (b.n < 0n || b.n > a.n) return make(0n, 1n, false);
      const k = b.n < a.n - b.n ? b.n : a.n - b.n;
      let r = 1n;
      for (let j = 1n; j <= k; j++) r = (r * (a.n - k + j)) / j;
      return make(r, 1n, a.decimal || b.decimal);
    }
    default:
      return null;
  }
}

/** `12`, `0.25`, `1.5e3`, `.5` → exact fractions. */
function fromLiteral(raw: string): Rational | null {
  const m = /^(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(raw);
  if (!m) return null;
  const int = m[1] || '0';
  const frac = m[2] ?? '';
  const exp = m[3] ? Number(m[3]) : 0;
  if (Math.abs(exp) > 1000) return null;
  let n = BigInt(int + frac);
  let d = 10n ** BigInt(frac.length);
  if (exp > 0) n *= 10n ** BigInt(exp);
  else if (exp < 0) d *= 10n ** BigInt(-exp);
  return make(n, d, m[2] !== undefined || m[3] !== undefined);
}

function make(n: bigint, d: bigint, decimal: boolean): Rational {
  if (d < 0n) {
    n = -n;
    d = -d;
  }
  const g = gcd(n < 0n ? -n : n, d);
  return { n: n / g, d: d / g, decimal };
}

function gcd(a: bigint, b: bigint): bigint {
  while (b) [a, b] = [b, a % b];
  return a === 0n ? 1n : a;
}

function bitLength(x: bigint): number {
  return (x < 0n ? -x : x).toString(16).length * 4;
}
