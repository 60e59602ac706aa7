import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { createMathTasks } from './index';
import type { MathTask } from './index';
import { rowToTask, toJson } from './rows';

const dir = mkdtempSync(join(tmpdir(), 'env-math-dataset-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const GSM8K_PROMPT =
  'Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether? Let\'s think step by step and output the final answer after "####".';

/** Rows as verl's preprocessing scripts write them. */
const VERL_ROWS = [
  {
    data_source: 'openai/gsm8k',
    prompt: [{ role: 'user', content: GSM8K_PROMPT }],
    ability: 'math',
    reward_model: { style: 'rule', ground_truth: '72' },
    extra_info: { split: 'train', index: 0, question: 'Natalia sold clips…', answer: 'Natalia sold 48/2 = 24 clips in May.\n#### 72' },
  },
  {
    data_source: 'DigitalLearningGmbH/MATH-lighteval',
    prompt: [{ role: 'user', content: "What is $\\frac12 + \\frac14$? Let's think step by step and output the final answer within \\boxed{}." }],
    ability: 'math',
    reward_model: { style: 'rule', ground_truth: '\\frac{3}{4}' },
    extra_info: { split: 'train', index: 1 },
  },
];

function writeJsonl(name: string, rows: unknown[]): string {
  const path = join(dir, name);
  writeFileSync(path, rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n');
  return path;
}

describe('dataset rows (OpenTinker / verl layout)', () => {
  it('loads JSONL rows as they are, passing extra_info and keeping other columns as metadata', async () => {
    const train = writeJsonl('train.jsonl', VERL_ROWS);
    const test = writeJsonl('test.jsonl', [VERL_ROWS[1]]);
    const tasks = await createMathTasks({ train_path: train, test_path: test });
    expect(tasks.source).toBe('dataset');
    expect(tasks.size('train')).toBe(2);
    expect(tasks.size('test')).toBe(1);
    const t = (await tasks.get('train', 0)) as MathTask;
    expect(t).toEqual({
      split: 'train',
      index: 0,
      prompt: VERL_ROWS[0].prompt,
      question: 'Natalia sold clips…',
      ground_truth: '72',
      data_source: 'openai/gsm8k',
      extra_info: VERL_ROWS[0].extra_info,
      metadata: { ability: 'math', reward_style: 'rule' },
    });
    const m = (await tasks.get('test', 0)) as MathTask;
    expect(m.question).toBe(VERL_ROWS[1].prompt[0].content);
    expect(m.ground_truth).toBe('\\frac{3}{4}');
  });

  it('loads parquet with nested struct and list columns (written by hyparquet-writer)', async () => {
    const path = join(dir, 'train.parquet');
    const buffer = parquetWriteBuffer({
      columnData: [
        { name: 'data_source', data: VERL_ROWS.map((r) => r.data_source) },
        { name: 'prompt', data: VERL_ROWS.map((r) => r.prompt) },
        { name: 'ability', data: VERL_ROWS.map((r) => r.ability) },
        { name: 'reward_model', data: VERL_ROWS.map((r) => r.reward_model) },
        { name: 'extra_info', data: VERL_ROWS.map((r) => ({ split: r.extra_info.split, index: r.extra_info.index })) },
      ],
    });
    writeFileSync(path, Buffer.from(buffer));
    const tasks = await createMathTasks({ source: 'dataset', train_path: path, test_path: path });
    expect(tasks.size('train')).toBe(2);
    const t = (await tasks.get('train', 1)) as MathTask;
    expect(t.prompt).toEqual(VERL_ROWS[1].prompt);
    expect(t.ground_truth).toBe('\\frac{3}{4}');
    expect(t.data_source).toBe('DigitalLearningGmbH/MATH-lighteval');
    expect(t.extra_info).toEqual({ split: 'train', index: 1 });
    expect(JSON.parse(JSON.stringify(t))).toEqual(t);
  });

  it('finds the ground truth in each documented place', () => {
    const base = { prompt: 'What is 2+2?' };
    const truth = (row: object) => (rowToTask({ ...base, ...row }, 'train', 0) as MathTask).ground_truth;
    expect(truth({ reward_model: { ground_truth: '4' } })).toBe('4');
    expect(truth({ ground_truth: '4' })).toBe('4');
    expect(truth({ ground_truth: 4 })).toBe('4');
    expect(truth({ extra_info: { ground_truth: '4' } })).toBe('4');
    expect(truth({ answer: 'Two and two make four.\n#### 4' })).toBe('4');
    expect(truth({ answer: '4' })).toBe('4');
    expect(truth({ solution: 'Clearly $2+2=\\boxed{4}$.' })).toBe('4');
    expect(truth({ reward_model: { ground_truth: '4' }, ground_truth: '5' })).toBe('4');
    const plain = rowToTask({ prompt: 'What is 2+2?', ground_truth: '4' }, 'test', 3) as MathTask;
    expect(plain.prompt).toEqual([{ role: 'user', content: 'What is 2+2?' }]);
    expect(plain.data_source).toBe('unknown');
    expect(plain.split).toBe('test');
  });

  it('builds a prompt from question/problem columns when there is no prompt', () => {
    const t = rowToTask({ question: 'What is 2+2?', answer: '#### 4' }, 'train', 0) as MathTask;
    expect(t.prompt[0].content).toBe("What is 2+2? Let's think step by step and output the final answer within \\boxed{}.");
    expect(t.question).toBe('What is 2+2?');
  });

  it('explains unusable rows', () => {
    expect(rowToTask({ prompt: 'q' }, 'train', 0)).toEqual({ error: expect.stringContaining('no ground truth') });
    expect(rowToTask({ ground_truth: '1' }, 'train', 0)).toEqual({ error: 'no prompt' });
    expect(rowToTask({ prompt: [{ role: 'robot', content: 'x' }], ground_truth: '1' }, 'train', 0)).toEqual({ error: expect.stringContaining('prompt') });
    expect(rowToTask([1, 2], 'train', 0)).toEqual({ error: 'not an object' });
  });

  it('skips invalid rows by default, logging their row numbers', async () => {
    const path = writeJsonl('mixed.jsonl', [VERL_ROWS[0], { prompt: 'no truth' }, 'not json {', VERL_ROWS[1]]);
    const logs: string[] = [];
    const tasks = await createMathTasks({ train_path: path, test_path: path }, { log: (m) => logs.push(m) });
    expect(tasks.size('train')).toBe(2);
    expect(tasks.invalidRows.train.map((r) => r.row)).toEqual([2, 3]);
    expect(logs[0]).toMatch(/skipped 2 of 4 rows .*row 2: no ground truth.*row 3: line 3 is not JSON/);
    expect(((await tasks.get('train', 1)) as MathTask).index).toBe(1);
  });

  it("refuses invalid rows with invalid_rows: 'error', naming them", async () => {
    const path = writeJsonl('bad.jsonl', [VERL_ROWS[0], { prompt: 'no truth' }]);
    await expect(createMathTasks({ train_path: path, test_path: path, invalid_rows: 'error' })).rejects.toMatchObject({
      code: 'ENV_INVALID_CONFIG',
      field: 'config.train_path',
      message: expect.stringContaining('row 2: no ground truth'),
    });
  });

  it('refuses a dataset with no usable rows, a missing file, or no path', async () => {
    const empty = writeJsonl('empty.jsonl', [{ nothing: 1 }]);
    await expect(createMathTasks({ train_path: empty })).rejects.toMatchObject({ code: 'ENV_INVALID_CONFIG' });
    await expect(createMathTasks({ train_path: join(dir, 'missing.jsonl') })).rejects.toMatchObject({
      code: 'ENV_INVALID_CONFIG',
      message: expect.stringContaining('file not found'),
    });
    await expect(createMathTasks({ source: 'dataset' })).rejects.toMatchObject({ code: 'ENV_INVALID_CONFIG' });
    await expect(createMathTasks({ source: 'synthetic', train_path: empty })).rejects.toMatchObject({ code: 'ENV_INVALID_CONFIG', field: 'config.source' });
  });

  it('holds out a seeded tenth of the train rows as the test split when there is no test_path', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => ({ prompt: `What is ${i} + 1?`, ground_truth: String(i + 1) }));
    const path = writeJsonl('fifty.jsonl', rows);
    const logs: string[] = [];
    const tasks = await createMathTasks({ train_path: path, seed: 1 }, { log: (m) => logs.push(m) });
    expect(tasks.size('test')).toBe(5);
    expect(tasks.size('train')).toBe(45);
    const test = await Promise.all([0, 1, 2, 3, 4].map(async (i) => ((await tasks.get('test', i)) as MathTask).question));
    const train = await Promise.all(Array.from({ length: 45 }, async (_, i) => ((await tasks.get('train', i)) as MathTask).question));
    expect(new Set([...test, ...train]).size).toBe(50);
    expect(logs[0]).toMatch(/held out 5 of 50/);
    const again = await createMathTasks({ train_path: path, seed: 1 });
    expect(((await again.get('test', 0)) as MathTask).question).toBe(test[0]);
    const small = await createMathTasks({ train_path: path, test_size: 2 });
    expect(small.size('test')).toBe(2);
  });

  it('serves an evaluation-only dataset (test_path alone)', async () => {
    const path = writeJsonl('eval.jsonl', VERL_ROWS);
    const tasks = await createMathTasks({ test_path: path });
    expect(tasks.size('train')).toBe(0);
    expect(tasks.size('test')).toBe(2);
  });

  it('reads JSON arrays too', async () => {
    const path = join(dir, 'rows.json');
    writeFileSync(path, JSON.stringify(VERL_ROWS));
    const tasks = await createMathTasks({ train_path: path, test_path: path });
    expect(tasks.size('train')).toBe(2);
  });

  it('turns parquet values into JSON (int64 → number, bytes → text)', () => {
    expect(toJson({ a: 5n, b: new Uint8Array([104, 105]), c: [1n, null], d: 2n ** 70n, e: NaN })).toEqual({ a: 5, b: 'hi', c: [1, null], d: '1180591620717411303424', e: null });
  });
});
