import { Tokenizer as HfTokenizerImpl } from '@huggingface/tokenizers';
import { EngineError } from '../errors';
import type { DecodeOptions, EncodeOptions, Tokenizer } from './tokenizer';

/**
 * A token named in `tokenizer_config.json`: a string, an AddedToken object (`{"content": …}`, older
 * files), or null.
 */
function tokenName(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') return (value as { content: string }).content;
  return null;
}

/** Refuses what cannot be a token id (Hugging Face's ids are unsigned 32-bit integers). */
function checkTokenId(id: number): void {
  if (!Number.isInteger(id) || id < 0 || id > 0xffffffff) throw new EngineError('ENGINE_INVALID_INPUT', `${id} is not a token id`, 'ids');
}

/**
 * A Hugging Face `tokenizer.json` (byte-level BPE as in GPT-2, Llama 3, Qwen2; also WordPiece,
 * Unigram, …) run by `@huggingface/tokenizers`, pure JavaScript, offline. `tokenizer_config.json`
 * supplies the special-token roles (`bos_token`, `eos_token`, `pad_token`) and decoding options
 * (`clean_up_tokenization_spaces`).
 *
 * @example
 * ```ts
 * const tok = HfTokenizer.fromJson(JSON.parse(tokenizerJson), JSON.parse(tokenizerConfigJson));
 * tok.encode('<|im_start|>user\nHi<|im_end|>');
 * ```
 */
export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly eosId: number | null;
  readonly padId: number | null;
  readonly specialTokens: ReadonlyMap<string, number>;

  private constructor(
    private readonly impl: HfTokenizerImpl,
    private readonly json: Record<string, unknown>,
    private readonly config: Record<string, unknown>,
  ) {
    const vocab = impl.get_vocab(true);
    let max = -1;
    for (const id of vocab.values()) if (id > max) max = id;
    this.vocabSize = max + 1;
    const specials = new Map<string, number>();
    for (const [id, token] of impl.get_added_tokens_decoder()) if (token.special) specials.set(token.content, id);
    this.specialTokens = specials;
    const role = (key: string): number | null => {
      const name = tokenName(config[key]);
      if (name === null) return null;
      const id = impl.token_to_id(name);
      if (id === undefined) throw new EngineError('ENGINE_IO', `tokenizer_config.json: ${key} "${name}" is not in the vocabulary`, key);
      return id;
    };
    this.bosId = role('bos_token');
    this.eosId = role('eos_token');
    this.padId = role('pad_token');
  }

  /**
   * Builds a tokenizer from parsed `tokenizer.json` and `tokenizer_config.json` objects. Throws
   * `ENGINE_IO` when the library cannot build it (unknown model or pre-tokenizer type, malformed file).
   */
  static fromJson(tokenizerJson: unknown, tokenizerConfig: Record<string, unknown> = {}): HfTokenizer {
    if (tokenizerJson === null || typeof tokenizerJson !== 'object' || Array.isArray(tokenizerJson)) {
      throw new EngineError('ENGINE_IO', 'tokenizer.json must be a JSON object');
    }
    let impl: HfTokenizerImpl;
    try {
      // The library reads `added_tokens` unconditionally; tokenizer.json files always have it, but be kind.
      impl = new HfTokenizerImpl({ added_tokens: [], ...(tokenizerJson as Record<string, unknown>) }, tokenizerConfig);
    } catch (e) {
      throw new EngineError('ENGINE_IO', `tokenizer.json could not be loaded: ${(e as Error).message}`);
    }
    return new HfTokenizer(impl, tokenizerJson as Record<string, unknown>, tokenizerConfig);
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    return this.impl.encode(text, { add_special_tokens: options.addSpecialTokens ?? false }).ids;
  }

  /**
   * The text of `ids`. As Hugging Face's `tokenizers` (`decode` keeps the ids `id_to_token` knows), an
   * id without an entry decodes as nothing: a model's embedding is often larger than its vocabulary
   * (Qwen2.5 has 151,936 rows for 151,665 entries), and a sampled padding id is no error. What is not
   * a token id at all (negative, fractional, past 2³²−1) is `ENGINE_INVALID_INPUT`.
   */
  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const known = ids.filter((id) => {
      checkTokenId(id);
      return this.impl.id_to_token(id) !== undefined;
    });
    // The library refuses an empty list; an empty list is simply empty text.
    if (known.length === 0) return '';
    return this.impl.decode(known, { skip_special_tokens: options.skipSpecial ?? false });
  }

  /** The raw vocabulary entry of an id; `''` for an id without one (Hugging Face's `id_to_token` gives None). */
  tokenToString(id: number): string {
    checkTokenId(id);
    return this.impl.id_to_token(id) ?? '';
  }

  tokenToId(token: string): number | undefined {
    return this.impl.token_to_id(token);
  }

  /** The `tokenizer.json` this tokenizer was built from (shared, not copied: do not modify). */
  toTokenizerJson(): Record<string, unknown> {
    return this.json;
  }

  /** Its `tokenizer_config.json`, with `chat_template` replaced when one is given. */
  toTokenizerConfig(chatTemplate?: string): Record<string, unknown> {
    return chatTemplate === undefined ? { ...this.config } : { ...this.config, chat_template: chatTemplate };
  }
}
