/**
 * Stable codes of {@link EngineError}. Callers (the job runner, the CLI, the HTTP layer) branch on the
 * code, never on the message.
 */
export type EngineErrorCode =
  /** A model config (config.json or a preset) is missing a field or holds a wrong value. */
  | 'ENGINE_INVALID_CONFIG'
  /** No preset has the requested name. */
  | 'ENGINE_UNKNOWN_PRESET'
  /** A weight is missing, unexpected, or has the wrong shape or length for the config. */
  | 'ENGINE_INVALID_WEIGHTS'
  /** Token ids, masks or other inputs have the wrong shape, length or range. */
  | 'ENGINE_INVALID_INPUT'
  /** Sampling or training options are out of range. */
  | 'ENGINE_INVALID_OPTIONS'
  /** No TensorFlow.js backend could be initialised. */
  | 'ENGINE_BACKEND_UNAVAILABLE'
  /** A model was used after `dispose()`. */
  | 'ENGINE_DISPOSED'
  /** A file or folder could not be read or written in the expected format (I/O side). */
  | 'ENGINE_IO'
  /**
   * A model, batch or optimizer state does not fit the engine's memory budget; the message names the
   * size needed and the setting or spec key to change. Raised before the allocation, so the engine keeps
   * running.
   */
  | 'ENGINE_OUT_OF_MEMORY';

/**
 * An error the engine raises on purpose, with a stable code and, where one applies, the name of the
 * offending field (a config key, a weight name, an option).
 *
 * @example
 * ```ts
 * throw new EngineError('ENGINE_INVALID_CONFIG', 'hidden_size must be a positive integer', 'hidden_size');
 * ```
 */
export class EngineError extends Error {
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

/** Whether a value is an {@link EngineError}, also across copies of this package. */
export function isEngineError(value: unknown): value is EngineError {
  return (
    value instanceof Error &&
    value.name === 'EngineError' &&
    typeof (value as { code?: unknown }).code === 'string' &&
    (value as unknown as { code: string }).code.startsWith('ENGINE_')
  );
}
