import { z } from 'zod';
import { iso } from '../core/columns';
import { SESSION_CALL_STATES, SESSION_OPS } from './session-call.entity';
import type { SessionCallEntity, SessionOp } from './session-call.entity';

export const WaitQuery = z
  .object({ wait_seconds: z.coerce.number().int().min(0).max(300).default(60).describe('Seconds to wait for the answer before replying 202 with the call still open') })
  .strict();

export const ListCallsQuery = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(100) }).strict();

/** A call's body; its `args` are checked by the operation's schema (`session-call-args.ts`) once the job is known to be a session. */
export const SessionCallRequest = z
  .object({
    call_id: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9._:-]+$/, { message: 'call_id may contain letters, digits and . _ : -' })
      .describe('Your id for this call, unique within the session: a retry with the same id returns the first call (never runs it twice)')
      .meta({ example: 'step-0001' }),
    op: z.enum(SESSION_OPS),
    args: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        'train_step: {tasks | indices | batch_size}; validate: {tasks | indices | size}; sample: {messages, max_tokens, temperature, top_p, seed}; save_checkpoint, close: {}',
      )
      .meta({ example: { batch_size: 8 } }),
  })
  .strict()
  .meta({ id: 'SessionCallRequest' });
export type SessionCallRequest = z.output<typeof SessionCallRequest>;

export const SessionCallDto = z
  .object({
    call_id: z.string(),
    op: z.enum(SESSION_OPS),
    args: z.record(z.string(), z.unknown()),
    state: z.enum(SESSION_CALL_STATES),
    result: z.unknown().describe('What the operation returned (metrics, checkpoint, text); null until then'),
    error: z.string().nullable(),
    created_at: z.iso.datetime(),
    started_at: z.iso.datetime().nullable(),
    finished_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'SessionCallDto' });
export type SessionCallDto = z.output<typeof SessionCallDto>;

export function sessionCallDto(c: SessionCallEntity): SessionCallDto {
  return {
    call_id: c.callId,
    op: c.op as SessionOp,
    args: c.args,
    state: c.state,
    result: c.result ?? null,
    error: c.error,
    created_at: iso(c.createdAt)!,
    started_at: iso(c.startedAt),
    finished_at: iso(c.finishedAt),
  };
}
