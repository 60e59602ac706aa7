import { Message } from '@opentinker/env-sdk';
import { z } from 'zod';
import { parseOrThrow } from '../core/zod-error';
import type { SessionOp } from './session-call.entity';

/** Which tasks a call is about: given inline, by index in a split, or the next ones from the session's cursor. */
const taskChoice = {
  tasks: z.array(z.unknown()).min(1).max(4096).optional().describe("Tasks in the environment's task shape (e.g. math: prompt + ground_truth)"),
  indices: z.array(z.number().int().min(0)).min(1).max(4096).optional().describe("Indices in the environment's split"),
};
const oneChoice = (a: { tasks?: unknown; indices?: unknown }) => a.tasks === undefined || a.indices === undefined;
const oneChoiceError = { message: 'Give tasks or indices, not both', path: ['indices'] };

/** A chat message as environments speak them, bounded. */
const message = Message.extend({ content: z.string().max(100_000) }).strict();

/** The arguments of each session operation, validated by the API before the call is recorded. */
export const SESSION_CALL_ARGS = {
  train_step: z
    .object({ ...taskChoice, batch_size: z.number().int().min(1).max(4096).optional().describe('Next tasks from the train split (default: the spec’s batch_size)') })
    .strict()
    .refine(oneChoice, oneChoiceError),
  validate: z
    .object({ ...taskChoice, size: z.number().int().min(1).max(1_000_000).optional().describe('First N test tasks (default: the spec’s val_batch_size)') })
    .strict()
    .refine(oneChoice, oneChoiceError),
  save_checkpoint: z.object({}).strict(),
  sample: z
    .object({
      messages: z.array(message).min(1).max(256),
      max_tokens: z.number().int().min(1).max(32768).optional(),
      temperature: z.number().min(0).max(10).optional(),
      top_p: z.number().gt(0).max(1).optional(),
      seed: z.number().int().min(0).optional(),
    })
    .strict(),
  close: z.object({}).strict(),
} satisfies Record<SessionOp, z.ZodType>;

/** Validates a call's args; errors name the field as `args.<path>`. */
export function parseCallArgs(op: SessionOp, args: unknown): Record<string, unknown> {
  return parseOrThrow(SESSION_CALL_ARGS[op], args ?? {}, 'args') as Record<string, unknown>;
}
