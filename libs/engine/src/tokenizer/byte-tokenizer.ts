import { EngineError } from '../errors';
import { TINY_CHAR_SPECIAL_TOKENS } from '../model/model-config';
import { byteToUnicode, unicodeToByte } from './byte-level-alphabet';
import type { DecodeOptions, EncodeOptions, Tokenizer } from './tokenizer';

/** Options of {@link ByteTokenizer}. */
export interface ByteTokenizerOptions {
  /** Special tokens and their ids, which must be 256, 257, … in some order. Default: `tiny-char`'s. */
  specialTokens?: Readonly<Record<string, number>>;
  /** Which special token plays each role (null: none). Defaults: `<|endoftext|>`, `<|im_end|>`, `<|pad|>` when present. */
  bosToken?: string | null;
  eosToken?: string | null;
  padToken?: string | null;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The tokenizer of tiny models: ids 0–255 are the bytes of the UTF-8 text, special tokens follow.
 * `decode(encode(text)) === text` for every well-formed string. Defined behaviour at the edges:
 * - a lone surrogate (a string that is not well-formed UTF-16) encodes as U+FFFD's bytes, as
 *   `TextEncoder` does, so it decodes as `\uFFFD`;
 * - ids that do not form valid UTF-8 (a sampled byte sequence cut mid-character) decode with one
 *   U+FFFD per maximal invalid subsequence (WHATWG decoding, Python's `errors="replace"`);
 *   {@link ByteTokenizer.decodeBytes} gives the exact bytes instead;
 * - bytes are decoded separately on either side of a special token, as Hugging Face's byte-level
 *   decoder does.
 *
 * It exports itself as a standard byte-level BPE `tokenizer.json` (no merges), so transformers, vLLM
 * and `@huggingface/tokenizers` give the same ids.
 *
 * @example
 * ```ts
 * const tok = new ByteTokenizer();
 * tok.encode('<|im_start|>hé'); // [257, 104, 195, 169]
 * tok.decode([104, 195, 169, 258], { skipSpecial: true }); // 'hé'
 * ```
 */
export class ByteTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly eosId: number | null;
  readonly padId: number | null;
  readonly specialTokens: ReadonlyMap<string, number>;
  private readonly specialById: Map<number, string>;
  private readonly splitter: RegExp | null;
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

  constructor(options: ByteTokenizerOptions = {}) {
    const specials = options.specialTokens ?? TINY_CHAR_SPECIAL_TOKENS;
    const entries = Object.entries(specials);
    const ids = entries.map(([, id]) => id).sort((a, b) => a - b);
    if (ids.some((id, i) => id !== 256 + i)) {
      throw new EngineError('ENGINE_INVALID_INPUT', `byte tokenizer special ids must be 256..${255 + ids.length} without gaps, got [${ids}]`, 'specialTokens');
    }
    if (entries.some(([text]) => text.length === 0)) throw new EngineError('ENGINE_INVALID_INPUT', 'special tokens must not be empty', 'specialTokens');
    this.specialTokens = new Map(entries);
    this.specialById = new Map(entries.map(([t, id]) => [id, t]));
    this.vocabSize = 256 + entries.length;
    const role = (given: string | null | undefined, fallback: string): number | null => {
      if (given === null) return null;
      const name = given ?? fallback;
      const id = this.specialTokens.get(name);
      if (id === undefined && given !== undefined) {
        throw new EngineError('ENGINE_INVALID_INPUT', `special token "${given}" is not among the byte tokenizer's special tokens`, 'specialTokens');
      }
      return id ?? null;
    };
    this.bosId = role(options.bosToken, '<|endoftext|>');
    this.eosId = role(options.eosToken, '<|im_end|>');
    this.padId = role(options.padToken, '<|pad|>');
    // Longest first, so a special token that prefixes another never wins over it.
    const alternatives = entries
      .map(([t]) => t)
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp);
    this.splitter = alternatives.length > 0 ? new RegExp(`(${alternatives.join('|')})`) : null;
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const out: number[] = [];
    if (options.addSpecialTokens && this.bosId !== null) out.push(this.bosId);
    const parts = this.splitter ? text.split(this.splitter) : [text];
    // split() with one capture group alternates plain text (even indexes) and special tokens (odd).
    for (let i = 0; i < parts.length; i++) {
      if (i % 2 === 1) {
        out.push(this.specialTokens.get(parts[i])!);
      } else if (parts[i].length > 0) {
        for (const b of this.encoder.encode(parts[i])) out.push(b);
      }
    }
    return out;
  }

  /**
   * Whether `id` has an entry. An id without one (past the vocabulary: a model's embedding may have
   * more rows) decodes as nothing, as this tokenizer's Hugging Face form does; what is not a token id at
   * all (negative, fractional, past 2³²−1) is `ENGINE_INVALID_INPUT`.
   */
  private known(id: number): boolean {
    if (!Number.isInteger(id) || id < 0 || id > 0xffffffff) throw new EngineError('ENGINE_INVALID_INPUT', `${id} is not a token id`, 'ids');
    return id < this.vocabSize;
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    let text = '';
    let bytes: number[] = [];
    const flush = () => {
      if (bytes.length > 0) text += this.decoder.decode(Uint8Array.from(bytes));
      bytes = [];
    };
    for (const id of ids) {
      if (!this.known(id)) continue;
      if (id < 256) {
        bytes.push(id);
      } else {
        flush();
        if (!options.skipSpecial) text += this.specialById.get(id)!;
      }
    }
    flush();
    return text;
  }

  /**
   * The exact bytes of the byte ids, special tokens left out (for byte-exact comparisons, where
   * {@link decode} would replace invalid UTF-8).
   */
  decodeBytes(ids: readonly number[]): Uint8Array {
    const out: number[] = [];
    for (const id of ids) {
      if (this.known(id) && id < 256) out.push(id);
    }
    return Uint8Array.from(out);
  }

  tokenToString(id: number): string {
    if (!this.known(id)) return '';
    return id < 256 ? byteToUnicode(id) : this.specialById.get(id)!;
  }

  tokenToId(token: string): number | undefined {
    const special = this.specialTokens.get(token);
    if (special !== undefined) return special;
    return token.length === 1 ? unicodeToByte(token) : undefined;
  }

  /**
   * A Hugging Face `tokenizer.json` that tokenizes exactly like this tokenizer: a byte-level BPE with
   * the 256 byte characters as vocabulary (id = byte value), no merges, and the special tokens added.
   */
  toTokenizerJson(): Record<string, unknown> {
    const vocab: Record<string, number> = {};
    for (let b = 0; b < 256; b++) vocab[byteToUnicode(b)] = b;
    const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
    return {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: [...this.specialById.entries()]
        .sort(([a], [b]) => a - b)
        .map(([id, content]) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
      normalizer: null,
      pre_tokenizer: byteLevel,
      post_processor: byteLevel,
      decoder: byteLevel,
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab,
        merges: [],
      },
    };
  }

  /** The matching `tokenizer_config.json` (special-token roles, optional chat template). */
  toTokenizerConfig(chatTemplate?: string): Record<string, unknown> {
    const name = (id: number | null) => (id === null ? null : this.specialById.get(id)!);
    const addedTokensDecoder: Record<string, unknown> = {};
    for (const [id, content] of [...this.specialById.entries()].sort(([a], [b]) => a - b)) {
      addedTokensDecoder[String(id)] = { content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true };
    }
    return {
      added_tokens_decoder: addedTokensDecoder,
      bos_token: name(this.bosId),
      eos_token: name(this.eosId),
      pad_token: name(this.padId),
      unk_token: null,
      clean_up_tokenization_spaces: false,
      model_max_length: 1_000_000_000,
      tokenizer_class: 'PreTrainedTokenizerFast',
      ...(chatTemplate !== undefined ? { chat_template: chatTemplate } : {}),
    };
  }

  /**
   * Recognises a `tokenizer.json` that {@link toTokenizerJson} wrote (byte vocabulary, no merges,
   * special tokens from 256) and rebuilds the tokenizer from it, with roles from `tokenizer_config.json`.
   * Returns null for any other tokenizer.
   */
  static fromTokenizerJson(json: unknown, config: Record<string, unknown> = {}): ByteTokenizer | null {
    if (json === null || typeof json !== 'object') return null;
    const j = json as Record<string, unknown>;
    const model = j.model as Record<string, unknown> | undefined;
    if (!model || model.type !== 'BPE' || !Array.isArray(model.merges) || model.merges.length !== 0) return null;
    const vocab = model.vocab as Record<string, unknown> | undefined;
    if (!vocab || typeof vocab !== 'object' || Object.keys(vocab).length !== 256) return null;
    for (let b = 0; b < 256; b++) if (vocab[byteToUnicode(b)] !== b) return null;
    if (j.normalizer !== null && j.normalizer !== undefined) return null;
    const isByteLevel = (v: unknown) => (v as { type?: unknown } | null)?.type === 'ByteLevel' && (v as { use_regex?: unknown }).use_regex === false;
    if (!isByteLevel(j.pre_tokenizer) || !isByteLevel(j.decoder)) return null;
    const specials: Record<string, number> = {};
    for (const t of (j.added_tokens as Array<Record<string, unknown>> | undefined) ?? []) {
      if (typeof t.content !== 'string' || typeof t.id !== 'number' || t.special !== true || t.lstrip || t.rstrip || t.normalized || t.single_word) return null;
      specials[t.content] = t.id;
    }
    const ids = Object.values(specials).sort((a, b) => a - b);
    if (ids.some((id, i) => id !== 256 + i)) return null;
    const role = (key: string): string | null => {
      const v = config[key];
      if (typeof v === 'string') return v;
      if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
      return null;
    };
    const pick = (key: string) => {
      const name = role(key);
      return name !== null && name in specials ? name : null;
    };
    return new ByteTokenizer({ specialTokens: specials, bosToken: pick('bos_token'), eosToken: pick('eos_token'), padToken: pick('pad_token') });
  }
}
