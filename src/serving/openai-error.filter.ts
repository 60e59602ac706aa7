import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import type { ErrorBody } from '../core/app-error';
import { mapError } from '../core/error.filter';

/** OpenAI's error `type` for an HTTP status, as its SDKs expect it. */
export function openAiErrorType(status: number): string {
  if (status === 400 || status === 413 || status === 415 || status === 422) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  return 'server_error';
}

/**
 * Our error body plus OpenAI's `error` object. OpenAI SDKs read `error.message`, `error.type`,
 * `error.code` and `error.param`; our own client reads the top-level `code` and `field`. Sending both
 * keeps the one stable error format (same codes, same fields) and lets any OpenAI client show the
 * message instead of a bare status.
 *
 * @example
 * ```json
 * { "statusCode": 404, "code": "OT_ERR_MODEL_NOT_FOUND", "message": "Model \"x\" not found: …", "field": "model",
 *   "error": { "message": "Model \"x\" not found: …", "type": "not_found_error", "code": "OT_ERR_MODEL_NOT_FOUND", "param": "model" } }
 * ```
 */
export function openAiErrorBody(body: ErrorBody) {
  return { ...body, error: { message: body.message, type: openAiErrorType(body.statusCode), code: body.code, param: body.field ?? null } };
}

interface ReplyLike {
  sent?: boolean;
  raw?: { headersSent?: boolean };
  status(code: number): ReplyLike;
  header(name: string, value: string): ReplyLike;
  send(body: unknown): unknown;
}

/** The OpenAI-compatible routes' filter (also sees the auth guard's 401). */
@Catch()
export class OpenAiErrorFilter implements ExceptionFilter {
  constructor(private readonly config: AppConfig) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw exception;
    const reply = host.switchToHttp().getResponse<ReplyLike>();
    if (reply.sent || reply.raw?.headersSent) return;
    const { body, headers } = mapError(exception, this.config.hostPaths);
    for (const [name, value] of Object.entries(headers)) reply.header(name, value);
    reply.status(body.statusCode).send(openAiErrorBody(body));
  }
}
