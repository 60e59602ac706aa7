import { Template } from '@huggingface/jinja';
import { EngineError } from '../errors';

/** One chat message; extra fields (`tool_calls`, `name`, …) pass through to the template. */
export interface ChatMessage {
  role: string;
  content: string;
  [key: string]: unknown;
}

/** Options of {@link ChatTemplate.render}. */
export interface ChatRenderOptions {
  /** End with the opening of an assistant turn (`<|im_start|>assistant\n`), for sampling a reply. */
  addGenerationPrompt?: boolean;
  /** Tool (function) definitions, passed as `tools` (left undefined when absent, as transformers does). */
  tools?: unknown[];
  /** More template variables (e.g. `documents`, `enable_thinking`). */
  extra?: Record<string, unknown>;
}

/**
 * The ChatML template of the `tiny-char` preset (and of any model folder that has none): each message
 * as `<|im_start|>{role}\n{content}<|im_end|>\n`, the layout Qwen uses, without a default system prompt.
 */
export const CHATML_TEMPLATE = `{%- for message in messages %}
    {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
`;

/**
 * A Hugging Face chat template (the Jinja `chat_template` of `tokenizer_config.json`), rendered with
 * `@huggingface/jinja`, which reproduces Python Jinja2 as transformers configures it (`trim_blocks`,
 * `lstrip_blocks`, `tojson`, `raise_exception`, `strftime_now`) byte for byte. Variables: `messages`,
 * `add_generation_prompt`, `tools`, the special tokens by role (`bos_token`, `eos_token`, …) and `extra`.
 *
 * @example
 * ```ts
 * const template = new ChatTemplate(CHATML_TEMPLATE);
 * template.render([{ role: 'user', content: '2+2=' }], { addGenerationPrompt: true });
 * // '<|im_start|>user\n2+2=<|im_end|>\n<|im_start|>assistant\n'
 * ```
 */
export class ChatTemplate {
  private readonly template: Template;

  /**
   * @param source the Jinja source
   * @param specialTokens the special-token variables the template may use (`bos_token`, `eos_token`, `pad_token`, `unk_token`)
   */
  constructor(
    readonly source: string,
    private readonly specialTokens: Record<string, string> = {},
  ) {
    try {
      this.template = new Template(source);
    } catch (e) {
      throw new EngineError('ENGINE_IO', `chat template does not parse: ${(e as Error).message}`, 'chat_template');
    }
  }

  /** Renders a conversation; a template's `raise_exception(...)` (e.g. for a bad role order) becomes `ENGINE_INVALID_INPUT`. */
  render(messages: readonly ChatMessage[], options: ChatRenderOptions = {}): string {
    if (!Array.isArray(messages) || messages.some((m) => !m || typeof m.role !== 'string' || typeof m.content !== 'string')) {
      throw new EngineError('ENGINE_INVALID_INPUT', 'messages must be a list of { role: string, content: string }', 'messages');
    }
    const context: Record<string, unknown> = {
      ...this.specialTokens,
      ...(options.extra ?? {}),
      messages,
      add_generation_prompt: options.addGenerationPrompt ?? false,
    };
    if (options.tools !== undefined) context.tools = options.tools;
    try {
      return this.template.render(context);
    } catch (e) {
      throw new EngineError('ENGINE_INVALID_INPUT', `chat template failed: ${(e as Error).message}`, 'messages');
    }
  }
}
