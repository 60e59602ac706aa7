/**
 * Reading a reply of the model: the Python it wants run and the final answer it gives.
 */
import { extractCodeBlocks } from '@opentinker/env-sdk';
import { lastBoxed } from '@opentinker/env-math';

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
   * The final answer: the content of the last `\boxed{…}` written outside fenced blocks (so a
   * `print("\\boxed{5}")` in code is not an answer); null when there is none or it is blank.
   */
  answer: string | null;
}

/** A closed fenced block of any language (the same fence rule as the SDK's `extractCodeBlocks`). */
const FENCED_BLOCK = /```[ \t]*[A-Za-z0-9_+-]*[^\n]*\n[\s\S]*?```/g;

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
  const prose = text.replace(FENCED_BLOCK, '\n');
  const boxed = lastBoxed(prose);
  return {
    code: blocks.length > 0 ? blocks.join('\n\n') : null,
    blocks: blocks.length,
    answer: boxed !== null && boxed.trim() !== '' ? boxed.trim() : null,
  };
}
