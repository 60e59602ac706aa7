import { z } from 'zod';

/** The API's request to a model check process (`model-check.main.ts`), and its reply: each parsed on receipt. */
export const ModelCheckRequest = z.object({ dir: z.string() });
export type ModelCheckRequest = z.output<typeof ModelCheckRequest>;

export const ModelCheckReply = z.union([z.object({ ok: z.object({ modelType: z.string() }) }), z.object({ failure: z.string() })]);
export type ModelCheckReply = z.output<typeof ModelCheckReply>;
