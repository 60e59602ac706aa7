/**
 * A seeded generator of arithmetic word problems, so the math environment trains offline with no
 * download. Five difficulty levels:
 *
 * 1. one-digit addition or subtraction (`7 + 3`, `9 - 4`);
 * 2. two-digit addition and subtraction, one or two steps;
 * 3. one multiplication or exact division, then an addition or subtraction;
 * 4. multi-step problems mixing ×, ÷, + and − with larger numbers (integer answers);
 * 5. multi-step problems with fractions (answers are integers or simple fractions such as `\frac{9}{2}`).
 *
 * The `equation` style writes problems as bare equations (`47+385=`) instead, for tiny models.
 */
import { createRng } from '@opentinker/env-sdk';
import type { Rng } from '@opentinker/env-sdk';

/** One generated problem: its text (without the instruction) and its answer as a string. */
export interface SyntheticProblem {
  question: string;
  answer: string;
  difficulty: number;
}

const NAMES: ReadonlyArray<[string, 'she' | 'he']> = [
  ['Ava', 'she'],
  ['Liam', 'he'],
  ['Maya', 'she'],
  ['Noah', 'he'],
  ['Zoe', 'she'],
  ['Omar', 'he'],
  ['Lena', 'she'],
  ['Kenji', 'he'],
  ['Priya', 'she'],
  ['Diego', 'he'],
  ['Sara', 'she'],
  ['Tom', 'he'],
  ['Amara', 'she'],
  ['Felix', 'he'],
  ['Nina', 'she'],
  ['Ravi', 'he'],
  ['Elena', 'she'],
  ['Jonas', 'he'],
];
const ITEMS = ['apples', 'marbles', 'stickers', 'pencils', 'books', 'cookies', 'shells', 'cards', 'stamps', 'beads', 'oranges', 'toy cars'];
const CONTAINERS: ReadonlyArray<[string, string]> = [
  ['box', 'boxes'],
  ['bag', 'bags'],
  ['jar', 'jars'],
  ['crate', 'crates'],
  ['pack', 'packs'],
  ['basket', 'baskets'],
];

/** The instruction appended to every prompt (verl's MATH convention). */
export const BOXED_INSTRUCTION = "Let's think step by step and output the final answer within \\boxed{}.";

/** The data source recorded on generated tasks. */
export const SYNTHETIC_DATA_SOURCE = 'opentinker/synthetic-arithmetic';

/**
 * The data source of compact equation tasks (`47+385=`): the grader reads the response's first line
 * as the answer (a `\boxed{}` answer still counts), see `answerFormats`.
 */
export const EQUATION_DATA_SOURCE = 'opentinker/synthetic-equation';

/** How a synthetic problem is written: an arithmetic word problem, or a bare equation for tiny models. */
export type ProblemStyle = 'word' | 'equation';

/** Which of every `PARTITION` problems (by text hash) belong to the test split: the splits never share a problem. */
const PARTITION = 5;

/**
 * The problem at `index` of a split. Train and test come from different seed streams and a hash
 * partition of the problem text, so no test problem ever appears in train.
 *
 * @example
 * ```ts
 * generateProblem({ seed: 0, difficulty: 1, split: 'train', index: 3 });
 * // { question: 'Zoe has 7 shells. …', answer: '10', difficulty: 1 }
 * ```
 */
export function generateProblem(options: { seed: number; difficulty: number; split: 'train' | 'test'; index: number; style?: ProblemStyle }): SyntheticProblem {
  const difficulty = Math.min(5, Math.max(1, Math.trunc(options.difficulty)));
  const stream = options.split === 'test' ? 0x7e57 : 0x7a11;
  const generate = options.style === 'equation' ? equationGenerator(difficulty) : GENERATORS[difficulty - 1];
  for (let attempt = 0; ; attempt++) {
    const rng = createRng(mix(options.seed, stream, options.index, attempt));
    const problem = generate(rng);
    const inTest = fnv1a(problem.question) % PARTITION === 0;
    if (inTest === (options.split === 'test') || attempt >= 1000) return { ...problem, difficulty };
  }
}

/** Whether a problem text belongs to the test partition (exposed for tests). */
export function isTestProblem(question: string): boolean {
  return fnv1a(question) % PARTITION === 0;
}

type Generator = (rng: Rng) => { question: string; answer: string };

const GENERATORS: Generator[] = [
  // 1: one-digit addition / subtraction.
  (rng) => {
    const [name, he] = rng.pick(NAMES);
    const item = rng.pick(ITEMS);
    const a = rng.int(1, 9);
    const b = rng.int(1, 9);
    switch (rng.int(0, 3)) {
      case 0:
        return { question: `${name} has ${a} ${item}. ${cap(he)} finds ${b} more. How many ${item} does ${name} have now?`, answer: String(a + b) };
      case 1:
        return { question: `There are ${a} ${item} on a table and ${b} ${item} on a shelf. How many ${item} are there in all?`, answer: String(a + b) };
      case 2: {
        const [hi, lo] = a >= b ? [a, b] : [b, a];
        return { question: `${name} has ${hi} ${item}. ${cap(he)} gives ${lo} of them to a friend. How many ${item} does ${name} have left?`, answer: String(hi - lo) };
      }
      default: {
        const [hi, lo] = a >= b ? [a, b] : [b, a];
        return { question: `A bowl holds ${hi} ${item}. ${name} takes out ${lo}. How many ${item} are still in the bowl?`, answer: String(hi - lo) };
      }
    }
  },
  // 2: two-digit addition and subtraction, one or two steps.
  (rng) => {
    const [name, he] = rng.pick(NAMES);
    const item = rng.pick(ITEMS);
    const a = rng.int(10, 99);
    const b = rng.int(10, 99);
    switch (rng.int(0, 2)) {
      case 0:
        return { question: `${name} collected ${a} ${item} on Monday and ${b} ${item} on Tuesday. How many ${item} did ${he} collect in total?`, answer: String(a + b) };
      case 1: {
        const [hi, lo] = a >= b ? [a, b] : [b, a];
        return { question: `A shop had ${hi} ${item}. It sold ${lo} of them. How many ${item} does the shop have left?`, answer: String(hi - lo) };
      }
      default: {
        const c = rng.int(10, a + b - 1);
        return {
          question: `${name} has ${a} ${item}. ${cap(he)} buys ${b} more and then gives ${c} to ${he === 'she' ? 'her' : 'his'} brother. How many ${item} does ${name} have now?`,
          answer: String(a + b - c),
        };
      }
    }
  },
  // 3: one multiplication or exact division, then an addition or subtraction.
  (rng) => {
    const [name, he] = rng.pick(NAMES);
    const item = rng.pick(ITEMS);
    const [box, boxes] = rng.pick(CONTAINERS);
    const k = rng.int(2, 12);
    const n = rng.int(2, 12);
    switch (rng.int(0, 2)) {
      case 0: {
        const g = rng.int(1, k * n - 1);
        return {
          question: `Each ${box} holds ${k} ${item}. ${name} buys ${n} ${boxes} and gives away ${g} ${item}. How many ${item} does ${name} have left?`,
          answer: String(k * n - g),
        };
      }
      case 1: {
        const extra = rng.int(1, 20);
        return {
          question: `${name} has ${k * n} ${item} and shares them equally among ${n} friends. Then each friend finds ${extra} more. How many ${item} does each friend have now?`,
          answer: String(k + extra),
        };
      }
      default: {
        const have = rng.int(1, 30);
        return {
          question: `${name} already has ${have} ${item}. ${cap(he)} fills ${n} ${boxes} with ${k} ${item} each and adds them to the rest. How many ${item} does ${name} have in total?`,
          answer: String(have + k * n),
        };
      }
    }
  },
  // 4: multi-step with ×, ÷, +, − (integer answers).
  (rng) => {
    const [name, he] = rng.pick(NAMES);
    const item = rng.pick(ITEMS);
    switch (rng.int(0, 3)) {
      case 0: {
        const price = rng.int(3, 25);
        const count = rng.int(3, 15);
        const bill = Math.ceil((price * count + 1) / 50) * 50 + 50 * rng.int(0, 2);
        return {
          question: `${item[0].toUpperCase()}${item.slice(1)} cost $${price} each. ${name} buys ${count} of them and pays with $${bill}. How many dollars of change does ${he} get?`,
          answer: String(bill - price * count),
        };
      }
      case 1: {
        const v1 = rng.int(30, 90);
        const h1 = rng.int(2, 6);
        const v2 = rng.int(30, 90);
        const h2 = rng.int(2, 6);
        return {
          question: `A train travels at ${v1} km per hour for ${h1} hours, then at ${v2} km per hour for ${h2} hours. How many kilometres does it travel in total?`,
          answer: String(v1 * h1 + v2 * h2),
        };
      }
      case 2: {
        const save = rng.int(5, 40);
        const weeks = rng.int(4, 20);
        const spend = rng.int(1, save * weeks - 1);
        return {
          question: `${name} saves $${save} every week. After ${weeks} weeks, ${he} spends $${spend} on a gift. How many dollars does ${he} have left?`,
          answer: String(save * weeks - spend),
        };
      }
      default: {
        const friends = rng.int(2, 8);
        const each = rng.int(3, 15);
        const packsA = rng.int(2, 6);
        const total = friends * each;
        // total = packsA * sizeA + rest, with rest ≥ 1 split into packsB packs of equal size when possible.
        const sizeA = rng.int(1, Math.max(1, Math.floor((total - 1) / packsA)));
        const rest = total - packsA * sizeA;
        return {
          question: `${name} buys ${packsA} packs of ${sizeA} ${item} and ${rest} loose ${item}. ${cap(he)} divides all of them equally among ${friends} friends. How many ${item} does each friend get?`,
          answer: String(each),
        };
      }
    }
  },
  // 5: multi-step with fractions.
  (rng) => {
    const [name, he] = rng.pick(NAMES);
    switch (rng.int(0, 3)) {
      case 0: {
        const [p, q] = rng.pick([
          [1, 2],
          [1, 3],
          [2, 3],
          [1, 4],
          [3, 4],
          [2, 5],
          [3, 5],
          [5, 6],
          [3, 8],
        ] as const);
        const batches = rng.int(2, 9);
        return {
          question: `A recipe needs ${p}/${q} cup of sugar for one batch. ${name} makes ${batches} batches. How many cups of sugar does ${he} use?`,
          answer: fraction(p * batches, q),
        };
      }
      case 1: {
        const litres = rng.int(2, 20);
        const bottles = rng.int(3, 9);
        const drunk = rng.int(1, bottles - 1);
        return {
          question: `${name} pours ${litres} litres of juice equally into ${bottles} bottles and then drinks the juice in ${drunk} of the bottles. How many litres of juice are left?`,
          answer: fraction(litres * (bottles - drunk), bottles),
        };
      }
      case 2: {
        const [p, q] = rng.pick([
          [1, 2],
          [1, 3],
          [1, 4],
          [2, 5],
          [1, 5],
          [3, 4],
        ] as const);
        const [r, s] = rng.pick([
          [1, 2],
          [1, 3],
          [2, 3],
          [1, 4],
        ] as const);
        const unit = q * s;
        const pages = unit * rng.int(2, 12);
        const first = (pages * p) / q;
        const second = ((pages - first) * r) / s;
        return {
          question: `A book has ${pages} pages. ${name} reads ${p}/${q} of the pages on Monday and ${r}/${s} of the remaining pages on Tuesday. How many pages are left to read?`,
          answer: String(pages - first - second),
        };
      }
      default: {
        const pizzas = rng.int(2, 12);
        const people = rng.int(3, 8);
        const extra = rng.int(1, 3);
        return {
          question: `${name} orders ${pizzas} pizzas and later ${extra} more. The pizzas are shared equally among ${people} people. How many pizzas does each person get?`,
          answer: fraction(pizzas + extra, people),
        };
      }
    }
  },
];

/**
 * Equations for tiny models (`47+385=`), answered by the bare number. The difficulty sets the
 * operators and the largest operand length:
 *
 * 1. `+`, one-digit operands; 2. `+`, 1–2 digits; 3. `+`, 1–3 digits; 4. `+` or `−`, 1–3 digits
 *    (never negative); 5. `+`, `−` or `×`, 1–3 digits.
 *
 * An operand's digit count is drawn uniformly first, then the operand uniformly among numbers of that
 * length (0–9 for one digit), so short operands are not swamped by long ones.
 */
function equationGenerator(difficulty: number): Generator {
  const maxDigits = Math.min(3, difficulty);
  const operators = difficulty <= 3 ? ['+'] : difficulty === 4 ? ['+', '-'] : ['+', '-', '*'];
  const operand = (rng: Rng) => {
    const digits = rng.int(1, maxDigits);
    return rng.int(digits === 1 ? 0 : 10 ** (digits - 1), 10 ** digits - 1);
  };
  return (rng) => {
    const op = operators.length === 1 ? operators[0] : rng.pick(operators);
    let a = operand(rng);
    let b = operand(rng);
    if (op === '-' && a < b) [a, b] = [b, a];
    const answer = op === '+' ? a + b : op === '-' ? a - b : a * b;
    return { question: `${a}${op}${b}=`, answer: String(answer) };
  };
}

/** `p/q` in lowest terms as LaTeX (`\frac{9}{2}`), or an integer string. */
export function fraction(p: number, q: number): string {
  const g = gcd(Math.abs(p), Math.abs(q));
  const [a, b] = [p / g, q / g];
  return b === 1 ? String(a) : `\\frac{${a}}{${b}}`;
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a || 1;
}

function cap(s: string): string {
  return s[0].toUpperCase() + s.slice(1);
}

/** Mixes integers into one 32-bit seed. */
function mix(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h = Math.imul(h ^ (p | 0), 0x01000193);
    h = Math.imul(h ^ Math.floor(p / 4294967296), 0x01000193);
    h ^= h >>> 15;
  }
  return h >>> 0;
}

/** FNV-1a of a string (32-bit). */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
