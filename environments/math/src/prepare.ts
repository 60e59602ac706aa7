/**
 * The converter behind `opentinker data prepare`: GSM8K-style or MATH-style rows → the verl layout
 * JSONL that the math environment loads.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { JsonObject } from '@opentinker/env-sdk';
import { lastBoxed, lastHashAnswer } from './grader/extract';
import { readRows } from './tasks/rows';
import { BOXED_INSTRUCTION } from './tasks/synthetic';

export interface PrepareOptions {
  /**
   * `gsm8k`: rows with `question` and `answer` (a worked solution ending in `#### n`);
   * `math`: rows with `problem` and `solution` (the answer in the last `\boxed{}`; an `answer` column,
   * when present, wins); `auto` (default): decided per row by which columns it has.
   */
  format?: 'gsm8k' | 'math' | 'auto';
  /** Written to `extra_info.split`. Default `'train'`. */
  split?: string;
  /** Overrides the instruction appended to each question. */
  instruction?: string;
}

export interface PrepareResult {
  /** Rows written. */
  rows: number;
  /** Rows left out (missing columns, or no extractable answer). */
  skipped: number;
}

/** verl's GSM8K instruction (its answers are graded after `####`). */
export const GSM8K_INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".';
export const GSM8K_DATA_SOURCE = 'openai/gsm8k';
export const MATH_DATA_SOURCE = 'DigitalLearningGmbH/MATH-lighteval';

/**
 * Converts a GSM8K-style or MATH-style JSONL / JSON / parquet file into verl-layout JSONL:
 * `{ data_source, prompt: [{role: 'user', content}], ability: 'math', reward_model: {style: 'rule',
 * ground_truth}, extra_info: {split, index, question, answer} }` (plus `level` / `type` for MATH rows).
 * GSM8K rows get `data_source: 'openai/gsm8k'` and verl's `####` instruction; MATH rows
 * `DigitalLearningGmbH/MATH-lighteval` and the `\boxed{}` instruction.
 *
 * @example
 * ```ts
 * await prepareDataset('gsm8k-train.parquet', 'data/gsm8k-train.jsonl', { format: 'gsm8k' });
 * // { rows: 7473, skipped: 0 }
 * ```
 */
export async function prepareDataset(input: string, output: string, options: PrepareOptions = {}): Promise<PrepareResult> {
  const format = options.format ?? 'auto';
  const split = options.split ?? 'train';
  const rows = await readRows(input);
  const lines: string[] = [];
  let skipped = 0;
  for (const { value, error } of rows) {
    const row = !error && value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
    const kind = row ? (format === 'auto' ? detect(row) : format) : null;
    const converted = row && kind ? convert(row, kind, split, lines.length, options.instruction) : null;
    if (converted) lines.push(JSON.stringify(converted));
    else skipped++;
  }
  await mkdir(dirname(output), { recursive: true });
  await writeFile(output, lines.length > 0 ? `${lines.join('\n')}\n` : '');
  return { rows: lines.length, skipped };
}

function detect(row: Record<string, unknown>): 'gsm8k' | 'math' | null {
  if (typeof row.problem === 'string' && (typeof row.solution === 'string' || typeof row.answer === 'string')) return 'math';
  if (typeof row.question === 'string' && typeof row.answer === 'string') return 'gsm8k';
  return null;
}

function convert(row: Record<string, unknown>, kind: 'gsm8k' | 'math', split: string, index: number, instruction?: string): JsonObject | null {
  if (kind === 'gsm8k') {
    const question = str(row.question);
    const answer = str(row.answer);
    const hash = answer === null ? null : lastHashAnswer(answer);
    if (!question || !answer || hash === null) return null;
    // verl drops thousands separators from GSM8K answers.
    const truth = /^-?[\d,]+(?:\.\d+)?$/.test(hash) ? hash.replace(/,/g, '') : hash;
    return {
      data_source: GSM8K_DATA_SOURCE,
      prompt: [{ role: 'user', content: `${question.trim()} ${instruction ?? GSM8K_INSTRUCTION}` }],
      ability: 'math',
      reward_model: { style: 'rule', ground_truth: truth },
      extra_info: { split, index, question: question.trim(), answer },
    };
  }
  const problem = str(row.problem);
  const solution = str(row.solution);
  const answerColumn = str(row.answer);
  const truth = answerColumn?.trim() || (solution ? lastBoxed(solution) : null);
  if (!problem || !truth) return null;
  const extra: JsonObject = { split, index, question: problem.trim(), answer: solution ?? answerColumn ?? '' };
  const out: JsonObject = {
    data_source: MATH_DATA_SOURCE,
    prompt: [{ role: 'user', content: `${problem.trim()} ${instruction ?? BOXED_INSTRUCTION}` }],
    ability: 'math',
    reward_model: { style: 'rule', ground_truth: truth },
    extra_info: extra,
  };
  if (typeof row.level === 'string' || typeof row.level === 'number') out.level = row.level;
  if (typeof row.type === 'string') out.type = row.type;
  return out;
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v.trim() !== '' ? v : null;
}
