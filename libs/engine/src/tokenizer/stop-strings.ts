import { EngineError } from '../errors';
import type { Tokenizer } from './tokenizer';

/** Where generation should stop. */
export interface StopMatch {
  /** The stop string that matched (the earliest in the text; the longest when several start there). */
  stop: string;
  /** Character index of the stop string in the generated text. */
  textIndex: number;
  /** The generated text before the stop string. */
  text: string;
  /**
   * Tokens to keep: up to and including the token that completed the stop string (as vLLM keeps it), so
   * the ids a trainer sees are exactly the ids that were sampled.
   */
  tokenCount: number;
}

/**
 * The earliest occurrence of any stop string in `text` at or after `from` (ties: the longest stop).
 *
 * @example
 * ```ts
 * findEarliestStop('a\n\nb###', ['###', '\n\n']); // { index: 1, stop: '\n\n' }
 * ```
 */
export function findEarliestStop(text: string, stops: readonly string[], from = 0): { index: number; stop: string } | null {
  let best: { index: number; stop: string } | null = null;
  for (const stop of stops) {
    if (stop.length === 0) continue;
    const index = text.indexOf(stop, from);
    if (index === -1) continue;
    if (!best || index < best.index || (index === best.index && stop.length > best.stop.length)) best = { index, stop };
  }
  return best;
}

/**
 * Watches sampled tokens one at a time and says when a stop string has appeared in the decoded text,
 * even when it spans several tokens or a multi-byte character is split across them. Decoding is
 * incremental (a few tokens per step, the way vLLM detokenizes), so a long generation costs linear time;
 * text whose last character is still incomplete (U+FFFD) waits for the next token.
 *
 * @example
 * ```ts
 * const scanner = new StopStringScanner(tokenizer, ['\n\n', '</answer>']);
 * for (const id of sampled) {
 *   const match = scanner.push(id);
 *   if (match) return { ids: sampled.slice(0, match.tokenCount), text: match.text };
 * }
 * ```
 */
export class StopStringScanner {
  private readonly ids: number[] = [];
  private readonly stops: string[];
  private readonly maxStop: number;
  /** Decoded text so far, in pieces: concatenating and searching one growing string is quadratic in V8. */
  private readonly chunks: string[] = [];
  private decodedLength = 0;
  /** The last `maxStop - 1` decoded characters: where a stop string completed by new text can begin. */
  private tail = '';
  private prefixOffset = 0;
  private readOffset = 0;
  private found: StopMatch | null = null;

  constructor(
    private readonly tokenizer: Pick<Tokenizer, 'decode'>,
    stops: readonly string[],
    private readonly options: { skipSpecial?: boolean } = {},
  ) {
    if (!Array.isArray(stops) || stops.some((s) => typeof s !== 'string')) {
      throw new EngineError('ENGINE_INVALID_OPTIONS', 'stop strings must be a list of strings', 'stop');
    }
    this.stops = stops.filter((s) => s.length > 0);
    this.maxStop = this.stops.reduce((m, s) => Math.max(m, s.length), 0);
  }

  /** The match, once one has been seen. */
  get match(): StopMatch | null {
    return this.found;
  }

  /** All text decoded so far, including a trailing incomplete character if any. */
  get text(): string {
    const pending = this.decode(this.prefixOffset, this.ids.length).slice(this.decode(this.prefixOffset, this.readOffset).length);
    return this.chunks.join('') + pending;
  }

  private decode(from: number, to: number): string {
    return from >= to ? '' : this.tokenizer.decode(this.ids.slice(from, to), { skipSpecial: this.options.skipSpecial ?? false });
  }

  /** Adds a sampled token; returns the match when a stop string is complete (and on every later call). */
  push(id: number): StopMatch | null {
    if (this.found) return this.found;
    this.ids.push(id);
    if (this.stops.length === 0) return null;
    // Decode from a token or two back, so tokenizers whose decoding depends on the neighbouring token
    // (a SentencePiece leading space) still produce the right new characters.
    const prefixText = this.decode(this.prefixOffset, this.readOffset);
    const newText = this.decode(this.prefixOffset, this.ids.length);
    if (newText.length <= prefixText.length || newText.endsWith('\uFFFD')) return null;
    const added = newText.slice(prefixText.length);
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    // Earlier text held no stop string, so a new one must end in the new characters: search the
    // window of the old tail plus the new text only.
    const window = this.tail + added;
    const windowStart = this.decodedLength - this.tail.length;
    this.chunks.push(added);
    this.decodedLength += added.length;
    this.tail = window.slice(Math.max(0, window.length - (this.maxStop - 1)));
    const hit = findEarliestStop(window, this.stops);
    if (!hit) return null;
    const textIndex = windowStart + hit.index;
    this.found = { stop: hit.stop, textIndex, text: this.chunks.join('').slice(0, textIndex), tokenCount: this.ids.length };
    return this.found;
  }
}

/**
 * Where to cut already sampled ids at the first stop string, or null if none appears.
 *
 * @example
 * ```ts
 * const match = cutAtStop(tokenizer, ids, ['\n']);
 * const kept = match ? ids.slice(0, match.tokenCount) : ids;
 * ```
 */
export function cutAtStop(tokenizer: Pick<Tokenizer, 'decode'>, ids: readonly number[], stops: readonly string[], options: { skipSpecial?: boolean } = {}): StopMatch | null {
  const scanner = new StopStringScanner(tokenizer, stops, options);
  for (const id of ids) {
    const match = scanner.push(id);
    if (match) return match;
  }
  return null;
}

/**
 * A `stopCheck` hook for `sample` that ends a row once its decoded text holds one of `stops` (one
 * {@link StopStringScanner} per row, fed the row's new tokens): the token that completes a stop string is
 * the row's last, so the ids returned are exactly those sampled.
 *
 * @example
 * ```ts
 * sample(model, prompts, { maxNewTokens: 64, stopCheck: stopStringHook(tokenizer, ['\n\n']) });
 * ```
 */
export function stopStringHook(
  tokenizer: Pick<Tokenizer, 'decode'>,
  stops: readonly string[],
  options: { skipSpecial?: boolean } = {},
): (row: number, generated: readonly number[]) => boolean {
  const scanners = new Map<number, { scanner: StopStringScanner; fed: number }>();
  return (row, generated) => {
    let entry = scanners.get(row);
    if (!entry) scanners.set(row, (entry = { scanner: new StopStringScanner(tokenizer, stops, options), fed: 0 }));
    let match: StopMatch | null = null;
    while (entry.fed < generated.length) match = entry.scanner.push(generated[entry.fed++]);
    return match !== null;
  };
}
