/**
 * The supervised warm-up before RL: imitate a response rendered from each task's fields (`sft.target`),
 * placed after the rendered prompt; the loss covers the response and its stop token only.
 */
import { crossEntropyCoefficients, padBatch, type LossCoefficients, type TokenBatch } from '@opentinker/engine';

const FIELD = /\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}/g;

/**
 * `sft.target` with each `{field}` (or `{a.b}` path) replaced by the task's value; other braces stay,
 * so `\boxed{{ground_truth}}` renders as `\boxed{42}`. A missing or non-scalar field is an error naming it.
 *
 * @example
 * ```ts
 * renderTarget('\\boxed{{ground_truth}}', { ground_truth: '42' }); // '\\boxed{42}'
 * ```
 */
export function renderTarget(template: string, task: unknown): string {
  return template.replace(FIELD, (_, path: string) => {
    let value: unknown = task;
    for (const key of path.split('.')) {
      value = value !== null && typeof value === 'object' && Object.prototype.hasOwnProperty.call(value, key) ? (value as Record<string, unknown>)[key] : undefined;
    }
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    throw new Error(`sft.target: the task has no text field ${path}${value === undefined ? '' : ` (it is ${value === null ? 'null' : typeof value})`}`);
  });
}

/** One imitation example: the prompt as the policy sees it, then the response to learn (stop token included). */
export interface SftExample {
  promptIds: number[];
  responseIds: number[];
}

/**
 * The padded batch of examples and its cross-entropy coefficients: the mean negative log-likelihood of
 * the response tokens (token-aligned, so the prompt's tokens get no loss).
 */
export function sftBatch(examples: readonly SftExample[], padId: number): { batch: TokenBatch; coefficients: LossCoefficients; tokens: number } {
  const batch = padBatch(
    examples.map((e) => [...e.promptIds, ...e.responseIds]),
    { padId },
  );
  const lossMask = new Float32Array(batch.batchSize * batch.seqLen);
  let tokens = 0;
  examples.forEach((e, b) => {
    for (let t = e.promptIds.length; t < e.promptIds.length + e.responseIds.length; t++) lossMask[b * batch.seqLen + t] = 1;
    tokens += e.responseIds.length;
  });
  return { batch, coefficients: crossEntropyCoefficients(batch, lossMask), tokens };
}
