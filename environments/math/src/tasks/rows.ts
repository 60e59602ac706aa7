/**
 * Reading dataset files (JSONL, JSON arrays or parquet) into plain JSON rows, and turning rows in the
 * OpenTinker / verl layout into tasks.
 */
import { readFile } from 'node:fs/promises';
import type { JsonObject, JsonValue } from '@opentinker/env-sdk';
import { groundTruthAnswer } from '../grader/grade';
import { lastHashAnswer, lastBoxed } from '../grader/extract';
import { BOXED_INSTRUCTION } from './synthetic';

/** A chat message of a task's prompt. */
export interface PromptMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

/** One math task, as served by the task set and passed to `reset`. JSON-serialisable. */
export interface MathTask {
  split: 'train' | 'test';
  /** Position in its split. */
  index: number;
  /** The chat messages to send (without the environment's optional system prompt). */
  prompt: PromptMessage[];
  /** The problem text alone (from `extra_info.question`, else the last user message). */
  question: string;
  /** The reference answer (already reduced from a full solution when needed). */
  ground_truth: string;
  /** Which answer convention applies (`openai/gsm8k`, `DigitalLearningGmbH/MATH-lighteval`, …). */
  data_source: string;
  /** The row's `extra_info`, passed along as is. */
  extra_info: JsonObject;
  /** Other columns of the row (`ability`, `level`, `type`, `reward_model.style`…). */
  metadata: JsonObject;
}

/** A row that could not become a task, with its 1-based row number. */
export interface InvalidRow {
  row: number;
  reason: string;
}

/**
 * Reads a JSONL / JSON / parquet file into JSON rows (parquet int64 → number, bytes → string). Row
 * numbers are 1-based: the line number for JSONL, the row position for JSON arrays and parquet.
 */
export async function readRows(path: string): Promise<Array<{ row: number; value: unknown; error?: string }>> {
  const buffer = await readFile(path);
  if (/\.parquet$/i.test(path) || isParquet(buffer)) {
    const { parquetReadObjects } = await import('hyparquet');
    const file = buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;
    const objects = await parquetReadObjects({ file });
    return objects.map((value, i) => ({ row: i + 1, value: toJson(value) }));
  }
  const text = buffer.toString('utf8').replace(/^\uFEFF/, '');
  const trimmed = text.trimStart();
  if (trimmed.startsWith('[')) {
    const parsed: unknown = JSON.parse(trimmed);
    if (!Array.isArray(parsed)) throw new Error('a JSON dataset must be an array of rows');
    return parsed.map((value, i) => ({ row: i + 1, value }));
  }
  const out: Array<{ row: number; value: unknown; error?: string }> = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === '') continue;
    try {
      out.push({ row: i + 1, value: JSON.parse(line) });
    } catch (e) {
      out.push({ row: i + 1, value: null, error: `line ${i + 1} is not JSON (${(e as Error).message})` });
    }
  }
  return out;
}

function isParquet(buffer: Buffer): boolean {
  return buffer.length >= 8 && buffer.subarray(0, 4).toString('latin1') === 'PAR1';
}

/** Plain JSON: bigint → number (or string when unsafe), bytes → UTF-8 string, dates → ISO strings. */
export function toJson(value: unknown, depth = 0): JsonValue {
  if (depth > 64) return null;
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (Array.isArray(value) || ArrayBuffer.isView(value)) return Array.from(value as ArrayLike<unknown>, (v) => toJson(v, depth + 1));
  if (typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = toJson(v, depth + 1);
    return out;
  }
  return null;
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);
const KNOWN_COLUMNS = new Set(['prompt', 'reward_model', 'data_source', 'extra_info', 'ground_truth']);

/**
 * Turns one dataset row into a task, or explains why it cannot.
 *
 * Prompt: `prompt` (a list of `{role, content}` or a string); failing that, a `question` or `problem`
 * column with the boxed instruction appended. Ground truth, first found: `reward_model.ground_truth`,
 * `ground_truth`, `extra_info.ground_truth`, then `answer` (GSM8K `#### n` extracted), then a MATH
 * `solution`'s last `\boxed{}`.
 */
export function rowToTask(value: unknown, split: 'train' | 'test', index: number): MathTask | { error: string } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { error: 'not an object' };
  const row = value as Record<string, JsonValue>;
  const extra = isObject(row.extra_info) ? (row.extra_info as JsonObject) : {};
  const rewardModel = isObject(row.reward_model) ? (row.reward_model as JsonObject) : {};

  let prompt: PromptMessage[] | null = null;
  const raw = row.prompt;
  if (typeof raw === 'string' && raw.trim() !== '') prompt = [{ role: 'user', content: raw }];
  else if (Array.isArray(raw) && raw.length > 0) {
    const messages = raw.map((m) =>
      isObject(m) && typeof (m as JsonObject).content === 'string' && ROLES.has(String((m as JsonObject).role))
        ? ({ role: (m as JsonObject).role, content: (m as JsonObject).content } as PromptMessage)
        : null,
    );
    if (messages.every((m) => m !== null) && messages[messages.length - 1]!.role === 'user') prompt = messages as PromptMessage[];
    else return { error: 'prompt is not a list of {role, content} messages ending with a user message' };
  } else if (raw !== undefined && raw !== null) {
    return { error: 'prompt is empty or not a string / list of messages' };
  }
  const questionColumn = [row.question, row.problem].find((q) => typeof q === 'string' && q.trim() !== '') as string | undefined;
  if (!prompt && questionColumn) prompt = [{ role: 'user', content: `${questionColumn.trim()} ${BOXED_INSTRUCTION}` }];
  if (!prompt) return { error: 'no prompt' };

  let truth: string | null = null;
  for (const candidate of [rewardModel.ground_truth, row.ground_truth, extra.ground_truth]) {
    truth = groundTruthAnswer(Array.isArray(candidate) && candidate.length > 0 ? candidate[0] : candidate);
    if (truth !== null) break;
  }
  if (truth === null && typeof row.answer === 'string') truth = lastHashAnswer(row.answer) ?? groundTruthAnswer(row.answer);
  if (truth === null && typeof row.answer === 'number') truth = groundTruthAnswer(row.answer);
  if (truth === null && typeof row.solution === 'string') truth = lastBoxed(row.solution);
  if (truth === null) return { error: 'no ground truth (reward_model.ground_truth, ground_truth, extra_info.ground_truth or answer)' };

  const lastUser = [...prompt].reverse().find((m) => m.role === 'user')!;
  const question = typeof extra.question === 'string' && extra.question.trim() !== '' ? extra.question : (questionColumn ?? lastUser.content);
  const metadata: JsonObject = {};
  for (const [k, v] of Object.entries(row)) if (!KNOWN_COLUMNS.has(k)) metadata[k] = v;
  if (typeof rewardModel.style === 'string') metadata.reward_style = rewardModel.style;
  return {
    split,
    index,
    prompt,
    question,
    ground_truth: truth,
    data_source: typeof row.data_source === 'string' && row.data_source !== '' ? row.data_source : 'unknown',
    extra_info: extra,
    metadata,
  };
}

/**
 * The environment's dataset row check (`validateRow`): `null` when {@link rowToTask} can make a task of
 * the row, else its reason. Upload-time and load-time checks therefore agree on every row.
 */
export function validateMathRow(row: unknown): string | null {
  const task = rowToTask(row, 'train', 0);
  return 'error' in task ? task.error : null;
}

function isObject(v: unknown): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
