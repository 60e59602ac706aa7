/** Options of {@link Tokenizer.encode}. */
export interface EncodeOptions {
  /**
   * Add the tokens the tokenizer's post-processor adds around a text (e.g. a BOS id). Default false:
   * prompts come from a chat template that already contains them, as `transformers`'
   * `apply_chat_template` tokenizes.
   */
  addSpecialTokens?: boolean;
}

/** Options of {@link Tokenizer.decode}. */
export interface DecodeOptions {
  /** Leave special tokens (`<|im_end|>`, …) out of the text. Default false. */
  skipSpecial?: boolean;
}

/**
 * Text to token ids and back. Special tokens written in the text (`<|im_start|>`, as a chat template
 * renders them) encode to their ids, as Hugging Face tokenizers do by default.
 *
 * @example
 * ```ts
 * const ids = tokenizer.encode(template.render(messages, { addGenerationPrompt: true }));
 * const text = tokenizer.decode(sampledIds, { skipSpecial: true });
 * ```
 */
export interface Tokenizer {
  /** Number of ids the tokenizer can produce (largest id + 1); the model's vocab may be larger (padding). */
  readonly vocabSize: number;
  /** Beginning-of-sequence id, or null when the tokenizer has none (Qwen2.5). */
  readonly bosId: number | null;
  /** End-of-sequence id (for chat models, the end-of-turn token such as `<|im_end|>`), or null. */
  readonly eosId: number | null;
  /** Padding id, or null. */
  readonly padId: number | null;
  /** Special tokens by their text. */
  readonly specialTokens: ReadonlyMap<string, number>;
  encode(text: string, options?: EncodeOptions): number[];
  decode(ids: readonly number[], options?: DecodeOptions): string;
  /** The raw vocabulary entry of an id (byte-level BPE shows a leading space as `Ġ`), for debugging. */
  tokenToString(id: number): string;
  /** The id of a vocabulary entry or special token, or undefined. */
  tokenToId(token: string): number | undefined;
}

/** A tokenizer that can write itself as Hugging Face files (`tokenizer.json`, `tokenizer_config.json`). */
export interface SerializableTokenizer extends Tokenizer {
  toTokenizerJson(): Record<string, unknown>;
  /** `tokenizer_config.json`, with `chat_template` set when one is given. */
  toTokenizerConfig(chatTemplate?: string): Record<string, unknown>;
}

/** Whether a tokenizer can be saved into a model folder. */
export function isSerializableTokenizer(tokenizer: Tokenizer): tokenizer is SerializableTokenizer {
  const t = tokenizer as Partial<SerializableTokenizer>;
  return typeof t.toTokenizerJson === 'function' && typeof t.toTokenizerConfig === 'function';
}
