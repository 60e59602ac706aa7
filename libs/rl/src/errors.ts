/**
 * The one error type of the package. Callers branch on `code`, never on the message. Where verl raises
 * for the same input, the code says which of verl's exceptions it stands for.
 */

/**
 * Stable codes of {@link RlError}.
 *
 * @example
 * ```ts
 * const code: RlErrorCode = 'RL_NOT_IMPLEMENTED';
 * ```
 */
export type RlErrorCode =
  /** An array has the wrong length or shape, or an input an estimator needs is missing. */
  | 'RL_INVALID_INPUT'
  /** A config value is out of range (verl asserts on these: `clip_ratio_c > 1`, `horizon > 0`, ratios > 0). */
  | 'RL_INVALID_CONFIG'
  /** No estimator, loss mode, aggregation mode or KL controller has that name (verl `ValueError`). */
  | 'RL_UNKNOWN_NAME'
  /** A name verl accepts syntactically but does not implement, e.g. `kl_penalty: full` or `k3+` (verl `NotImplementedError`). */
  | 'RL_NOT_IMPLEMENTED'
  /** The data cannot give a result verl would give: a masked variance over fewer than two tokens, a Pass@k group of one (verl `ValueError`). */
  | 'RL_DEGENERATE_INPUT'
  /** A different function is already registered under that name. */
  | 'RL_ALREADY_REGISTERED';

/**
 * An error the package raises on purpose, with a stable code and, where one applies, the name of the
 * offending argument or config key.
 *
 * @example
 * ```ts
 * throw new RlError('RL_INVALID_INPUT', 'responseMask has length 3, expected 6', 'responseMask');
 * ```
 */
export class RlError extends Error {
  constructor(
    readonly code: RlErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'RlError';
  }
}

/**
 * Whether a value is an {@link RlError}, also across copies of this package.
 *
 * @example
 * ```ts
 * try { klPenalty([0], [0], 'k3+'); } catch (e) { if (isRlError(e) && e.code === 'RL_NOT_IMPLEMENTED') { ... } }
 * ```
 */
export function isRlError(value: unknown): value is RlError {
  return (
    value instanceof Error && value.name === 'RlError' && typeof (value as { code?: unknown }).code === 'string' && (value as unknown as { code: string }).code.startsWith('RL_')
  );
}
