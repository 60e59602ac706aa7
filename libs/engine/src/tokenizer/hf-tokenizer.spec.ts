import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HfTokenizer } from './hf-tokenizer';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '__golden__', 'tokenizer');
const read = (name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8'));
const expected = read('expected.json') as { vocab_size: number; special_ids: Record<string, number>; encodings: Array<{ text: string; ids: number[] }> };

describe('HfTokenizer', () => {
  const tok = HfTokenizer.fromJson(read('tokenizer.json'), read('qwen2.5-tokenizer_config.json'));

  it('encodes like the independent Python BPE reference (Qwen2 pre-tokenizer, NFC, merges, special tokens)', () => {
    expect(expected.encodings.length).toBeGreaterThan(10);
    for (const { text, ids } of expected.encodings) expect([text, tok.encode(text)]).toEqual([text, ids]);
  });

  it('decodes back to the (NFC-normalised) text', () => {
    for (const { text, ids } of expected.encodings) expect(tok.decode(ids)).toBe(text.normalize('NFC'));
  });

  it('reads vocabulary size and special-token roles from tokenizer_config.json', () => {
    expect(tok.vocabSize).toBe(expected.vocab_size);
    expect(Object.fromEntries(tok.specialTokens)).toEqual(expected.special_ids);
    expect(tok.bosId).toBeNull();
    expect(tok.eosId).toBe(expected.special_ids['<|im_end|>']);
    expect(tok.padId).toBe(expected.special_ids['<|endoftext|>']);
    // Older configs write roles as AddedToken objects.
    const old = HfTokenizer.fromJson(read('tokenizer.json'), { eos_token: { __type: 'AddedToken', content: '<|endoftext|>' } });
    expect(old.eosId).toBe(expected.special_ids['<|endoftext|>']);
  });

  it('skips special tokens on request, decodes an empty list, shows raw tokens', () => {
    const ids = tok.encode('<|im_start|>user\nHello world!<|im_end|>');
    expect(tok.decode(ids, { skipSpecial: true })).toBe('user\nHello world!');
    expect(tok.decode([])).toBe('');
    expect(tok.tokenToString(tok.encode(' ')[0])).toBe('Ġ');
    expect(tok.tokenToId('<|im_end|>')).toBe(expected.special_ids['<|im_end|>']);
    expect(tok.tokenToId('no such token')).toBeUndefined();
  });

  it("decodes ids without a vocabulary entry as nothing, as Hugging Face's tokenizers do", () => {
    // Expected texts from tokenizers 0.23.3 (Python) on this tokenizer.json: `decode` drops ids
    // `id_to_token` does not know, like the 271 padding ids of a real Qwen2.5 checkpoint (151665-151935).
    const hello = tok.encode('Hello world!<|im_end|>');
    expect(hello).toEqual([280, 297, 0, 306]);
    const beyond = expected.vocab_size;
    expect(tok.decode([beyond])).toBe('');
    expect(tok.decode([280, 297, beyond, 127859, 151935, 0, 306])).toBe('Hello world!<|im_end|>');
    expect(tok.decode([280, 297, beyond, 127859, 151935, 0, 306], { skipSpecial: true })).toBe('Hello world!');
    expect(tok.decode([beyond, ...hello])).toBe('Hello world!<|im_end|>');
    expect(tok.tokenToString(127859)).toBe('');
    // What is not a token id at all is refused.
    for (const bad of [-1, 1.5, 2 ** 32, Number.NaN]) {
      expect(() => tok.decode([bad])).toThrow(expect.objectContaining({ code: 'ENGINE_INVALID_INPUT', field: 'ids' }));
      expect(() => tok.tokenToString(bad)).toThrow(/is not a token id/);
    }
  });

  it('reports unusable files as ENGINE_IO', () => {
    expect(() => HfTokenizer.fromJson([])).toThrow(expect.objectContaining({ code: 'ENGINE_IO' }));
    expect(() => HfTokenizer.fromJson({ model: { type: 'NoSuchModel' } })).toThrow(/tokenizer.json could not be loaded/);
    expect(() => HfTokenizer.fromJson(read('tokenizer.json'), { eos_token: '<|missing|>' })).toThrow(/eos_token "<\|missing\|>" is not in the vocabulary/);
  });
});
