import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Prng } from '../util/prng';
import { ByteTokenizer } from './byte-tokenizer';
import { HfTokenizer } from './hf-tokenizer';
import { StopStringScanner, cutAtStop, findEarliestStop } from './stop-strings';
import type { Tokenizer } from './tokenizer';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '__golden__', 'tokenizer');
const read = (name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8'));

/** The obvious quadratic answer: the first prefix of tokens whose text contains a stop string. */
function bruteForce(tok: Tokenizer, ids: number[], stops: string[]) {
  for (let k = 1; k <= ids.length; k++) {
    const text = tok.decode(ids.slice(0, k));
    const hit = findEarliestStop(text, stops);
    // A prefix ending inside a character shows U+FFFD; only count text that is complete.
    if (hit && !text.endsWith('\ufffd')) return { stop: hit.stop, textIndex: hit.index, text: text.slice(0, hit.index), tokenCount: k };
  }
  return null;
}

describe('stop strings', () => {
  const bytes = new ByteTokenizer();
  const bpe = HfTokenizer.fromJson(read('tokenizer.json'), read('qwen2.5-tokenizer_config.json'));

  it('finds the earliest stop, the longest on a tie', () => {
    expect(findEarliestStop('a\n\nb###', ['###', '\n\n'])).toEqual({ index: 1, stop: '\n\n' });
    expect(findEarliestStop('xab', ['a', 'ab'])).toEqual({ index: 1, stop: 'ab' });
    expect(findEarliestStop('abc', ['z', ''])).toBeNull();
    expect(findEarliestStop('abab', ['ab'], 1)).toEqual({ index: 2, stop: 'ab' });
  });

  it('stops on a string that spans several tokens and keeps the token that completed it', () => {
    const ids = bytes.encode('The answer is 42.</answer> trailing');
    const match = cutAtStop(bytes, ids, ['</answer>']);
    expect(match).toEqual({ stop: '</answer>', textIndex: 17, text: 'The answer is 42.', tokenCount: 26 });
    expect(bytes.decode(ids.slice(0, match!.tokenCount))).toBe('The answer is 42.</answer>');
  });

  it('handles a stop string made of a character split across byte tokens', () => {
    const ids = bytes.encode('ab你好cd');
    const match = cutAtStop(bytes, ids, ['好']);
    expect(match).toMatchObject({ text: 'ab你', tokenCount: 8 });
  });

  it('matches special tokens as text unless they are skipped', () => {
    const ids = bytes.encode('hi<|im_end|>more');
    expect(cutAtStop(bytes, ids, ['<|im_end|>'])).toMatchObject({ text: 'hi', tokenCount: 3 });
    expect(cutAtStop(bytes, ids, ['<|im_end|>'], { skipSpecial: true })).toBeNull();
  });

  it('returns null without a stop, and the scanner keeps the full text', () => {
    const ids = bpe.encode('Hello world! What is 12 + 34?');
    expect(cutAtStop(bpe, ids, ['###'])).toBeNull();
    const scanner = new StopStringScanner(bpe, ['###']);
    ids.forEach((id) => scanner.push(id));
    expect(scanner.text).toBe('Hello world! What is 12 + 34?');
    expect(scanner.match).toBeNull();
    // With no stop strings nothing ever matches.
    expect(cutAtStop(bpe, ids, [])).toBeNull();
  });

  it('keeps answering with the first match after it', () => {
    const scanner = new StopStringScanner(bytes, ['b']);
    expect(scanner.push(97)).toBeNull();
    const first = scanner.push(98);
    expect(first).toMatchObject({ text: 'a', tokenCount: 2 });
    expect(scanner.push(98)).toBe(first);
  });

  it('agrees with the brute-force answer on random token streams (byte and BPE tokenizers)', () => {
    const rng = new Prng(3);
    const pieces = ['a', 'b', 'ab', ' ', '\n', '你', '好', 'é', '<|im_end|>', 'Hello', ' world', '12', '!'];
    const stops = ['ab', '\n\n', '你好', 'é<|im_end|>', 'world!', 'b ', 'aa'];
    let matched = 0;
    for (let round = 0; round < 150; round++) {
      let text = '';
      for (let i = 0, n = 1 + Math.floor(rng.uniform() * 12); i < n; i++) text += pieces[Math.floor(rng.uniform() * pieces.length)];
      const chosen = stops.filter(() => rng.uniform() < 0.5);
      for (const tok of [bytes, bpe] as Tokenizer[]) {
        const ids = tok.encode(text);
        const want = bruteForce(tok, ids, chosen);
        expect([text, chosen, cutAtStop(tok, ids, chosen)]).toEqual([text, chosen, want]);
        if (want) matched++;
      }
    }
    expect(matched).toBeGreaterThan(60);
  });

  it('refuses stop lists that are not strings', () => {
    expect(() => new StopStringScanner(bytes, [1 as unknown as string])).toThrow(expect.objectContaining({ code: 'ENGINE_INVALID_OPTIONS' }));
  });
});
