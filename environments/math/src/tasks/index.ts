/**
 * The task set of the math environment: the synthetic generator or a dataset's rows.
 */
import { isAbsolute, resolve } from 'node:path';
import { createRng, EnvironmentError, z } from '@opentinker/env-sdk';
import type { ConfigPolicy, EnvironmentContext, Split, TaskSet } from '@opentinker/env-sdk';
import { readRows, rowToTask } from './rows';
import type { InvalidRow, MathTask } from './rows';
import { BOXED_INSTRUCTION, EQUATION_DATA_SOURCE, generateProblem, SYNTHETIC_DATA_SOURCE } from './synthetic';

export type { MathTask, PromptMessage, InvalidRow } from './rows';

/**
 * The zod shape of the task-related config keys, for reuse in other environments' schemas
 * (`z.object({ ...mathConfigShape, turns: … }).strict()`).
 *
 * - `source`: `'synthetic'` (the built-in generator) or `'dataset'`; default `'synthetic'`, or
 *   `'dataset'` when `train_path` / `test_path` is given.
 * - `difficulty` (1..5, default 2) and `seed` (default 0): the synthetic generator.
 * - `style`: `'word'` (default: word problems asking for a `\boxed{}` answer) or `'equation'` (bare
 *   equations such as `47+385=`, answered by the number on the response's first line; for tiny models).
 * - `test_size` (default 200): synthetic test split size; with a dataset and no `test_path`, how many
 *   train rows are held out as the test split (at most a tenth of them).
 * - `train_path`, `test_path`: JSONL, JSON-array or parquet files in the OpenTinker / verl layout.
 * - `invalid_rows`: `'skip'` (default: skip rows without a prompt or ground truth, log how many and
 *   which) or `'error'` (refuse the dataset, naming the rows).
 */
export const mathConfigShape = {
  source: z.enum(['synthetic', 'dataset']).optional().describe("'synthetic' (default) or 'dataset' (default when a path is given)"),
  difficulty: z.number().int().min(1).max(5).default(2).describe('Synthetic problems: 1 (one-digit +/−) … 5 (multi-step with fractions)'),
  style: z
    .enum(['word', 'equation'])
    .optional()
    .describe(
      "Synthetic problems: 'word' (default: word problems, \\boxed{} answer) or 'equation' (`47+385=`, bare answer on the first line; difficulty 3: + of 1–3 digit numbers)",
    ),
  seed: z.number().int().default(0).describe('Seed of the synthetic generator (and of the held-out rows of a dataset)'),
  test_size: z.number().int().min(1).max(1_000_000).default(200).describe('Test split size (synthetic), or rows held out when no test_path'),
  train_path: z.string().min(1).optional().describe('Train dataset: .jsonl, .json or .parquet (verl layout)'),
  test_path: z.string().min(1).optional().describe('Test dataset: .jsonl, .json or .parquet (verl layout)'),
  invalid_rows: z.enum(['skip', 'error']).default('skip').describe('Rows lacking a prompt or a ground truth: skip them (logged) or fail'),
};

/**
 * The dataset files are the host's to set (from uploaded datasets): a path from a request would let a
 * tenant read any file the server can. Reuse it in the `configPolicy` of environments built on
 * `mathConfigShape`.
 */
export const mathConfigPolicy = {
  train_path: { set: 'dataset', split: 'train' },
  test_path: { set: 'dataset', split: 'test' },
} as const satisfies ConfigPolicy;

const taskConfigSchema = z.object(mathConfigShape);
/** The task-related config keys, after defaults. */
export type MathTaskConfig = z.output<typeof taskConfigSchema>;

/** A math task set, with what loading a dataset skipped. */
export interface MathTaskSet extends TaskSet<MathTask> {
  readonly source: 'synthetic' | 'dataset';
  /** Rows skipped per split (dataset source; empty lists for synthetic). */
  readonly invalidRows: { train: InvalidRow[]; test: InvalidRow[] };
}

/**
 * Builds the task set for a config (already validated and defaulted, e.g. by the environment schema).
 * Asynchronous because dataset files (parquet especially) load asynchronously; the synthetic source
 * resolves at once.
 *
 * @throws EnvironmentError `ENV_INVALID_CONFIG` for a missing or unreadable file, a dataset source
 * without paths, no valid rows, or invalid rows with `invalid_rows: 'error'`.
 */
export async function createMathTasks(config: Partial<MathTaskConfig>, ctx?: Pick<EnvironmentContext, 'log'>): Promise<MathTaskSet> {
  const c = taskConfigSchema.parse(config ?? {});
  const source = c.source ?? (c.train_path || c.test_path ? 'dataset' : 'synthetic');
  if (source === 'synthetic') {
    if (c.train_path || c.test_path) {
      throw new EnvironmentError('ENV_INVALID_CONFIG', "train_path/test_path need source: 'dataset'", 'config.source');
    }
    return createSyntheticTasks(c);
  }
  if (c.style === 'equation') {
    throw new EnvironmentError('ENV_INVALID_CONFIG', "style 'equation' applies to synthetic problems; a dataset's rows carry their own prompts", 'config.style');
  }
  return loadDatasetTasks(c, ctx);
}

/** The synthetic task set (synchronous). Train is endless; test has `test_size` tasks. */
export function createSyntheticTasks(config: Partial<Pick<MathTaskConfig, 'difficulty' | 'seed' | 'test_size' | 'style'>> = {}): MathTaskSet {
  const difficulty = config.difficulty ?? 2;
  const seed = config.seed ?? 0;
  const testSize = config.test_size ?? 200;
  const style = config.style ?? 'word';
  const equation = style === 'equation';
  return {
    source: 'synthetic',
    invalidRows: { train: [], test: [] },
    size: (split) => (split === 'train' ? null : testSize),
    get: (split, index) => {
      checkIndex(split, index, split === 'train' ? null : testSize);
      const p = generateProblem({ seed, difficulty, split, index, style });
      return {
        split,
        index,
        // An equation is its own prompt: a tiny model's whole context is the problem and the answer.
        prompt: [{ role: 'user', content: equation ? p.question : `${p.question} ${BOXED_INSTRUCTION}` }],
        question: p.question,
        ground_truth: p.answer,
        data_source: equation ? EQUATION_DATA_SOURCE : SYNTHETIC_DATA_SOURCE,
        // `expression` (`47+385` for `47+385=`) is the problem as code, for scripted tool use (`sft.turns`).
        extra_info: { split, index, difficulty, ...(equation ? { style, expression: p.question.replace(/=$/, '') } : {}) },
        metadata: { difficulty, ...(equation ? { style } : {}) },
      };
    },
  };
}

async function loadDatasetTasks(c: MathTaskConfig, ctx?: Pick<EnvironmentContext, 'log'>): Promise<MathTaskSet> {
  if (!c.train_path && !c.test_path) {
    throw new EnvironmentError('ENV_INVALID_CONFIG', "source 'dataset' needs train_path and/or test_path", 'config.train_path');
  }
  const load = async (path: string, split: Split, key: string) => {
    const file = isAbsolute(path) ? path : resolve(process.cwd(), path);
    let rows;
    try {
      rows = await readRows(file);
    } catch (e) {
      const reason = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (e as Error).message;
      throw new EnvironmentError('ENV_INVALID_CONFIG', `Cannot read ${key} ${file}: ${reason}`, `config.${key}`);
    }
    const tasks: MathTask[] = [];
    const invalid: InvalidRow[] = [];
    for (const { row, value, error } of rows) {
      const task = error ? { error } : rowToTask(value, split, tasks.length);
      if ('error' in task) invalid.push({ row, reason: task.error });
      else tasks.push(task);
    }
    const where = `${key} ${file}`;
    if (invalid.length > 0) {
      const list = invalid
        .slice(0, 10)
        .map((r) => `row ${r.row}: ${r.reason}`)
        .join('; ');
      const more = invalid.length > 10 ? `; and ${invalid.length - 10} more` : '';
      if (c.invalid_rows === 'error' || tasks.length === 0) {
        throw new EnvironmentError('ENV_INVALID_CONFIG', `${invalid.length} of ${rows.length} rows of ${where} are not usable (${list}${more})`, `config.${key}`);
      }
      ctx?.log(`math: skipped ${invalid.length} of ${rows.length} rows of ${where} (${list}${more})`);
    }
    if (tasks.length === 0) throw new EnvironmentError('ENV_INVALID_CONFIG', `${where} has no rows`, `config.${key}`);
    return { tasks, invalid };
  };

  let train = c.train_path ? await load(c.train_path, 'train', 'train_path') : { tasks: [] as MathTask[], invalid: [] as InvalidRow[] };
  let test = c.test_path ? await load(c.test_path, 'test', 'test_path') : null;
  if (!test) {
    // Hold out up to test_size rows (at most a tenth, at least one) of the train file, chosen by seed.
    const n = train.tasks.length;
    const held = n < 2 ? 0 : Math.min(c.test_size, Math.max(1, Math.floor(n / 10)));
    if (held === 0) {
      test = { tasks: train.tasks, invalid: [] };
      ctx?.log('math: the train file has a single row; it also serves as the test split');
    } else {
      const order = createRng(c.seed).shuffle(Array.from({ length: n }, (_, i) => i));
      const heldOut = new Set(order.slice(0, held));
      test = { tasks: train.tasks.filter((_, i) => heldOut.has(i)), invalid: [] };
      train = { tasks: train.tasks.filter((_, i) => !heldOut.has(i)), invalid: train.invalid };
      ctx?.log(`math: no test_path; held out ${held} of ${n} train rows as the test split`);
    }
  }
  const splits = {
    train: train.tasks.map((t, index) => ({ ...t, split: 'train' as const, index })),
    test: test.tasks.map((t, index) => ({ ...t, split: 'test' as const, index })),
  };
  return {
    source: 'dataset',
    invalidRows: { train: train.invalid, test: test.invalid },
    size: (split) => splits[split].length,
    get: (split, index) => {
      checkIndex(split, index, splits[split].length);
      return splits[split][index];
    },
  };
}

function checkIndex(split: Split, index: number, size: number | null): void {
  if (split !== 'train' && split !== 'test') throw new EnvironmentError('ENV_INVALID_TASK', `Unknown split ${JSON.stringify(split)}`, 'split');
  if (!Number.isInteger(index) || index < 0 || (size !== null && index >= size)) {
    throw new EnvironmentError('ENV_INVALID_TASK', `No task ${index} in the ${split} split${size !== null ? ` (size ${size})` : ''}`, 'index');
  }
}
