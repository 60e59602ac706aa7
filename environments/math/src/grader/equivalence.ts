/**
 * Deciding whether two final answers are the same, like a careful human grader would. See
 * {@link isEquivalent} for the rules.
 */
import { createRng } from '@opentinker/env-sdk';
import { evaluateExact } from './exact';
import { evaluate, parseExpression, variables } from './expression';
import type { Expr } from './expression';
import { normalizeAnswer, MAX_ANSWER_LENGTH } from './normalize';
import { parseValue } from './value';
import { isWords, trimLatex } from './text';
import type { Value } from './value';

/** Knobs of the equivalence check. */
export interface EquivalenceOptions {
  /**
   * Read `2 1/2` and `2\frac{1}{2}` as the mixed number 2.5. Off by default: then `2\frac{1}{2}` is
   * the product 2 · ½ = 1, as LaTeX math reads it.
   */
  mixedNumbers?: boolean;
  /** Relative tolerance for numbers. Default 1e-6 (so `0.333333` equals `\frac13`, `0.33` does not). */
  tolerance?: number;
}

const DEFAULT_TOLERANCE = 1e-6;
/** Sample points for expressions with variables, and how many must be defined on both sides. */
const SAMPLES = 10;
const MIN_DEFINED = 3;

/**
 * Whether two answers are equivalent. Never throws; anything it cannot decide is `false`.
 *
 * Rules, in order:
 * - both are normalised ({@link normalizeAnswer}): math delimiters, `\left`/`\right`, LaTeX spacing
 *   (`\!`, `\,`, `\ `), `\dfrac`/`\tfrac` → `\frac`, known units (`units.ts`) in `\text{}`, `\mbox{}` or
 *   as words, `\$`, degrees (`^\circ`), thousands separators (`1,000`, `1{,}000`, `10\!000`; not
 *   `10\,000` or `10 000`); other words stay, and non-ASCII symbols are not read;
 * - shapes must agree: tuples and intervals compare element-wise with the same brackets (`(1,2)` is not
 *   `[1,2)`), sets (`\{1,2\}`) and bare lists (`1, 2`) regardless of order, unions of intervals
 *   regardless of order, matrices element-wise; `x = 3` is `3`; `x > 3` is `(3, \infty)`;
 *   `a \pm b` is the set `{a+b, a-b}`; a one-element set equals its element;
 * - expressions compare numerically: constants within a relative 1e-6 (`0.5` = `\frac12` = `1/2`,
 *   `\sqrt{2}/2` = `\frac{\sqrt2}{2}`, `1.5\times10^{3}` = `1500`), integers exactly; expressions with
 *   variables at 10 seeded random points (`2x+1` = `1+2x`), at least 3 of them defined on both sides;
 * - percent: a percent sign is optional (`50\%` = `50`), and a percentage also equals its fraction
 *   when only one side has the sign (`50\%` = `0.5`);
 * - equations that are not plain assignments are equal when one is a non-zero constant multiple of the
 *   other (`x^2 + y^2 = 1` = `2x^2 + 2y^2 = 2`); inequalities likewise, with a positive constant;
 * - text answers compare case-insensitively (`\text{Monday}` = `monday`, `\text{(C)}` = `C`);
 * - mixed numbers (`2\frac12`) are products unless `options.mixedNumbers` is set.
 *
 * @example
 * ```ts
 * isEquivalent('\\dfrac{1}{2}', '0.5');        // true
 * isEquivalent('1,000', '1000');               // true
 * isEquivalent('(1, 2]', '(1, 2)');            // false
 * isEquivalent('\\{2, 1\\}', '1, 2');          // true
 * ```
 */
export function isEquivalent(a: string, b: string, options: EquivalenceOptions = {}): boolean {
  try {
    if (typeof a !== 'string' || typeof b !== 'string') return false;
    const ta = trimLatex(a);
    const tb = trimLatex(b);
    if (ta === '' || tb === '') return false;
    if (ta === tb) return true;
    if (ta.length > MAX_ANSWER_LENGTH || tb.length > MAX_ANSWER_LENGTH) return false;
    const na = normalizeAnswer(ta);
    const nb = normalizeAnswer(tb);
    if (na.text === '' || nb.text === '') return false;
    if (na.text === nb.text) return true;
    return new Comparer(options).values(parseValue(na.text, na.percent), parseValue(nb.text, nb.percent));
  } catch {
    return false;
  }
}

class Comparer {
  private readonly tolerance: number;
  private readonly cache = new Map<string, Expr | null>();
  constructor(private readonly options: EquivalenceOptions) {
    this.tolerance = options.tolerance ?? DEFAULT_TOLERANCE;
  }

  values(a: Value, b: Value): boolean {
    // `y = 2x + 1` (read as its right side) against `2x - y + 1 = 0`: compare as equations.
    if (a.kind === 'relation' && b.kind === 'expr' && b.assigned) return this.values(a, { kind: 'relation', op: '=', lhs: b.assigned, rhs: b.text });
    if (b.kind === 'relation' && a.kind === 'expr' && a.assigned) return this.values({ kind: 'relation', op: '=', lhs: a.assigned, rhs: a.text }, b);
    if (a.kind === 'set' && b.kind !== 'set' && a.items.length === 1) return this.values(a.items[0], b);
    if (b.kind === 'set' && a.kind !== 'set' && b.items.length === 1) return this.values(a, b.items[0]);
    switch (a.kind) {
      case 'expr':
        return b.kind === 'expr' && this.scalars(a.text, a.percent, b.text, b.percent);
      case 'seq':
        return b.kind === 'seq' && a.open === b.open && a.close === b.close && a.items.length === b.items.length && a.items.every((x, i) => this.values(x, b.items[i]));
      case 'set':
        return b.kind === 'set' && this.unordered(a.items, b.items);
      case 'union':
        return b.kind === 'union' && this.unordered(a.items, b.items);
      case 'matrix':
        return (
          b.kind === 'matrix' && a.rows.length === b.rows.length && a.rows.every((row, i) => row.length === b.rows[i].length && row.every((x, j) => this.values(x, b.rows[i][j])))
        );
      case 'relation':
        return b.kind === 'relation' && this.relations(a, b);
    }
  }

  /** Multiset equality with a greedy matching (equivalence is an equivalence relation here). */
  private unordered(a: Value[], b: Value[]): boolean {
    if (a.length !== b.length) return false;
    const used = new Array<boolean>(b.length).fill(false);
    for (const x of a) {
      const j = b.findIndex((y, k) => !used[k] && this.values(x, y));
      if (j < 0) return false;
      used[j] = true;
    }
    return true;
  }

  private relations(a: Extract<Value, { kind: 'relation' }>, b: Extract<Value, { kind: 'relation' }>): boolean {
    if (a.op !== b.op) return false;
    const ea = this.parse(`(${a.lhs})-(${a.rhs})`);
    const eb = this.parse(`(${b.lhs})-(${b.rhs})`);
    if (!ea || !eb) return compact(a.lhs) === compact(b.lhs) && compact(a.rhs) === compact(b.rhs);
    // Equations: proportional with any non-zero factor; inequalities: a positive one.
    return this.proportional(ea, eb, a.op === '=' || a.op === '\\ne');
  }

  private scalars(ta: string, pa: boolean, tb: string, pb: boolean): boolean {
    if (this.scalarEqual(ta, tb)) return true;
    if (pa !== pb) {
      // 50% = 0.5: divide the side with the percent sign by 100.
      return pa ? this.scalarEqual(`(${ta})/100`, tb) : this.scalarEqual(ta, `(${tb})/100`);
    }
    return false;
  }

  private scalarEqual(ta: string, tb: string): boolean {
    if (ta === tb) return true;
    const ca = compact(ta);
    const cb = compact(tb);
    if (ca === cb) return true;
    // Words are text, not products of variables (`listen` is not `silent`).
    if (isWords(ca) || isWords(cb)) return isWords(ca) && isWords(cb) && ca.toLowerCase().replace(/[^a-z]/g, '') === cb.toLowerCase().replace(/[^a-z]/g, '');
    if (/^-?\d+$/.test(ca) && /^-?\d+$/.test(cb)) return BigInt(ca) === BigInt(cb);
    const ea = this.parse(ta);
    const eb = this.parse(tb);
    if (!ea || !eb) return false;
    return this.expressions(ea, eb);
  }

  private parse(text: string): Expr | null {
    const cached = this.cache.get(text);
    if (cached !== undefined) return cached;
    let out: Expr | null = null;
    try {
      const mixed = this.options.mixedNumbers ? /^(-?)(\d+)\s*(?:\\frac\{(\d+)\}\{(\d+)\}|\\frac(\d)(\d)|(\d+)\/(\d+))$/.exec(text.trim()) : null;
      if (mixed) {
        const whole = Number(mixed[2]);
        const num = Number(mixed[3] ?? mixed[5] ?? mixed[7]);
        const den = Number(mixed[4] ?? mixed[6] ?? mixed[8]);
        const v = (whole + num / den) * (mixed[1] ? -1 : 1);
        out = { t: 'num', v, raw: String(v) };
      } else out = parseExpression(text);
    } catch {
      out = null;
    }
    this.cache.set(text, out);
    return out;
  }

  private expressions(a: Expr, b: Expr): boolean {
    const names = [...new Set([...variables(a), ...variables(b)])].sort();
    if (names.length === 0) {
      // Integers and fractions compare exactly; decimals, roots and π within the tolerance.
      const ra = evaluateExact(a);
      const rb = evaluateExact(b);
      if (ra && rb && !ra.decimal && !rb.decimal) return ra.n === rb.n && ra.d === rb.d;
      const va = evaluate(a);
      const vb = evaluate(b);
      // Overflow (2^{5000}) decides nothing; only a written infinity equals infinity.
      if (!Number.isFinite(va) || !Number.isFinite(vb)) return va === vb && !Number.isNaN(va) && mentionsInfinity(a) && mentionsInfinity(b);
      return this.close(va, vb);
    }
    let defined = 0;
    for (const point of samplePoints(names)) {
      const va = evaluate(a, point);
      const vb = evaluate(b, point);
      if (!Number.isFinite(va) || !Number.isFinite(vb)) continue;
      if (!this.close(va, vb)) return false;
      defined++;
    }
    return defined >= MIN_DEFINED;
  }

  /** a = k·b for one constant k (non-zero; positive unless `anySign`) at every sample point. */
  private proportional(a: Expr, b: Expr, anySign: boolean): boolean {
    const names = [...new Set([...variables(a), ...variables(b)])].sort();
    let ratio: number | null = null;
    let defined = 0;
    for (const point of samplePoints(names)) {
      const va = evaluate(a, point);
      const vb = evaluate(b, point);
      if (!Number.isFinite(va) || !Number.isFinite(vb)) continue;
      if (Math.abs(vb) < 1e-12 || Math.abs(va) < 1e-12) {
        if (this.close(va, vb)) {
          defined++;
          continue;
        }
        return false;
      }
      const r = va / vb;
      if (ratio === null) ratio = r;
      else if (!this.close(r, ratio)) return false;
      defined++;
    }
    if (ratio === null) return names.length === 0 ? false : defined >= MIN_DEFINED;
    if (!anySign && ratio <= 0) return false;
    return defined >= (names.length === 0 ? 1 : MIN_DEFINED);
  }

  private close(a: number, b: number): boolean {
    if (a === b) return true;
    if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
    const diff = Math.abs(a - b);
    return diff <= 1e-12 || diff <= this.tolerance * Math.max(Math.abs(a), Math.abs(b));
  }
}

let pointCache: { names: string; points: Map<string, number>[] } | null = null;

/** Seeded sample points: the same for every call, so grading is deterministic. */
function samplePoints(names: string[]): Map<string, number>[] {
  const key = names.join('\u0000');
  if (pointCache?.names === key) return pointCache.points;
  const points: Map<string, number>[] = [];
  for (let k = 0; k < SAMPLES; k++) {
    const point = new Map<string, number>();
    names.forEach((name, j) => {
      const rng = createRng(1_000_003 * (k + 1) + 7919 * (j + 1));
      const magnitude = 0.3 + 2.7 * rng.next();
      // Most points positive (roots, logs), a few negative (odd functions, |x|).
      point.set(name, k % 3 === 2 ? -magnitude : magnitude);
    });
    points.push(point);
  }
  pointCache = { names: key, points };
  return points;
}

/** Removes spaces and redundant braces for a literal comparison; digits on either side of a space stay apart (`10 000` is not `10000`). */
function compact(s: string): string {
  return s
    .replace(/(\d)\s+(?=\d)/g, '$1\u0001')
    .replace(/\s+/g, '')
    .replace(/\u0001/g, ' ')
    .replace(/([_^])\{([A-Za-z0-9])\}/g, '$1$2')
    .replace(/^\{([^{}]*)\}$/, '$1');
}

function mentionsInfinity(e: Expr): boolean {
  switch (e.t) {
    case 'const':
      return e.name === 'inf';
    case 'neg':
    case 'fact':
      return mentionsInfinity(e.a);
    case 'fn':
      return mentionsInfinity(e.a) || (e.base !== undefined && mentionsInfinity(e.base));
    case 'bin':
    case 'binom':
      return mentionsInfinity(e.a) || mentionsInfinity(e.b);
    default:
      return false;
  }
}
