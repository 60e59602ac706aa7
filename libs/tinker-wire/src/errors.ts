/**
 * The one error type of the package. Callers branch on `code`, never on the message; `field` names the
 * offending part of the body as a path (`data[2].loss_fn_inputs.weights`) where one applies.
 */

/**
 * Stable codes of {@link TinkerWireError}. All but the last describe bytes a peer sent (a server answers
 * them with a 4xx: 413 for `TINKER_WIRE_TOO_LARGE`, 415 for `TINKER_WIRE_BAD_ENCODING`, 400 otherwise);
 * `TINKER_WIRE_CANNOT_ENCODE` is raised on the encoding side, for a value the SDK would not read.
 *
 * @example
 * ```ts
 * const code: TinkerWireErrorCode = 'TINKER_WIRE_TOO_LARGE';
 * ```
 */
export type TinkerWireErrorCode =
  /** The bytes are not a protobuf message of the expected type (truncated, wrong wire type, a length past the end). */
  | 'TINKER_WIRE_BAD_PROTOBUF'
  /** A Content-Encoding other than zstd or none, or a zstd body that is damaged or cut short. */
  | 'TINKER_WIRE_BAD_ENCODING'
  /** A body, its decompressed form, or the tensors it declares exceed a limit (the message names it). */
  | 'TINKER_WIRE_TOO_LARGE'
  /** Well-formed bytes whose values cannot be what they claim: a byte length that is no whole number of values, a shape that does not match, CSR indices out of range. */
  | 'TINKER_WIRE_INVALID'
  /** Well-formed input this package does not turn into plain arrays: image or audio chunks where tokens are needed, an unspecified dtype. */
  | 'TINKER_WIRE_UNSUPPORTED'
  /** A value to encode breaks what the SDK needs: a metric key not `name:reduction`, datums with different output names, a non-integer token (a bug on the encoding side). */
  | 'TINKER_WIRE_CANNOT_ENCODE';

/**
 * An error the package raises on purpose, with a stable code and the path of the offending field.
 *
 * @example
 * ```ts
 * throw new TinkerWireError('TINKER_WIRE_INVALID', 'weights has 7 bytes, not a whole number of float32 values', 'data[0].loss_fn_inputs.weights');
 * ```
 */
export class TinkerWireError extends Error {
  constructor(
    readonly code: TinkerWireErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(field === undefined ? message : `${field}: ${message}`);
    this.name = 'TinkerWireError';
  }
}

/**
 * Whether a value is a {@link TinkerWireError}, also across copies of this package.
 *
 * @example
 * ```ts
 * try { decodeForwardBackwardRequest(body); } catch (e) { if (isTinkerWireError(e) && e.code === 'TINKER_WIRE_TOO_LARGE') reply(413); }
 * ```
 */
export function isTinkerWireError(value: unknown): value is TinkerWireError {
  return value instanceof Error && value.name === 'TinkerWireError' && typeof (value as { code?: unknown }).code === 'string';
}
