import { z } from 'zod';
import { AppError } from './app-error';
import { ZodBodyPipe, ZodQueryPipe } from './zod-validation.pipe';

let splits = 0;

const Query = z
  .object({
    limit: z.coerce.number().int().max(100).default(10),
    tags: z
      .string()
      .transform((value) => (splits++, value.split(',')))
      .pipe(z.array(z.enum(['a', 'b'])))
      .optional(),
  })
  .strict();

describe('ZodQueryPipe', () => {
  beforeEach(() => (splits = 0));

  it('parses a distinct query once and answers the same frozen output after', () => {
    const pipe = new ZodQueryPipe(Query);
    const first = pipe.transform({ limit: '5', tags: 'a,b' });
    expect(first).toEqual({ limit: 5, tags: ['a', 'b'] });
    expect(pipe.transform({ limit: '5', tags: 'a,b' })).toBe(first);
    expect(splits).toBe(1);
    expect(() => (first.limit = 6)).toThrow(TypeError);
    expect(() => (first.tags as string[]).push('c')).toThrow(TypeError);
    // Another value is parsed on its own; defaults are filled in.
    expect(pipe.transform({ limit: '6', tags: 'a,b' })).toEqual({ limit: 6, tags: ['a', 'b'] });
    expect(splits).toBe(2);
    expect(pipe.transform({})).toEqual({ limit: 10 });
    // A route without a query string gets its defaults too.
    expect(pipe.transform(undefined)).toEqual({ limit: 10 });
  });

  it('refuses a bad query every time it is asked, naming the parameter', () => {
    const pipe = new ZodQueryPipe(Query);
    for (let i = 0; i < 2; i++) {
      expect(() => pipe.transform({ limit: '500' })).toThrow(expect.objectContaining({ code: 'OT_ERR_VALIDATION', field: 'limit' }));
      expect(() => pipe.transform({ limit: 'ten' })).toThrow(expect.objectContaining({ field: 'limit' }));
      expect(() => pipe.transform({ color: 'red' })).toThrow(expect.objectContaining({ field: 'color', message: 'Unknown field color' }));
    }
  });
});

describe('ZodBodyPipe', () => {
  const pipe = new ZodBodyPipe(z.object({ name: z.string().min(1), role: z.enum(['user', 'admin']).default('user') }).strict());

  it('answers the schema’s output, never a remembered one', () => {
    const body = pipe.transform({ name: 'alice' });
    expect(body).toEqual({ name: 'alice', role: 'user' });
    expect(Object.isFrozen(body)).toBe(false);
    expect(pipe.transform({ name: 'alice' })).not.toBe(body);
  });

  it.each([
    [{ name: '' }, 'name'],
    [{ name: 'a', role: 'root' }, 'role'],
    [{ name: 'a', colour: 'red' }, 'colour'],
    [[], 'body'],
    [null, 'body'],
    [undefined, 'body'],
  ])('refuses %j naming %s', (value, field) => {
    let error: unknown;
    try {
      pipe.transform(value);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: 'OT_ERR_VALIDATION', field });
  });
});
