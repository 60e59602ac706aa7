import { isOpenTinkerError } from '@opentinker/client';

/**
 * Exit codes of the client commands, so scripts can tell a typo from an outage. Stable: documented
 * in docs/api.md (CLI).
 */
export const EXIT = {
  OK: 0,
  /** The server refused the request, or the watched job failed or was cancelled. */
  FAILED: 1,
  /** Malformed arguments or job config: nothing was sent. */
  USAGE: 2,
  /** The server could not be reached. */
  UNREACHABLE: 3,
  /** Not logged in, or the key was refused. */
  AUTH: 4,
  /** Stopped with Ctrl-C. */
  INTERRUPTED: 130,
} as const;

/**
 * A failure the CLI explains itself: the message is for the user as is, `exitCode` says what kind.
 *
 * @example
 * ```ts
 * throw new CliError(`--limit must be a whole number from 1 to 100, got "${value}"`, EXIT.USAGE);
 * ```
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.FAILED,
    readonly code?: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** What to tell the user about any failure, with hints for the common mistakes. */
export function explain(error: unknown, ctx: { url: string; key?: string }): CliError {
  if (error instanceof CliError) return error;
  if (isOpenTinkerError(error)) {
    switch (error.code) {
      case 'OT_ERR_CONNECTION':
        return new CliError(
          `Cannot reach the OpenTinker server at ${ctx.url} (${causeOf(error.message)}). Is it running? ` +
            'Start one with `opentinker serve`, or point to another with --url or OPENTINKER_URL.',
          EXIT.UNREACHABLE,
          error.code,
        );
      case 'OT_ERR_UNAUTHENTICATED':
        return new CliError(
          `The server at ${ctx.url} refused the API key${ctx.key ? ` ${maskKey(ctx.key)}` : ''}: ${error.message}. ` + 'Run `opentinker login`, or set OPENTINKER_API_KEY.',
          EXIT.AUTH,
          error.code,
        );
      case 'OT_ERR_FORBIDDEN':
        return new CliError(`${error.message} (this needs an admin's API key)`, EXIT.FAILED, error.code);
      case 'OT_ERR_AUTH_RATE_LIMITED':
        return new CliError(`${error.message}. Too many failed logins from this address: wait a minute and check the key.`, EXIT.AUTH, error.code);
      default:
        return new CliError(
          error.code === 'OT_ERR_VALIDATION' && error.field && !error.message.includes(error.field) ? `${error.message} (field: ${error.field})` : error.message,
          EXIT.FAILED,
          error.code,
          error.field,
        );
    }
  }
  return new CliError((error as Error)?.message ?? String(error), EXIT.FAILED);
}

/** The first characters of a key, enough to recognise it, never the secret. */
export function maskKey(key: string): string {
  return key.length > 12 ? `${key.slice(0, 12)}…` : `${key.slice(0, 4)}…`;
}

function causeOf(message: string): string {
  const m = /\(([^()]*)\)$/.exec(message);
  return m ? m[1] : message;
}
