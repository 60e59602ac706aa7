/** Stable codes of {@link EnvironmentError}; the protocol server maps them to HTTP statuses. */
export type EnvironmentErrorCode =
  | 'ENV_INVALID_CONFIG'
  // A tenant set a key only the host may set, or a value above the host's ceiling (config-policy.ts, tenant-config.ts):
  | 'ENV_CONFIG_FORBIDDEN'
  | 'ENV_CONFIG_LIMIT'
  | 'ENV_INVALID_TASK'
  | 'ENV_NOT_RESET'
  | 'ENV_STEP_AFTER_DONE'
  | 'ENV_EPISODE_CLOSED'
  | 'ENV_SANDBOX_UNAVAILABLE'
  | 'ENV_TIMEOUT'
  | 'ENV_UNAVAILABLE'
  | 'ENV_CAPACITY'
  // Protocol-level codes a RemoteEnvironment may surface:
  | 'ENV_UNAUTHENTICATED'
  | 'ENV_BAD_REQUEST'
  | 'ENV_NO_ROUTE'
  | 'ENV_INTERNAL';

/**
 * An error an environment raises on purpose, with a stable code. Bad *actions* are not errors: they
 * get an error observation and usually a penalty, so the policy can learn from them.
 *
 * @example
 * ```ts
 * if (this.done) throw new EnvironmentError('ENV_STEP_AFTER_DONE', 'The episode is over');
 * ```
 */
export class EnvironmentError extends Error {
  constructor(
    readonly code: EnvironmentErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'EnvironmentError';
  }
}

/**
 * Whether a value is an {@link EnvironmentError}, also across copies of this package (where
 * `instanceof` would say no).
 *
 * @example
 * ```ts
 * try {
 *   await episode.step(action);
 * } catch (error) {
 *   if (isEnvironmentError(error) && error.code === 'ENV_STEP_AFTER_DONE') return;
 *   throw error;
 * }
 * ```
 */
export function isEnvironmentError(value: unknown): value is EnvironmentError {
  return (
    value instanceof Error &&
    value.name === 'EnvironmentError' &&
    typeof (value as { code?: unknown }).code === 'string' &&
    (value as unknown as { code: string }).code.startsWith('ENV_')
  );
}
