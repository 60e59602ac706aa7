/**
 * A small, safe parser and evaluator for the math in final answers (LaTeX or plain text): numbers
 * (also `1.5e3`), `+ - * /`, `\cdot \times \div`, implicit products (`2x`, `2\sqrt{3}`, `(a)(b)`),
 * powers (`x^2`, `x^{n+1}`, `2^-1`), `\frac{a}{b}` (also `\frac12`), `\sqrt{x}`, `\sqrt[3]{x}`,
 * `|x|`, `n!`, `\binom{n}{k}`, `\pi`, `e`, `\infty`, variables (`x`, `x_1`, `\theta`) and the common
 * functions (`\sin`, `\ln`, `\log_2`, …). No `eval`: a recursive-descent parser builds a tree that
 * {@link evaluate} walks. Parsing throws {@link ExpressionError} on anything else; callers catch it.
 */

export type Expr =
  | { t: 'num'; v: number; raw: string }
  | { t: 'var'; name: string }
  | { t: 'const'; name: 'pi' | 'e' | 'inf' }
  | { t: 'neg'; a: Expr }
  | { t: 'bin'; op: '+' | '-' | '*' | '/' | '^'; a: Expr; b: Expr }
  | { t: 'fn'; name: string; a: Expr; base?: Expr }
  | { t: 'fact'; a: Expr }
  | { t: 'binom'; a: Expr; b: Expr };

/** The input is not an expression this parser understands. */
export class ExpressionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExpressionError';
  }
}

const FUNCTIONS = new Set(['sin', 'cos', 'tan', 'sec', 'csc', 'cot', 'arcsin', 'arccos', 'arctan', 'sinh', 'cosh', 'tanh', 'ln', 'log', 'exp', 'lg']);
const INVERSE: Record<string, string> = { sin: 'arcsin', cos: 'arccos', tan: 'arctan' };
const GREEK = new Set([
  'alpha',
  'beta',
  'gamma',
  'delta',
  'epsilon',
  'varepsilon',
  'zeta',
  'eta',
  'theta',
  'vartheta',
  'iota',
  'kappa',
  'lambda',
  'mu',
  'nu',
  'xi',
  'rho',
  'sigma',
  'tau',
  'upsilon',
  'phi',
  'varphi',
  'chi',
  'psi',
  'omega',
  'Gamma',
  'Delta',
  'Theta',
  'Lambda',
  'Xi',
  'Sigma',
  'Phi',
  'Psi',
  'Omega',
]);
/** Commands that start an operand (so `2\pi` and `3\sqrt{2}` are products). */
const ATOM_COMMANDS = new Set(['frac', 'sqrt', 'binom', 'pi', 'infty', 'infinity', 'lfloor', 'lceil', ...FUNCTIONS, ...GREEK]);

const MAX_DEPTH = 200;
const MAX_LENGTH = 2000;

/**
 * Parses an answer into an expression tree.
 *
 * @throws {@link ExpressionError} when the text is not a single expression (lists, relations, text…).
 */
export function parseExpression(input: string): Expr {
  if (typeof input !== 'string') throw new ExpressionError('not a string');
  if (input.length > MAX_LENGTH) throw new ExpressionError('too long');
  const p = new Parser(input);
  const e = p.expr();
  p.ws();
  if (!p.atEnd()) throw new ExpressionError(`unexpected ${JSON.stringify(p.rest().slice(0, 10))}`);
  return e;
}

class Parser {
  private i = 0;
  private depth = 0;
  private absDepth = 0;
  constructor(private readonly s: string) {}

  atEnd(): boolean {
    return this.i >= this.s.length;
  }
  rest(): string {
    return this.s.slice(this.i);
  }
  ws(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i])) this.i++;
  }
  private peek(): string {
    this.ws();
    return this.s[this.i] ?? '';
  }
  /** The command name at the cursor (`\frac` → `frac`), without consuming it. */
  private command(): string | null {
    this.ws();
    if (this.s[this.i] !== '\\') return null;
    const m = /^\\([A-Za-z]+)/.exec(this.s.slice(this.i, this.i + 40));
    return m ? m[1] : null;
  }
  private eatCommandName(name: string): boolean {
    if (this.command() !== name) return false;
    this.i += name.length + 1;
    return true;
  }
  private eat(c: string): boolean {
    if (this.peek() !== c) return false;
    this.i++;
    return true;
  }
  private expect(c: string): void {
    if (!this.eat(c)) throw new ExpressionError(`expected ${c}`);
  }
  private enter(): void {
    if (++this.depth > MAX_DEPTH) throw new ExpressionError('too deeply nested');
  }
  private leave(): void {
    this.depth--;
  }

  expr(): Expr {
    this.enter();
    let left = this.term();
    for (;;) {
      const c = this.peek();
      if (c === '+' || c === '-') {
        this.i++;
        left = { t: 'bin', op: c, a: left, b: this.term() };
      } else break;
    }
    this.leave();
    return left;
  }

  private term(): Expr {
    let left = this.unary();
    for (;;) {
      const c = this.peek();
      const cmd = this.command();
      if (c === '*' || cmd === 'cdot' || cmd === 'times') {
        if (cmd) this.i += cmd.length + 1;
        else this.i++;
        left = { t: 'bin', op: '*', a: left, b: this.unary() };
      } else if (c === '/' || cmd === 'div') {
        if (cmd) this.i += cmd.length + 1;
        else this.i++;
        left = { t: 'bin', op: '/', a: left, b: this.unary() };
      } else if (this.startsOperand()) {
        // `2 3` or `1 000` is not a product a person would write: refuse rather than guess.
        if (/[\d.]/.test(this.peek())) throw new ExpressionError('two numbers side by side');
        left = { t: 'bin', op: '*', a: left, b: this.power() };
      } else break;
    }
    return left;
  }

  private startsOperand(): boolean {
    const c = this.peek();
    if (c === '') return false;
    if (/[0-9.A-Za-z([{]/.test(c)) return c !== '.' || /\d/.test(this.s[this.i + 1] ?? '');
    if (c === '|') return this.absDepth === 0;
    const cmd = this.command();
    return cmd !== null && ATOM_COMMANDS.has(cmd);
  }

  private unary(): Expr {
    this.enter();
    let out: Expr;
    if (this.eat('-')) out = { t: 'neg', a: this.unary() };
    else if (this.eat('+')) out = this.unary();
    else out = this.power();
    this.leave();
    return out;
  }

  private power(): Expr {
    const base = this.postfix();
    if (this.eat('^')) return { t: 'bin', op: '^', a: base, b: this.exponent() };
    return base;
  }

  private exponent(): Expr {
    this.enter();
    let out: Expr;
    if (this.eat('-')) out = { t: 'neg', a: this.exponent() };
    else if (this.eat('+')) out = this.exponent();
    else {
      const base = this.postfix();
      out = this.eat('^') ? { t: 'bin', op: '^', a: base, b: this.exponent() } : base;
    }
    this.leave();
    return out;
  }

  private postfix(): Expr {
    let a = this.atom();
    for (;;) {
      this.ws();
      if (this.s[this.i] === '!' && this.s[this.i + 1] !== '=') {
        this.i++;
        a = { t: 'fact', a };
      } else break;
    }
    return a;
  }

  private group(open: string, close: string): Expr {
    this.expect(open);
    const e = this.expr();
    this.expect(close);
    return e;
  }

  /** One argument of `\frac`/`\sqrt`: a `{…}` group, or a single character / command (`\frac12`). */
  private argument(): Expr {
    const c = this.peek();
    if (c === '{') return this.group('{', '}');
    if (c === '(') return this.group('(', ')');
    if (/\d/.test(c)) {
      this.i++;
      return { t: 'num', v: Number(c), raw: c };
    }
    if (/[A-Za-z]/.test(c)) {
      this.i++;
      return c === 'e' ? { t: 'const', name: 'e' } : { t: 'var', name: c };
    }
    if (c === '\\') return this.atom();
    throw new ExpressionError('missing argument');
  }

  private atom(): Expr {
    this.enter();
    try {
      const c = this.peek();
      if (c === '') throw new ExpressionError('unexpected end');
      if (/\d/.test(c) || (c === '.' && /\d/.test(this.s[this.i + 1] ?? ''))) return this.number();
      if (c === '(') return this.group('(', ')');
      if (c === '[') return this.group('[', ']');
      if (c === '{') return this.group('{', '}');
      if (c === '|') {
        this.i++;
        this.absDepth++;
        const a = this.expr();
        this.absDepth--;
        this.expect('|');
        return { t: 'fn', name: 'abs', a };
      }
      if (/[A-Za-z]/.test(c)) {
        this.i++;
        return this.subscripted(c);
      }
      const cmd = this.command();
      if (cmd === null) throw new ExpressionError(`unexpected ${JSON.stringify(c)}`);
      this.i += cmd.length + 1;
      if (cmd === 'frac') {
        const a = this.argument();
        const b = this.argument();
        return { t: 'bin', op: '/', a, b };
      }
      if (cmd === 'binom') {
        const a = this.argument();
        const b = this.argument();
        return { t: 'binom', a, b };
      }
      if (cmd === 'sqrt') {
        let index: Expr | null = null;
        if (this.peek() === '[') index = this.group('[', ']');
        const a = this.argument();
        return index ? { t: 'bin', op: '^', a, b: { t: 'bin', op: '/', a: { t: 'num', v: 1, raw: '1' }, b: index } } : { t: 'fn', name: 'sqrt', a };
      }
      if (cmd === 'lfloor' || cmd === 'lceil') {
        const a = this.expr();
        if (!this.eatCommandName(cmd === 'lfloor' ? 'rfloor' : 'rceil')) throw new ExpressionError(`unclosed \\${cmd}`);
        return { t: 'fn', name: cmd === 'lfloor' ? 'floor' : 'ceil', a };
      }
      if (cmd === 'pi') return { t: 'const', name: 'pi' };
      if (cmd === 'infty' || cmd === 'infinity') return { t: 'const', name: 'inf' };
      if (GREEK.has(cmd)) return this.subscripted(`\\${cmd}`);
      if (FUNCTIONS.has(cmd)) return this.func(cmd);
      throw new ExpressionError(`unsupported \\${cmd}`);
    } finally {
      this.leave();
    }
  }

  private subscripted(name: string): Expr {
    if (this.s[this.i] === '_') {
      this.i++;
      let sub: string;
      if (this.s[this.i] === '{') {
        const close = this.s.indexOf('}', this.i);
        if (close < 0) throw new ExpressionError('unclosed subscript');
        sub = this.s.slice(this.i + 1, close).replace(/\s+/g, '');
        this.i = close + 1;
      } else if (/[A-Za-z0-9]/.test(this.s[this.i] ?? '')) {
        sub = this.s[this.i++];
      } else throw new ExpressionError('bad subscript');
      return { t: 'var', name: `${name}_${sub}` };
    }
    if (name === 'e') return { t: 'const', name: 'e' };
    return { t: 'var', name };
  }

  private func(name: string): Expr {
    let fname = name === 'lg' ? 'log' : name;
    let power: Expr | null = null;
    let base: Expr | undefined;
    for (let k = 0; k < 2; k++) {
      this.ws();
      if (this.s[this.i] === '^') {
        this.i++;
        power = this.exponent();
      } else if (this.s[this.i] === '_' && fname === 'log') {
        this.i++;
        base = this.argument();
      }
    }
    // `\sin^{-1} x` is arcsin.
    if (power && power.t === 'neg' && power.a.t === 'num' && power.a.v === 1 && INVERSE[fname]) {
      fname = INVERSE[fname];
      power = null;
    }
    const c = this.peek();
    const a = c === '(' || c === '{' || c === '[' ? this.atom() : this.power();
    const call: Expr = { t: 'fn', name: fname, a, ...(base ? { base } : {}) };
    return power ? { t: 'bin', op: '^', a: call, b: power } : call;
  }

  private number(): Expr {
    const m = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(this.s.slice(this.i, this.i + 400));
    if (!m) throw new ExpressionError('bad number');
    this.i += m[0].length;
    return { t: 'num', v: Number(m[0]), raw: m[0] };
  }
}

/** Variables of an expression (sorted, unique). */
export function variables(e: Expr, into: Set<string> = new Set()): Set<string> {
  switch (e.t) {
    case 'var':
      into.add(e.name);
      break;
    case 'neg':
    case 'fact':
      variables(e.a, into);
      break;
    case 'fn':
      variables(e.a, into);
      if (e.base) variables(e.base, into);
      break;
    case 'bin':
    case 'binom':
      variables(e.a, into);
      variables(e.b, into);
      break;
    default:
      break;
  }
  return into;
}

/** Evaluates a tree with values for its variables. Undefined results (`\sqrt{-1}`, `0/0`) are NaN. */
export function evaluate(e: Expr, vars: ReadonlyMap<string, number> = new Map()): number {
  switch (e.t) {
    case 'num':
      return e.v;
    case 'var':
      return vars.get(e.name) ?? NaN;
    case 'const':
      return e.name === 'pi' ? Math.PI : e.name === 'e' ? Math.E : Infinity;
    case 'neg':
      return -evaluate(e.a, vars);
    case 'fact':
      return factorial(evaluate(e.a, vars));
    case 'binom':
      return binomial(evaluate(e.a, vars), evaluate(e.b, vars));
    case 'bin': {
      const a = evaluate(e.a, vars);
      const b = evaluate(e.b, vars);
      switch (e.op) {
        case '+':
          return a + b;
        case '-':
          return a - b;
        case '*':
          return a * b;
        case '/':
          return b === 0 ? NaN : a / b;
        case '^':
          return power(a, b);
      }
      return NaN;
    }
    case 'fn':
      return applyFunction(e.name, evaluate(e.a, vars), e.base ? evaluate(e.base, vars) : undefined);
  }
}

function power(a: number, b: number): number {
  if (a < 0 && !Number.isInteger(b)) {
    // Odd roots of negatives: (-8)^(1/3) = -2.
    const inv = 1 / b;
    const n = Math.round(inv);
    if (Math.abs(inv - n) < 1e-9 && n % 2 !== 0) return -Math.pow(-a, b);
    return NaN;
  }
  return Math.pow(a, b);
}

function factorial(n: number): number {
  if (!Number.isInteger(n) || n < 0) return NaN;
  if (n > 170) return Infinity;
  let r = 1;
  for (let k = 2; k <= n; k++) r *= k;
  return r;
}

function binomial(n: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(k) || n < 0) return NaN;
  if (k < 0 || k > n) return 0;
  let r = 1;
  for (let j = 1; j <= Math.min(k, n - k); j++) r = (r * (n - Math.min(k, n - k) + j)) / j;
  return Math.round(r);
}

function applyFunction(name: string, x: number, base?: number): number {
  switch (name) {
    case 'sqrt':
      return x < 0 ? NaN : Math.sqrt(x);
    case 'abs':
      return Math.abs(x);
    case 'floor':
      return Math.floor(x + 1e-12);
    case 'ceil':
      return Math.ceil(x - 1e-12);
    case 'sin':
      return Math.sin(x);
    case 'cos':
      return Math.cos(x);
    case 'tan':
      return Math.tan(x);
    case 'sec':
      return 1 / Math.cos(x);
    case 'csc':
      return 1 / Math.sin(x);
    case 'cot':
      return 1 / Math.tan(x);
    case 'arcsin':
      return Math.asin(x);
    case 'arccos':
      return Math.acos(x);
    case 'arctan':
      return Math.atan(x);
    case 'sinh':
      return Math.sinh(x);
    case 'cosh':
      return Math.cosh(x);
    case 'tanh':
      return Math.tanh(x);
    case 'exp':
      return Math.exp(x);
    case 'ln':
      return x <= 0 ? NaN : Math.log(x);
    case 'log':
      if (x <= 0) return NaN;
      if (base === undefined) return Math.log10(x);
      return base <= 0 || base === 1 ? NaN : Math.log(x) / Math.log(base);
    default:
      return NaN;
  }
}
