/**
 * The shape of a normalised answer: a single expression, a tuple or interval, a set (or a bare list of
 * solutions), a union of intervals, a matrix, or a general equation / inequality. Built from the
 * normalised string by splitting at top-level delimiters; never throws.
 */

export type Value =
  /** One expression (or text), with whether it carried a percent sign. */
  | { kind: 'expr'; text: string; percent: boolean; assigned?: string }
  /** Tuples and intervals: `(1, 2)`, `[0, \infty)`, `\langle 1, 2 \rangle`; brackets must match. */
  | { kind: 'seq'; open: string; close: string; items: Value[] }
  /** `\{1, 2\}` and bare lists `1, 2`: order-insensitive. */
  | { kind: 'set'; items: Value[] }
  /** `(-\infty, 0) \cup (1, \infty)`: order-insensitive. */
  | { kind: 'union'; items: Value[] }
  | { kind: 'matrix'; rows: Value[][] }
  /** An equation or inequality that is not a plain `x = …` assignment. */
  | { kind: 'relation'; op: Relation; lhs: string; rhs: string };

export type Relation = '=' | '<' | '\\le' | '\\ne';

const OPENERS = new Set(['(', '[', '{']);
const CLOSERS = new Set([')', ']', '}']);
const MAX_DEPTH = 20;

/** A name that can stand on the left of `x = 3`: `x`, `y_1`, `\theta`, `f(x)`, `a_{n}`. */
const SIMPLE_LHS = /^(?:(?:[A-Za-z]|\\[A-Za-z]+)(?:_(?:\{[^{}]*\}|[A-Za-z0-9]))?(?:\s*\([^()]*\))?|(?:m?\\angle\s*)?[A-Z]{2,3})$/;
/** A bare variable (for inequalities → intervals). */
const VARIABLE = /^(?:[A-Za-z]|\\[A-Za-z]+)(?:_(?:\{[^{}]*\}|[A-Za-z0-9]))?$/;

/**
 * Parses a normalised answer into its shape.
 *
 * @example
 * ```ts
 * parseValue('[0, \\infty)', false); // { kind: 'seq', open: '[', close: ')', items: [0, \infty] }
 * parseValue('x = 3', false);        // { kind: 'expr', text: '3', percent: false }
 * ```
 */
export function parseValue(text: string, percent = false, depth = 0): Value {
  const s = text.trim();
  const expr: Value = { kind: 'expr', text: s, percent };
  if (depth > MAX_DEPTH || s === '') return expr;

  const matrix = /^\\begin\{([pbBvV]?matrix|array|smallmatrix)\}(?:\{[^{}]*\})?([\s\S]*)\\end\{\1\}$/.exec(s);
  if (matrix) {
    const rows = matrix[2]
      .split(/\\\\/)
      .map((r) => r.trim())
      .filter((r) => r !== '')
      .map((r) => r.split('&').map((cell) => parseValue(cell, false, depth + 1)));
    if (rows.length > 0) return { kind: 'matrix', rows };
  }

  const member = /^(?:[A-Za-z]|\\[A-Za-z]+)(?:_(?:\{[^{}]*\}|[A-Za-z0-9]))?\s*\\in(?![A-Za-z])\s*([\s\S]+)$/.exec(s);
  if (member) return parseValue(member[1], percent, depth + 1);

  if (/^\\(?:emptyset|varnothing)$/.test(s) || /^\\\{\s*\\\}$/.test(s)) return { kind: 'set', items: [] };

  const unionParts = splitTopLevel(s, /^\\cup(?![A-Za-z])/);
  if (unionParts.length > 1) return { kind: 'union', items: unionParts.map((p) => parseValue(p, percent, depth + 1)) };

  if (s.startsWith('\\{') && s.endsWith('\\}') && closingIndex(s, 0) === s.length - 2) {
    const inner = s.slice(2, -2);
    return { kind: 'set', items: splitList(inner).map((p) => parseValue(p, percent, depth + 1)) };
  }

  const parts = splitList(s);
  if (parts.length > 1) return listValue(parts, percent, depth);

  const pm = splitTopLevel(s, /^\\(?:pm|mp)(?![A-Za-z])/);
  if (pm.length === 2) {
    const [a, b] = pm.map((p) => p.trim());
    const plus = a === '' ? b : `${a}+(${b})`;
    const minus = a === '' ? `-(${b})` : `${a}-(${b})`;
    return { kind: 'set', items: [parseValue(plus, percent, depth + 1), parseValue(minus, percent, depth + 1)] };
  }

  const bracket = outerBrackets(s);
  if (bracket) {
    const items = splitList(bracket.inner);
    if (items.length > 1) return { kind: 'seq', open: bracket.open, close: bracket.close, items: items.map((p) => parseValue(p, percent, depth + 1)) };
    if ((bracket.open === '(' && bracket.close === ')') || (bracket.open === '[' && bracket.close === ']')) {
      return parseValue(bracket.inner, percent, depth + 1);
    }
  }

  const relation = parseRelation(s, percent, depth);
  if (relation) return relation;
  return expr;
}

/** A top-level comma list: assignments `x = 1, y = 2` become a tuple ordered by variable name; others a set. */
function listValue(parts: string[], percent: boolean, depth: number): Value {
  const assignments = parts.map((p) => {
    const eq = splitTopLevel(p, /^=/);
    return eq.length === 2 && SIMPLE_LHS.test(eq[0].trim()) ? { name: eq[0].trim(), value: eq[1].trim() } : null;
  });
  if (assignments.every((a) => a !== null)) {
    const names = new Set(assignments.map((a) => a!.name));
    if (names.size === assignments.length) {
      const sorted = [...assignments].sort((a, b) => (a!.name < b!.name ? -1 : a!.name > b!.name ? 1 : 0));
      return { kind: 'seq', open: '(', close: ')', items: sorted.map((a) => parseValue(a!.value, percent, depth + 1)) };
    }
  }
  return { kind: 'set', items: parts.map((p) => parseValue(p, percent, depth + 1)) };
}

/**
 * `x = 3` → `3` (a plain assignment); `x > 3` / `x \le 2` / `1 < x \le 2` → intervals; anything else
 * with a top-level relation → a `relation` (compared as equations up to a constant factor).
 */
function parseRelation(s: string, percent: boolean, depth: number): Value | null {
  const tokens = splitRelations(s);
  if (tokens.length === 1) return null;
  const sides = tokens.filter((_, i) => i % 2 === 0).map((t) => t.trim());
  const ops = tokens.filter((_, i) => i % 2 === 1);
  if (sides.some((x) => x === '')) return null;
  if (ops.length === 1 && ops[0] === '=') {
    if (SIMPLE_LHS.test(sides[0])) {
      const value = parseValue(sides[1], percent, depth + 1);
      return value.kind === 'expr' && VARIABLE.test(sides[0]) ? { ...value, assigned: sides[0] } : value;
    }
    return { kind: 'relation', op: '=', lhs: sides[0], rhs: sides[1] };
  }
  const INF = '\\infty';
  const strict = (op: string) => op === '<' || op === '>';
  const lower = (op: string) => op === '>' || op === '\\ge';
  if (ops.length === 1 && ops[0] !== '\\ne') {
    const [a, b] = sides;
    const op = ops[0];
    if (VARIABLE.test(a) && !VARIABLE.test(b)) {
      // x > 3 → (3, ∞); x ≤ 2 → (-∞, 2]
      return lower(op) ? interval(strict(op) ? '(' : '[', b, INF, ')', percent, depth) : interval('(', `-${INF}`, b, strict(op) ? ')' : ']', percent, depth);
    }
    if (VARIABLE.test(b) && !VARIABLE.test(a)) {
      return lower(op) ? interval('(', `-${INF}`, a, strict(op) ? ')' : ']', percent, depth) : interval(strict(op) ? '(' : '[', a, INF, ')', percent, depth);
    }
  }
  if (ops.length === 2 && VARIABLE.test(sides[1]) && ops.every((o) => o === '<' || o === '\\le')) {
    return interval(ops[0] === '<' ? '(' : '[', sides[0], sides[2], ops[1] === '<' ? ')' : ']', percent, depth);
  }
  if (ops.length === 2 && VARIABLE.test(sides[1]) && ops.every((o) => o === '>' || o === '\\ge')) {
    return interval(ops[1] === '>' ? '(' : '[', sides[2], sides[0], ops[0] === '>' ? ')' : ']', percent, depth);
  }
  if (ops.length === 1) {
    const op = ops[0];
    // a ≥ b is b ≤ a.
    if (op === '>' || op === '\\ge') return { kind: 'relation', op: op === '>' ? '<' : '\\le', lhs: sides[1], rhs: sides[0] };
    return { kind: 'relation', op: op as Relation, lhs: sides[0], rhs: sides[1] };
  }
  return null;
}

function interval(open: string, a: string, b: string, close: string, percent: boolean, depth: number): Value {
  return { kind: 'seq', open, close, items: [parseValue(a, percent, depth + 1), parseValue(b, percent, depth + 1)] };
}

/** Splits at top-level relation operators, keeping them: `['1', '<', 'x', '\\le', '2']`. */
function splitRelations(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') {
      const m = /^\\([A-Za-z]+|.)/.exec(s.slice(i, i + 30));
      const name = m ? m[1] : '';
      if (depth === 0 && (name === 'le' || name === 'ge' || name === 'ne' || name === 'lt' || name === 'gt')) {
        out.push(s.slice(start, i), name === 'lt' ? '<' : name === 'gt' ? '>' : `\\${name}`);
        start = i + name.length + 1;
      }
      if (name === '{' || name === 'langle') depth++;
      else if (name === '}' || name === 'rangle') depth--;
      i += Math.max(name.length, 1);
      continue;
    }
    if (OPENERS.has(c)) depth++;
    else if (CLOSERS.has(c)) depth--;
    else if (depth === 0 && (c === '=' || c === '<' || c === '>')) {
      out.push(s.slice(start, i));
      if (s[i + 1] === '=' && c !== '=') {
        out.push(c === '<' ? '\\le' : '\\ge');
        i++;
      } else out.push(c);
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out;
}

/** Splits a list at top-level commas (and semicolons). */
export function splitList(s: string): string[] {
  const raw = splitTopLevel(s, /^[,;]/);
  if (raw.length < 2) return [s];
  // `1,000, 2,000`: where other commas are followed by a space, a comma followed directly by exactly
  // three digits continues a number. (`(1,100)` stays an interval.)
  const spaced = raw.slice(1).some((p) => /^\s/.test(p));
  const parts: string[] = [];
  for (const part of raw) {
    const prev = parts[parts.length - 1];
    if (spaced && prev !== undefined && /^\d{3}(?![\d.])/.test(part) && /(?:^|[^\d.])-?[1-9]\d{0,2}$/.test(prev.trim())) {
      parts[parts.length - 1] = prev + part;
    } else parts.push(part);
  }
  return parts.length > 1 ? parts.map((p) => p.trim()) : [s];
}

/**
 * Splits at top-level matches of `sep` (anchored at the current position). Brackets of any kind count
 * as nesting, unmatched (`[0, 1)`) included; `\{ \}` and `\langle \rangle` too.
 */
export function splitTopLevel(s: string, sep: RegExp): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (depth === 0) {
      const m = sep.exec(s.slice(i, i + 12));
      if (m) {
        out.push(s.slice(start, i));
        i += m[0].length - 1;
        start = i + 1;
        continue;
      }
    }
    if (c === '\\') {
      const m = /^\\([A-Za-z]+|.)/.exec(s.slice(i, i + 30));
      const name = m ? m[1] : '';
      if (name === '{' || name === 'langle') depth++;
      else if (name === '}' || name === 'rangle') depth--;
      i += Math.max(name.length, 1);
      continue;
    }
    if (OPENERS.has(c)) depth++;
    else if (CLOSERS.has(c)) depth--;
  }
  out.push(s.slice(start));
  return out;
}

/** Index where the bracket opened at `open` closes (any bracket kind), or -1. */
function closingIndex(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') {
      const m = /^\\([A-Za-z]+|.)/.exec(s.slice(i, i + 30));
      const name = m ? m[1] : '';
      if (name === '{' || name === 'langle') depth++;
      else if (name === '}' || name === 'rangle') {
        depth--;
        if (depth === 0) return i;
      }
      i += Math.max(name.length, 1);
      continue;
    }
    if (OPENERS.has(c)) depth++;
    else if (CLOSERS.has(c)) {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

/** `(…)`, `[…)`, `\langle … \rangle` enclosing the whole string. */
function outerBrackets(s: string): { open: string; close: string; inner: string } | null {
  if (s.startsWith('\\langle')) {
    const end = closingIndex(s, 0);
    if (end >= 0 && s.slice(end) === '\\rangle') return { open: '<', close: '>', inner: s.slice(7, end) };
    return null;
  }
  if (s[0] !== '(' && s[0] !== '[') return null;
  const end = closingIndex(s, 0);
  if (end !== s.length - 1 || (s[end] !== ')' && s[end] !== ']')) return null;
  return { open: s[0], close: s[end], inner: s.slice(1, end) };
}
