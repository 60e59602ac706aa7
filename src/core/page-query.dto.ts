import { z } from 'zod';

/** `?page=&limit=` of the paged listings (jobs, datasets). */
export const PageQuery = z
  .object({
    page: z.coerce.number().int().min(1).default(1),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict();
export type PageQuery = z.output<typeof PageQuery>;

/** A page of `item`s, as the paged listings answer. */
export const pageOf = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), page: z.number().int(), limit: z.number().int(), total: z.number().int() });
