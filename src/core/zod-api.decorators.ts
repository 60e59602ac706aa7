import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { ApiBody, ApiQuery, ApiResponse } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { API_SCHEMAS } from './openapi-schemas';
import { ZodBodyPipe, ZodQueryPipe } from './zod-validation.pipe';

/**
 * The HTTP edge's one schema language: a route's body, query and answers are zod schemas, checked with
 * them at run time and described with them in the OpenAPI document (see `openapi-schemas.ts`).
 *
 * @example
 * ```ts
 * @Post('keys')
 * @ZodResponse(201, IssuedKeyDto)
 * async createKey(@ZodBody(CreateKeyDto) body: CreateKeyDto): Promise<IssuedKeyDto> { … }
 * ```
 *
 * The body and the query are read by custom parameter decorators, not Nest's `@Body()` and `@Query()`,
 * so the Swagger module never guesses a schema from the parameter's TypeScript type.
 */
const RequestPart = createParamDecorator((part: 'body' | 'query', context: ExecutionContext) => context.switchToHttp().getRequest<FastifyRequest>()[part]);

/** Applies a method decorator from a parameter decorator (the method is defined when its parameters are decorated). */
function onMethod(target: object, key: string | symbol | undefined, decorator: MethodDecorator): void {
  decorator(target, key!, Object.getOwnPropertyDescriptor(target, key!)!);
}

/** The request body, parsed by `schema` (400 `OT_ERR_VALIDATION` naming the field), and the operation's request body in OpenAPI. */
export function ZodBody(schema: z.ZodType, description?: string): ParameterDecorator {
  return (target, key, index) => {
    RequestPart('body', new ZodBodyPipe(schema))(target, key, index);
    onMethod(target, key, ApiBody({ required: true, description, schema: API_SCHEMAS.schema(schema, 'input') as never }));
  };
}

/**
 * The query string, parsed by `schema` (a `z.object` whose keys are the parameters: `z.coerce.number()`
 * for numbers, defaults filled in), each distinct query once per route; each key is a query parameter in
 * OpenAPI, with its description.
 */
export function ZodQuery(schema: z.ZodObject): ParameterDecorator {
  return (target, key, index) => {
    RequestPart('query', new ZodQueryPipe(schema))(target, key, index);
    for (const { name, required, description, schema: property } of API_SCHEMAS.queryParameters(schema)) {
      onMethod(target, key, ApiQuery({ name, required, description, schema: property as never }));
    }
  };
}

declare const json: unique symbol;
/** A response body already written as JSON text (the job list writes pages from kept JSON): its type says what the text holds. */
export type JsonText<T> = string & { readonly [json]: T };

type Answer<T> = T | JsonText<T> | Promise<T | JsonText<T>>;

/** An answer in OpenAPI: `schema` as JSON, or no body when null. */
export function jsonResponse(status: number, schema: z.ZodType | null, description = ''): MethodDecorator & ClassDecorator {
  return ApiResponse({ status, description, ...(schema ? { schema: API_SCHEMAS.schema(schema, 'output') as never } : {}) });
}

/**
 * An answer of the route, described in OpenAPI by `schema`; the handler must return what the schema's
 * type says (checked by the compiler, not at run time: the server wrote the value).
 */
export function ZodResponse<S extends z.ZodType>(status: number, schema: S, description = '') {
  const decorator = jsonResponse(status, schema, description);
  return <F extends (...args: never[]) => Answer<z.output<S>>>(target: object, key: string | symbol, descriptor: TypedPropertyDescriptor<F>): void => {
    decorator(target, key, descriptor);
  };
}
