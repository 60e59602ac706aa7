import { EngineError } from '../errors';

/**
 * A batch of token sequences in one rectangle: `ids` and `mask` are row-major `[batchSize, seqLen]`.
 * `mask[i]` is 1 for a real token and 0 for padding. Each row's real tokens must be contiguous: padding
 * on the right (training batches), on the left (sampling prompts), or both. Positions count real
 * tokens only, so a sequence gets the same positions, attention and log-probs wherever its padding is.
 */
export interface TokenBatch {
  batchSize: number;
  seqLen: number;
  ids: Int32Array;
  mask: Uint8Array;
  /**
   * Optional, row-major `[batchSize, seqLen]`: the token each position's log-prob is of, where it is not
   * the token itself. Entry `t` replaces `ids[t]` as the target predicted from `ids[<t]` (log-probs,
   * entropies and the training loss then score it), while `ids[t]` stays the input. This is how a Tinker
   * datum whose `target_tokens` are not its shifted input (the cookbook puts 0 under prompt positions) is
   * scored exactly as sent. Absent: every token is its own target.
   */
  targets?: Int32Array;
  /**
   * Optional, row-major `[batchSize, seqLen]`: 1 where the token's log-prob (and entropy) is used, 0 where
   * it is not. The head then runs only for the scored tokens (in RL the prompt's tokens are never scored,
   * and at a 150k-token vocabulary the head is a quarter of a trained token's work); the others report a
   * log-prob and entropy of 0 and must get no loss coefficient. Absent: every token is scored.
   */
  scored?: Uint8Array;
}

/** Options of {@link padBatch}. */
export interface PadOptions {
  /** Where padding goes (default right). */
  side?: 'left' | 'right';
  /** Id written into padding slots (default 0; never attended to, so any valid id works). */
  padId?: number;
  /** Pad to at least this length (default: the longest sequence). */
  length?: number;
}

/**
 * Packs ragged token sequences into a {@link TokenBatch}.
 *
 * @example
 * ```ts
 * const batch = padBatch([[1, 2, 3], [4]]);
 * batch.ids;  // Int32Array [1, 2, 3, 4, 0, 0]
 * batch.mask; // Uint8Array [1, 1, 1, 1, 0, 0]
 * ```
 */
export function padBatch(sequences: ReadonlyArray<ArrayLike<number>>, options: PadOptions = {}): TokenBatch {
  const side = options.side ?? 'right';
  const padId = options.padId ?? 0;
  const seqLen = Math.max(options.length ?? 0, ...sequences.map((s) => s.length), 0);
  const batchSize = sequences.length;
  const ids = new Int32Array(batchSize * seqLen).fill(padId);
  const mask = new Uint8Array(batchSize * seqLen);
  sequences.forEach((s, b) => {
    const offset = b * seqLen + (side === 'left' ? seqLen - s.length : 0);
    for (let t = 0; t < s.length; t++) {
      // Int32Array would silently truncate 1.5 or wrap 2**32: refuse instead.
      if (!Number.isInteger(s[t]) || s[t] < 0 || s[t] > 0x7fffffff) {
        throw new EngineError('ENGINE_INVALID_INPUT', `sequence ${b} token ${t} = ${s[t]} is not a token id`, 'ids');
      }
      ids[offset + t] = s[t];
      mask[offset + t] = 1;
    }
  });
  return { batchSize, seqLen, ids, mask };
}

/**
 * Checks a batch's sizes, id range and mask layout; throws `ENGINE_INVALID_INPUT` naming the problem.
 *
 * @example
 * ```ts
 * validateTokenBatch(batch, config.vocab_size);
 * ```
 */
export function validateTokenBatch(batch: TokenBatch, vocabSize: number): void {
  const { batchSize, seqLen, ids, mask } = batch;
  const bad = (msg: string, field: string): never => {
    throw new EngineError('ENGINE_INVALID_INPUT', msg, field);
  };
  if (!Number.isInteger(batchSize) || batchSize < 1) bad(`batchSize must be a positive integer, got ${batchSize}`, 'batchSize');
  if (!Number.isInteger(seqLen) || seqLen < 1) bad(`seqLen must be a positive integer, got ${seqLen}`, 'seqLen');
  if (ids.length !== batchSize * seqLen) bad(`ids has ${ids.length} entries, expected ${batchSize * seqLen}`, 'ids');
  if (mask.length !== batchSize * seqLen) bad(`mask has ${mask.length} entries, expected ${batchSize * seqLen}`, 'mask');
  const targets = batch.targets;
  if (targets) {
    if (targets.length !== batchSize * seqLen) bad(`targets has ${targets.length} entries, expected ${batchSize * seqLen}`, 'targets');
    for (let i = 0; i < targets.length; i++) {
      if (mask[i] === 1 && !(Number.isInteger(targets[i]) && targets[i] >= 0 && targets[i] < vocabSize))
        bad(`targets[${i}] = ${targets[i]} is outside the vocabulary [0, ${vocabSize})`, 'targets');
    }
  }
  const scored = batch.scored;
  if (scored) {
    if (scored.length !== batchSize * seqLen) bad(`scored has ${scored.length} entries, expected ${batchSize * seqLen}`, 'scored');
    for (let i = 0; i < scored.length; i++) if (scored[i] !== 0 && scored[i] !== 1) bad(`scored[${i}] must be 0 or 1, got ${scored[i]}`, 'scored');
  }
  for (let b = 0; b < batchSize; b++) {
    let state = 0; // 0: leading padding, 1: tokens, 2: trailing padding
    for (let t = 0; t < seqLen; t++) {
      const i = b * seqLen + t;
      const m = mask[i];
      if (m !== 0 && m !== 1) bad(`mask[${b}][${t}] must be 0 or 1, got ${m}`, 'mask');
      if (m === 1) {
        if (state === 2) bad(`row ${b} has padding between tokens; pad only on the left or right`, 'mask');
        state = 1;
        const id = ids[i];
        if (!Number.isInteger(id) || id < 0 || id >= vocabSize) bad(`ids[${b}][${t}] = ${id} is outside the vocabulary [0, ${vocabSize})`, 'ids');
      } else if (state === 1) state = 2;
    }
  }
}

/**
 * Whether token `t` of row `b` has a log-prob: it is real and a real token precedes it.
 * @internal
 */
export function hasLogProb(batch: TokenBatch, b: number, t: number): boolean {
  const i = b * batch.seqLen + t;
  return t > 0 && batch.mask[i] === 1 && batch.mask[i - 1] === 1;
}

/** Rows `start` to `end` (exclusive) of a batch, same sequence length (views, not copies). */
export function sliceRows(batch: TokenBatch, start: number, end: number): TokenBatch {
  const t = batch.seqLen;
  const rows = { batchSize: end - start, seqLen: t, ids: batch.ids.subarray(start * t, end * t), mask: batch.mask.subarray(start * t, end * t) };
  return {
    ...rows,
    ...(batch.targets ? { targets: batch.targets.subarray(start * t, end * t) } : {}),
    ...(batch.scored ? { scored: batch.scored.subarray(start * t, end * t) } : {}),
  };
}
