/**
 * Reading a reply of the model: the Python it wants run and the final answer it gives.
 */
import { extractCodeBlocks } from '@opentinker/env-sdk';
import { readFinalAnswer } from '@opentinker/env-math';
import type { AnswerFormat } from '@opentinker/env-math';

/** The one answer format of this environment: the prompt asks for `\boxed{}`. */
export const ANSWER_FORMATS: AnswerFormat[] = ['boxed'];

/** What a reply asks for. */
export interface ParsedReply {
  /**
   * The program to run: the reply's closed ```` ```python ```` blocks (also `py`, `python3`), in
   * order, joined by a blank line (so a later block sees the names an earlier one defined); null
   * when there is none or all are blank.
   */
  code: string | null;
  /** How many non-blank Python blocks the reply has. */
  blocks: number;
  /**
   * The final answer: the content of the last `\boxed{…}` the reply states as its own, read by the
   * math grader's `readFinalAnswer` — not one in code (fenced, even unclosed, or inline: a
   * `print("\\boxed{5}")` is not an answer), in a block quote or a quotation, or in a
   * `<think>…</think>` thought; null when there is none, it is blank, or a box never closes. Whether
   * the answer can be credited (one answer, not hedged or taken back) is the grader's call.
   */
  answer: string | null;
}

/**
 * Parses a reply. Never throws: any string (or non-string) gives a result.
 *
 * @example
 * ```ts
 * parseReply('Let me compute.\n```python\nprint(6*7)\n```'); // { code: 'print(6*7)', blocks: 1, answer: null }
 * parseReply('So the answer is \\boxed{42}.');                // { code: null, blocks: 0, answer: '42' }
 * ```
 */
export function parseReply(text: unknown): ParsedReply {
  if (typeof text !== 'string') return { code: null, blocks: 0, answer: null };
  const blocks = extractCodeBlocks(text, 'python').filter((b) => b.trim() !== '');
  const { answer } = readFinalAnswer(text, null, { formats: ANSWER_FORMATS });
  return {
    code: blocks.length > 0 ? blocks.join('\n\n') : null,
    blocks: blocks.length,
    answer,
  };
}
