import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHATML_TEMPLATE, ChatTemplate, type ChatMessage } from './chat-template';
import { ByteTokenizer } from './byte-tokenizer';
import { HfTokenizer } from './hf-tokenizer';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '__golden__', 'tokenizer');
const read = (name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8'));
const qwenConfig = read('qwen2.5-tokenizer_config.json') as { chat_template: string };
const cases = read('expected.json').chat_templates as Array<{
  template: 'qwen2.5' | 'chatml';
  title: string;
  messages: ChatMessage[];
  add_generation_prompt: boolean;
  tools: unknown[] | null;
  expected: string;
}>;

describe('ChatTemplate', () => {
  it('ships the ChatML template the golden renders used', () => {
    expect(CHATML_TEMPLATE).toBe(readFileSync(join(dir, 'chatml.jinja'), 'utf8'));
  });

  it('renders the Qwen2.5 template for system + user + assistant exactly', () => {
    const template = new ChatTemplate(qwenConfig.chat_template, { eos_token: '<|im_end|>' });
    const out = template.render([
      { role: 'system', content: 'You are a careful math tutor.' },
      { role: 'user', content: 'What is 7 * 8?' },
      { role: 'assistant', content: 'The answer is 56.' },
    ]);
    expect(out).toBe(
      '<|im_start|>system\nYou are a careful math tutor.<|im_end|>\n' + '<|im_start|>user\nWhat is 7 * 8?<|im_end|>\n' + '<|im_start|>assistant\nThe answer is 56.<|im_end|>\n',
    );
  });

  it.each(cases.map((c) => [`${c.template}: ${c.title}`, c] as const))('renders like Python Jinja2 (transformers settings): %s', (_, c) => {
    const template = new ChatTemplate(c.template === 'qwen2.5' ? qwenConfig.chat_template : CHATML_TEMPLATE, { bos_token: '', eos_token: '<|im_end|>' });
    const out = template.render(c.messages, { addGenerationPrompt: c.add_generation_prompt, ...(c.tools ? { tools: c.tools } : {}) });
    expect(out).toBe(c.expected);
  });

  it('passes special tokens and extra variables to the template', () => {
    const template = new ChatTemplate('{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{% if flag %}!{% endif %}', { bos_token: '<s>' });
    expect(template.render([{ role: 'user', content: 'x' }], { extra: { flag: true } })).toBe('<s>x!');
  });

  it('turns raise_exception into ENGINE_INVALID_INPUT and a broken template into ENGINE_IO', () => {
    const strict = new ChatTemplate("{% if messages[0].role != 'user' %}{{ raise_exception('Conversations must start with a user turn') }}{% endif %}ok");
    expect(strict.render([{ role: 'user', content: 'x' }])).toBe('ok');
    expect(() => strict.render([{ role: 'assistant', content: 'x' }])).toThrow(
      expect.objectContaining({ code: 'ENGINE_INVALID_INPUT', message: expect.stringContaining('Conversations must start with a user turn') }),
    );
    expect(() => new ChatTemplate('{% if %}')).toThrow(expect.objectContaining({ code: 'ENGINE_IO', field: 'chat_template' }));
    expect(() => strict.render([{ role: 'user' } as unknown as ChatMessage])).toThrow(/messages must be a list/);
  });

  it('feeds the tokenizer: special tokens of a rendered prompt encode to their ids', () => {
    const byteTok = new ByteTokenizer();
    const prompt = new ChatTemplate(CHATML_TEMPLATE).render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
    expect(byteTok.encode(prompt)).toEqual([257, ...Buffer.from('user\nhi'), 258, 10, 257, ...Buffer.from('assistant\n')]);

    const hf = HfTokenizer.fromJson(read('tokenizer.json'), read('qwen2.5-tokenizer_config.json'));
    const qwenPrompt = new ChatTemplate(qwenConfig.chat_template).render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
    const ids = hf.encode(qwenPrompt);
    const imStart = hf.tokenToId('<|im_start|>')!;
    expect(ids.filter((id) => id === imStart)).toHaveLength(3);
    expect(hf.decode(ids)).toBe(qwenPrompt);
  });
});
