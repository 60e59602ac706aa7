import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { parseConfig } from '@opentinker/env-sdk';
import math from './index';
import { GSM8K_INSTRUCTION, prepareDataset } from './prepare';

const dir = mkdtempSync(join(tmpdir(), 'env-math-prepare-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const GSM8K_ROWS = [
  {
    question: 'Natalia sold clips to 48 friends in April and half as many in May. How many clips in total?',
    answer: 'In May she sold 48/2 = <<48/2=24>>24.\nIn total 48+24 = <<48+24=72>>72.\n#### 72',
  },
  { question: 'A house costs $1,200 more than a car worth $800. What does the house cost?', answer: '800 + 1200 = 2000\n#### 2,000' },
  { question: 'Broken row without an answer marker', answer: 'no marker here' },
];
const MATH_ROWS = [
  { problem: 'What is $\\frac{1}{2}+\\frac{1}{4}$?', level: 'Level 1', type: 'Prealgebra', solution: 'We have $\\frac{2}{4}+\\frac14=\\boxed{\\frac{3}{4}}$.' },
  { problem: 'Solve $x^2=4$ for $x>0$.', level: 'Level 2', type: 'Algebra', solution: 'So $x=\\boxed{2}$.' },
  { problem: 'No box in the solution.', level: 'Level 1', type: 'Algebra', solution: 'It is 3.' },
];

const readJsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

describe('prepareDataset', () => {
  it('converts GSM8K JSONL into verl rows with #### ground truths (commas dropped)', async () => {
    const input = join(dir, 'gsm8k.jsonl');
    writeFileSync(input, GSM8K_ROWS.map((r) => JSON.stringify(r)).join('\n'));
    const output = join(dir, 'out', 'gsm8k-verl.jsonl');
    expect(await prepareDataset(input, output, { format: 'gsm8k' })).toEqual({ rows: 2, skipped: 1 });
    const rows = readJsonl(output);
    expect(rows[0]).toEqual({
      data_source: 'openai/gsm8k',
      prompt: [{ role: 'user', content: `${GSM8K_ROWS[0].question} ${GSM8K_INSTRUCTION}` }],
      ability: 'math',
      reward_model: { style: 'rule', ground_truth: '72' },
      extra_info: { split: 'train', index: 0, question: GSM8K_ROWS[0].question, answer: GSM8K_ROWS[0].answer },
    });
    expect(rows[1].reward_model.ground_truth).toBe('2000');
    expect(rows[1].extra_info.index).toBe(1);
  });

  it('converts MATH parquet into verl rows with boxed ground truths, keeping level and type', async () => {
    const input = join(dir, 'math.parquet');
    writeFileSync(
      input,
      Buffer.from(
        parquetWriteBuffer({
          columnData: ['problem', 'level', 'type', 'solution'].map((name) => ({ name, data: MATH_ROWS.map((r) => r[name as keyof (typeof MATH_ROWS)[0]]) })),
        }),
      ),
    );
    const output = join(dir, 'math-verl.jsonl');
    expect(await prepareDataset(input, output, { format: 'auto', split: 'test' })).toEqual({ rows: 2, skipped: 1 });
    const rows = readJsonl(output);
    expect(rows[0]).toMatchObject({
      data_source: 'DigitalLearningGmbH/MATH-lighteval',
      prompt: [{ role: 'user', content: "What is $\\frac{1}{2}+\\frac{1}{4}$? Let's think step by step and output the final answer within \\boxed{}." }],
      reward_model: { style: 'rule', ground_truth: '\\frac{3}{4}' },
      extra_info: { split: 'test', index: 0, question: MATH_ROWS[0].problem, answer: MATH_ROWS[0].solution },
      level: 'Level 1',
      type: 'Prealgebra',
    });
    expect(rows[1].reward_model.ground_truth).toBe('2');
  });

  it('detects the format per row in auto mode and skips rows of neither kind', async () => {
    const input = join(dir, 'mixed.jsonl');
    writeFileSync(input, [GSM8K_ROWS[0], MATH_ROWS[1], { foo: 1 }, 'garbage'].map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n'));
    const output = join(dir, 'mixed-verl.jsonl');
    expect(await prepareDataset(input, output)).toEqual({ rows: 2, skipped: 2 });
    expect(readJsonl(output).map((r) => r.data_source)).toEqual(['openai/gsm8k', 'DigitalLearningGmbH/MATH-lighteval']);
  });

  it('writes files the environment loads and grades end to end', async () => {
    const input = join(dir, 'gsm8k-e2e.jsonl');
    writeFileSync(input, GSM8K_ROWS.map((r) => JSON.stringify(r)).join('\n'));
    const output = join(dir, 'gsm8k-e2e-verl.jsonl');
    await prepareDataset(input, output, { format: 'gsm8k' });
    const inst = await math.create(parseConfig(math, { train_path: output, test_path: output }), { workDir: dir, log: () => undefined });
    const episode = inst.newEpisode();
    const task = await inst.tasks.get('test', 1);
    const messages = await episode.reset(task, 0);
    expect(messages[0].content).toContain('$1,200');
    const result = await episode.step('The car is 800 and the house costs 1200 more.\n#### 2,000');
    expect(result).toMatchObject({ reward: 1, done: true, info: { correct: true, extracted: '2,000', ground_truth: '2000', data_source: 'openai/gsm8k' } });
  });

  it('fails clearly on a missing input file', async () => {
    await expect(prepareDataset(join(dir, 'nope.jsonl'), join(dir, 'x.jsonl'), {})).rejects.toThrow(/ENOENT|no such file/);
  });
});
