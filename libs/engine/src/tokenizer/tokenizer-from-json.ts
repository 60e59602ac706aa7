import { ByteTokenizer } from './byte-tokenizer';
import { HfTokenizer } from './hf-tokenizer';
import type { SerializableTokenizer } from './tokenizer';

/**
 * The tokenizer of a model folder's `tokenizer.json` + `tokenizer_config.json`: the native
 * {@link ByteTokenizer} when the file is the byte vocabulary it exports (exact on invalid UTF-8, no
 * library in the loop), else {@link HfTokenizer}.
 *
 * @example
 * ```ts
 * const tokenizer = tokenizerFromJson(JSON.parse(tokenizerJson), JSON.parse(tokenizerConfigJson));
 * ```
 */
export function tokenizerFromJson(tokenizerJson: unknown, tokenizerConfig: Record<string, unknown> = {}): SerializableTokenizer {
  return ByteTokenizer.fromTokenizerJson(tokenizerJson, tokenizerConfig) ?? HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
}
