import { dottedPath, tooDeepAt } from '@opentinker/env-sdk';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, ErrorCode } from './app-error';

/** A JSON body nested past the ceiling: `400 OT_ERR_JSON_TOO_DEEP` naming the field (Fastify handlers read `statusCode`). */
export class JsonTooDeepError extends AppError {
  readonly statusCode = 400;

  constructor(path: Array<string | number>, maxDepth: number) {
    const field = dottedPath(path);
    super(ErrorCode.JSON_TOO_DEEP, `${field || 'The body'} nests objects and arrays deeper than ${maxDepth} levels (operator setting json_max_depth)`, {
      field: field || 'body',
    });
  }
}

type Done = (error: Error | null, body?: unknown) => void;
type BodyParser = (request: FastifyRequest, body: string | Buffer, done: Done) => void;

/**
 * A JSON body parser that refuses a body nested deeper than `maxDepth` before any route, schema or hook
 * sees it. Parsing itself is Fastify's own (prototype poisoning refused); the depth is measured by a walk
 * that keeps its own stack, so no depth overflows it, and the recursive validators that run next only
 * ever get bounded values. For every JSON route of the API ({@link NestFastifyApplication.useBodyParser})
 * and of `opentinker env serve`, both protocols ({@link limitJsonDepth}).
 */
export function jsonBodyParser(fastify: FastifyInstance, maxDepth: number): BodyParser {
  const parse = fastify.getDefaultJsonParser('error', 'error') as unknown as BodyParser;
  return (request, body, done) => {
    // A DELETE names what it deletes in its URL; clients (the Tinker SDK's) send one with a JSON content type and no body.
    if (request.method === 'DELETE' && body.length === 0) return done(null, undefined);
    parse(request, body, (error, value) => {
      if (error) return done(error, undefined);
      const path = tooDeepAt(value, maxDepth);
      if (path) return done(new JsonTooDeepError(path, maxDepth), undefined);
      done(null, value);
    });
  };
}

/** Replaces a plain Fastify instance's JSON parser by {@link jsonBodyParser}. */
export function limitJsonDepth(fastify: FastifyInstance, maxDepth: number): void {
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, jsonBodyParser(fastify, maxDepth));
}
