/**
 * DAPO overlong reward shaping (verl DAPO reward manager, `reward_model.overlong_buffer`).
 */

/**
 * verl `overlong_buffer` settings.
 *
 * @example
 * ```ts
 * const cfg: OverlongBufferConfig = { maxRespLen: 4096, bufferLen: 1024, penaltyFactor: 1 };
 * ```
 */
export interface OverlongBufferConfig {
  /** Maximum response length (verl `max_resp_len`). */
  maxRespLen: number;
  /** Length of the soft-penalty buffer before the maximum (verl `overlong_buffer.len`). */
  bufferLen: number;
  /** Penalty at the maximum length (verl `overlong_buffer.penalty_factor`). */
  penaltyFactor: number;
}

/**
 * Soft overlong punishment: with `expected = maxRespLen - bufferLen`, a response of `length` tokens gets
 * `min(-(length - expected) / bufferLen · penaltyFactor, 0)` added to its reward — 0 up to `expected`,
 * falling linearly to `-penaltyFactor` at `maxRespLen` (and beyond, linearly, as verl computes it).
 *
 * @example
 * ```ts
 * overlongPenalty(3584, { maxRespLen: 4096, bufferLen: 1024, penaltyFactor: 1 }); // -0.5
 * ```
 */
export function overlongPenalty(length: number, config: OverlongBufferConfig): number {
  const expected = config.maxRespLen - config.bufferLen;
  const exceed = length - expected;
  return Math.min((-exceed / config.bufferLen) * config.penaltyFactor, 0);
}
