import { BadRequestException } from '@nestjs/common';
import { Transform, Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, Max } from 'class-validator';
import { QueryValidationPipe } from './query-validation-pipe';

let transforms = 0;

class Query {
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Max(100)
  limit: number = 10;

  @IsOptional()
  @Transform(({ value }) => (transforms++, typeof value === 'string' ? value.split(',') : value))
  @IsIn(['a', 'b'], { each: true })
  tags?: string[];
}

describe('QueryValidationPipe', () => {
  const pipe = new QueryValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true });
  const query = { type: 'query' as const, metatype: Query, data: undefined };
  beforeEach(() => (transforms = 0));

  it('validates a distinct query once and answers the same frozen instance after', async () => {
    const first = (await pipe.transform({ limit: '5', tags: 'a,b' }, query)) as Query;
    expect(first).toBeInstanceOf(Query);
    expect(first).toEqual({ limit: 5, tags: ['a', 'b'] });
    expect(await pipe.transform({ limit: '5', tags: 'a,b' }, query)).toBe(first);
    expect(transforms).toBe(1);
    expect(() => (first.limit = 6)).toThrow(TypeError);
    expect(() => first.tags!.push('c')).toThrow(TypeError);
    // Another value, or the same value for another parameter kind, is validated on its own.
    expect(await pipe.transform({ limit: '6', tags: 'a,b' }, query)).toEqual({ limit: 6, tags: ['a', 'b'] });
    expect(transforms).toBe(2);
    const body = await pipe.transform({ limit: '5', tags: 'a,b' }, { ...query, type: 'body' });
    expect(body).not.toBe(first);
    expect(Object.isFrozen(body)).toBe(false);
  });

  it('refuses a bad query every time it is asked', async () => {
    for (let i = 0; i < 2; i++) {
      await expect(pipe.transform({ limit: '500' }, query)).rejects.toBeInstanceOf(BadRequestException);
      await expect(pipe.transform({ color: 'red' }, query)).rejects.toBeInstanceOf(BadRequestException);
    }
  });
});
