import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { AppError, ERROR_STATUS, ErrorBody, ErrorCode } from './app-error';
import { HostPaths, NO_HOST_PATHS } from './host-paths';

/** Fastify's own error codes for requests that never reach a controller. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ErrorCode.BODY_TOO_LARGE,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
  FST_ERR_CTP_EMPTY_JSON_BODY: ErrorCode.BAD_JSON,
  FST_ERR_CTP_INVALID_JSON_BODY: ErrorCode.BAD_JSON,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ErrorCode.VALIDATION,
};

const STATUS_CODES: Partial<Record<number, ErrorCode>> = {
  400: ErrorCode.VALIDATION,
  401: ErrorCode.UNAUTHENTICATED,
  403: ErrorCode.FORBIDDEN,
  404: ErrorCode.ROUTE_NOT_FOUND,
  405: ErrorCode.METHOD_NOT_ALLOWED,
  409: ErrorCode.CONFLICT,
  413: ErrorCode.BODY_TOO_LARGE,
  415: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
  429: ErrorCode.AUTH_RATE_LIMITED,
};

export interface MappedError {
  body: ErrorBody;
  headers: Record<string, string>;
}

const logger = new Logger('Errors');

/**
 * The single place where any thrown value becomes an HTTP status and a stable error body: the filters
 * of every route (ours and the OpenAI-compatible ones) and errors sent inside an event stream come
 * through here, and so does the naming of the server's folders (`hostPaths`: the data folder reads
 * `$OPENTINKER_HOME`, the installation `<install>`) in everything a tenant reads of the answer.
 */
export function mapError(error: unknown, hostPaths: HostPaths = NO_HOST_PATHS): MappedError {
  const { body, headers } = mapUnredacted(error);
  body.message = hostPaths.redact(body.message);
  if (body.field !== undefined) body.field = hostPaths.redact(body.field);
  if (body.details !== undefined) body.details = hostPaths.redactJson(body.details);
  return { body, headers };
}

function mapUnredacted(error: unknown): MappedError {
  if (error instanceof AppError) {
    const body: ErrorBody = { statusCode: error.status, code: error.code, message: error.message };
    if (error.field !== undefined) body.field = error.field;
    if (error.details !== undefined) body.details = error.details;
    const headers: Record<string, string> = {};
    if (error.retryAfter !== undefined) headers['retry-after'] = String(Math.ceil(error.retryAfter));
    if (error.status >= 500) logger.error(`${error.code}: ${error.message}`, error.stack);
    return { body, headers };
  }
  // Nest wraps Fastify's own 4xx errors (body parsing) in an HttpException whose cause keeps the code.
  const fastifyCode = (error as { code?: unknown })?.code ?? (error as { cause?: { code?: unknown } })?.cause?.code;
  if (typeof fastifyCode === 'string' && FASTIFY_CODES[fastifyCode]) {
    const code = FASTIFY_CODES[fastifyCode];
    return plain(code, (error as Error).message);
  }
  if (error instanceof SyntaxError && (error as { statusCode?: number }).statusCode === 400) {
    return plain(ErrorCode.BAD_JSON, `Malformed JSON body: ${error.message}`);
  }
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const code = STATUS_CODES[status] ?? (status >= 500 ? ErrorCode.INTERNAL : ErrorCode.VALIDATION);
    return { body: { statusCode: status, code, message: error.message }, headers: {} };
  }
  const statusCode = (error as { statusCode?: unknown })?.statusCode;
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    const code = STATUS_CODES[statusCode] ?? ErrorCode.VALIDATION;
    return { body: { statusCode, code, message: (error as Error).message }, headers: {} };
  }
  logger.error(`Unhandled error: ${(error as Error)?.message ?? String(error)}`, (error as Error)?.stack);
  return plain(ErrorCode.INTERNAL, 'Internal server error');
}

function plain(code: ErrorCode, message: string): MappedError {
  return { body: { statusCode: ERROR_STATUS[code], code, message }, headers: {} };
}

interface ReplyLike {
  sent?: boolean;
  raw?: { headersSent?: boolean; writableEnded?: boolean };
  status(code: number): ReplyLike;
  header(name: string, value: string): ReplyLike;
  send(body: unknown): unknown;
}

export function sendError(reply: ReplyLike, error: unknown, hostPaths: HostPaths = NO_HOST_PATHS): void {
  if (reply.sent || reply.raw?.headersSent) return;
  const { body, headers } = mapError(error, hostPaths);
  for (const [name, value] of Object.entries(headers)) reply.header(name, value);
  reply.status(body.statusCode).send(body);
}

@Catch()
export class AppErrorFilter implements ExceptionFilter {
  constructor(private readonly hostPaths: HostPaths = NO_HOST_PATHS) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw exception;
    sendError(host.switchToHttp().getResponse<ReplyLike>(), exception, this.hostPaths);
  }
}
