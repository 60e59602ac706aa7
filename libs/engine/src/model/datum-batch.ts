import { EngineError } from '../errors';
import type { TokenBatch } from './token-batch';

/**
 * One training example the way Tinker's SDK sends it: `input` (the sequence minus its last token) and
 * one target per input position (`targets[i]` is predicted from `input[0..i]`), usually the input
 * shifted by one, but free to differ (the cookbook puts 0 under prompt positions).
 */
export interface DatumTokens {
  input: ArrayLike<number>;
  targets: ArrayLike<number>;
}

/** A {@link TokenBatch} made of datums, with the maps between its token-aligned arrays and per-datum ones. */
export interface DatumBatch {
  /** Right-padded rows `input ++ [last target]` with explicit `targets`, for scoring and training. */
  batch: TokenBatch;
  /** Each datum's length N. */
  lengths: number[];
  /** Per-datum `[N]` values (log-probs, entropies) out of a token-aligned `[B·T]` array of the batch. */
  perDatum(tokenAligned: ArrayLike<number>): Float32Array[];
  /** A token-aligned `[B·T]` array (loss coefficients) out of per-datum `[N]` values; padding gets 0. */
  tokenAligned(perDatum: ReadonlyArray<ArrayLike<number>>): Float32Array;
}

/**
 * Lays datums out for the engine: row r holds `input` followed by the last target (a placeholder input
 * that predicts nothing), and the batch's `targets` say which token each position is scored as, so
 * datum position i is the batch's token-aligned index i + 1 of its row: `scoreTokens(batch).logProbs`,
 * read back with `perDatum`, is `log p(targets[i] | input[0..i])`, and coefficients written with
 * `tokenAligned` train exactly those log-probs.
 *
 * @example
 * ```ts
 * const db = datumBatch([{ input: [5, 6, 7], targets: [6, 7, 8] }]);
 * const [lp] = db.perDatum(model.scoreTokens(db.batch).logProbs); // lp[2] = log p(8 | 5 6 7)
 * ```
 */
export function datumBatch(datums: readonly DatumTokens[]): DatumBatch {
  if (datums.length === 0) throw new EngineError('ENGINE_INVALID_INPUT', 'no datums given', 'data');
  const lengths = datums.map((d, i) => {
    const n = d.input.length;
    if (n === 0) throw new EngineError('ENGINE_INVALID_INPUT', `datum ${i} has an empty model_input`, 'model_input');
    if (d.targets.length !== n) throw new EngineError('ENGINE_INVALID_INPUT', `datum ${i}: target_tokens has ${d.targets.length} entries, model_input ${n}`, 'target_tokens');
    return n;
  });
  const t = Math.max(...lengths) + 1;
  const b = datums.length;
  const ids = new Int32Array(b * t);
  const targets = new Int32Array(b * t);
  const mask = new Uint8Array(b * t);
  datums.forEach((d, r) => {
    const n = lengths[r];
    const check = (v: number, field: string, i: number) => {
      if (!Number.isInteger(v) || v < 0 || v > 0x7fffffff) throw new EngineError('ENGINE_INVALID_INPUT', `datum ${r}: ${field}[${i}] = ${v} is not a token id`, field);
      return v;
    };
    for (let i = 0; i < n; i++) {
      ids[r * t + i] = check(d.input[i], 'model_input', i);
      targets[r * t + i + 1] = check(d.targets[i], 'target_tokens', i);
    }
    ids[r * t + n] = targets[r * t + n];
    mask.fill(1, r * t, r * t + n + 1);
  });
  return {
    batch: { batchSize: b, seqLen: t, ids, mask, targets },
    lengths,
    perDatum: (tokenAligned) => lengths.map((n, r) => Float32Array.from({ length: n }, (_, i) => tokenAligned[r * t + i + 1])),
    tokenAligned: (perDatum) => {
      const out = new Float32Array(b * t);
      perDatum.forEach((values, r) => {
        if (values.length !== lengths[r]) throw new EngineError('ENGINE_INVALID_INPUT', `datum ${r}: ${values.length} values for ${lengths[r]} positions`, 'data');
        for (let i = 0; i < values.length; i++) out[r * t + i + 1] = values[i];
      });
      return out;
    },
  };
}
