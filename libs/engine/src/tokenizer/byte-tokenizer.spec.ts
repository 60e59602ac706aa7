import { isEngineError } from '../errors';
import { TINY_CHAR_SPECIAL_TOKENS } from '../model/model-config';
import { Prng } from '../util/prng';
import { ByteTokenizer } from './byte-tokenizer';
import { HfTokenizer } from './hf-tokenizer';

const SAMPLES = [
  '',
  'hello',
  'héllo wörld',
  '你好，世界',
  'emoji 👋🏽 family 👨‍👩‍👧',
  'nul \u0000 and del \u007f',
  '<|im_start|>user\n2+2=<|im_end|>\n<|im_start|>assistant\n4<|im_end|>',
  '<|im_end|><|im_end|>',
  '<|im_start',
  'tabs\tand\r\nnewlines',
];

function randomText(rng: Prng, length: number): string {
  const ranges: Array<[number, number]> = [
    [0x20, 0x7e],
    [0x00, 0x1f],
    [0xa0, 0x7ff],
    [0x800, 0xd7ff],
    [0xe000, 0xfffd],
    [0x10000, 0x10ffff],
  ];
  let s = '';
  for (let i = 0; i < length; i++) {
    const [lo, hi] = ranges[Math.floor(rng.uniform() * ranges.length)];
    s += String.fromCodePoint(lo + Math.floor(rng.uniform() * (hi - lo + 1)));
    if (rng.uniform() < 0.05) s += '<|im_end|>';
  }
  return s;
}

describe('ByteTokenizer', () => {
  const tok = new ByteTokenizer();

  it('uses the tiny-char preset ids: bytes 0-255, then the special tokens', () => {
    expect(tok.vocabSize).toBe(260);
    expect(Object.fromEntries(tok.specialTokens)).toEqual(TINY_CHAR_SPECIAL_TOKENS);
    expect([tok.bosId, tok.eosId, tok.padId]).toEqual([256, 258, 259]);
    expect(tok.encode('A')).toEqual([65]);
    expect(tok.encode('é')).toEqual([0xc3, 0xa9]);
    expect(tok.encode('<|im_start|>hi<|im_end|>')).toEqual([257, 104, 105, 258]);
  });

  it('round-trips any well-formed text exactly, special tokens included', () => {
    for (const s of SAMPLES) expect(tok.decode(tok.encode(s))).toBe(s);
    const rng = new Prng(11);
    for (let i = 0; i < 200; i++) {
      const s = randomText(rng, 1 + Math.floor(rng.uniform() * 40));
      expect(tok.decode(tok.encode(s))).toBe(s);
    }
  });

  it('encodes lone surrogates as U+FFFD (as TextEncoder does)', () => {
    expect(tok.encode('a\ud800b')).toEqual([97, 0xef, 0xbf, 0xbd, 98]);
    expect(tok.decode(tok.encode('\udc00'))).toBe('\ufffd');
    // A proper pair is one code point.
    expect(tok.encode('\ud83d\ude00')).toEqual([0xf0, 0x9f, 0x98, 0x80]);
  });

  it('decodes invalid UTF-8 with replacement characters, and decodeBytes gives the exact bytes', () => {
    expect(tok.decode([0xe4, 0xbd])).toBe('\ufffd'); // a truncated 3-byte character
    expect(tok.decode([0xff, 104, 0xc3])).toBe('\ufffdh\ufffd');
    expect([...tok.decodeBytes([0xe4, 0xbd, 258, 0xa0])]).toEqual([0xe4, 0xbd, 0xa0]);
    // Bytes are decoded separately on either side of a special token, as HF's byte-level decoder does.
    expect(tok.decode([0xe4, 0xbd, 258, 0xa0])).toBe('\ufffd<|im_end|>\ufffd');
    expect(tok.decode([0xe4, 0xbd, 0xa0])).toBe('你');
  });

  it('skips special tokens on request and adds BOS on request', () => {
    expect(tok.decode([257, 104, 105, 258], { skipSpecial: true })).toBe('hi');
    expect(tok.encode('hi', { addSpecialTokens: true })).toEqual([256, 104, 105]);
    expect(new ByteTokenizer({ bosToken: null }).encode('hi', { addSpecialTokens: true })).toEqual([104, 105]);
  });

  it('matches the longest special token when one is a prefix of another', () => {
    const t = new ByteTokenizer({ specialTokens: { '<a>': 256, '<a>>': 257 }, bosToken: null, eosToken: '<a>', padToken: null });
    expect(t.encode('<a>><a>')).toEqual([257, 256]);
    expect(t.eosId).toBe(256);
  });

  it('decodes ids past the vocabulary as nothing (as its Hugging Face form does); refuses what is not an id, and bad special-token tables', () => {
    const hi = [...new TextEncoder().encode('h€')];
    // An id without an entry is dropped before decoding: the bytes around it still make one character.
    expect(tok.decode([hi[0], 260, hi[1], 999, hi[2], hi[3]])).toBe('h€');
    expect(tok.decodeBytes([260, 65])).toEqual(Uint8Array.from([65]));
    expect(tok.tokenToString(999)).toBe('');
    for (const bad of [-1, 1.5, NaN, 2 ** 32]) {
      expect(() => tok.decode([bad])).toThrow(expect.objectContaining({ code: 'ENGINE_INVALID_INPUT' }));
    }
    expect(() => new ByteTokenizer({ specialTokens: { '<x>': 257 } })).toThrow(/256..256 without gaps/);
    expect(() => new ByteTokenizer({ specialTokens: { '': 256 } })).toThrow(/must not be empty/);
    expect(() => new ByteTokenizer({ eosToken: '<nope>' })).toThrow(/not among/);
  });

  it('shows bytes the way byte-level BPE vocabularies write them', () => {
    expect(tok.tokenToString(0x20)).toBe('Ġ');
    expect(tok.tokenToString(0x0a)).toBe('Ċ');
    expect(tok.tokenToString(65)).toBe('A');
    expect(tok.tokenToString(258)).toBe('<|im_end|>');
    expect(tok.tokenToId('Ġ')).toBe(0x20);
    expect(tok.tokenToId('<|pad|>')).toBe(259);
    expect(tok.tokenToId('ab')).toBeUndefined();
  });

  it('exports a tokenizer.json that @huggingface/tokenizers runs with identical results', () => {
    const hf = HfTokenizer.fromJson(tok.toTokenizerJson(), tok.toTokenizerConfig());
    expect(hf.vocabSize).toBe(tok.vocabSize);
    expect([hf.bosId, hf.eosId, hf.padId]).toEqual([tok.bosId, tok.eosId, tok.padId]);
    const rng = new Prng(5);
    for (const s of [...SAMPLES, ...Array.from({ length: 50 }, () => randomText(rng, 30))]) {
      expect(hf.encode(s)).toEqual(tok.encode(s));
      expect(hf.decode(tok.encode(s))).toBe(s);
      expect(hf.decode(tok.encode(s), { skipSpecial: true })).toBe(tok.decode(tok.encode(s), { skipSpecial: true }));
    }
    for (let id = 0; id < tok.vocabSize; id++) expect(hf.tokenToString(id)).toBe(tok.tokenToString(id));
  });

  it('recognises its own export and nothing else', () => {
    const back = ByteTokenizer.fromTokenizerJson(tok.toTokenizerJson(), tok.toTokenizerConfig('x'));
    expect(back).not.toBeNull();
    expect([back!.bosId, back!.eosId, back!.padId, back!.vocabSize]).toEqual([256, 258, 259, 260]);
    // Without a config there are no roles.
    expect(ByteTokenizer.fromTokenizerJson(tok.toTokenizerJson())!.eosId).toBeNull();
    const withMerges = tok.toTokenizerJson() as { model: { merges: string[] } };
    withMerges.model.merges = ['Ġ a'];
    expect(ByteTokenizer.fromTokenizerJson(withMerges)).toBeNull();
    expect(ByteTokenizer.fromTokenizerJson({ model: { type: 'WordPiece' } })).toBeNull();
    expect(ByteTokenizer.fromTokenizerJson(null)).toBeNull();
  });

  it('raises EngineError for every failure', () => {
    try {
      tok.decode([-1]);
    } catch (e) {
      expect(isEngineError(e)).toBe(true);
    }
    expect.assertions(1);
  });
});
