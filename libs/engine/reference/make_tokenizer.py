#!/usr/bin/env python3
"""A tiny Qwen2-style byte-level BPE `tokenizer.json` and the ids a reference encoder gives for test texts.

Built without the `tokenizers` library: GPT-2's byte-to-unicode table, a few dozen BPE merges learned
from a small corpus, Qwen2's pre-tokenizer regex (needs the `regex` module for \\p{L}/\\p{N}), NFC
normalisation and added special tokens, in the layout Qwen2.5's tokenizer.json uses. The encoder below
(split on special tokens, NFC, regex pre-tokenize, bytes to unicode, merge by rank) is written from the
algorithm's description, independently of the JavaScript library the engine wraps, so the TypeScript
test compares two implementations.

Also renders chat templates with Python's Jinja2 configured as `transformers` does
(`trim_blocks`, `lstrip_blocks`, a `tojson` filter with `ensure_ascii=False`), for the template tests.

Run: python3 libs/engine/reference/make_tokenizer.py   (writes src/__golden__/tokenizer/)
"""
import json
import os
import unicodedata
from collections import Counter

import regex

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src', '__golden__', 'tokenizer')

QWEN2_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']

CORPUS = """The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs.
Hello world! Hello there, hello again. What is 12 + 34? It is 46.
<|im_start|>user
Solve 7 * 8.<|im_end|>
<|im_start|>assistant
The answer is 56.<|im_end|>
héllo wörld, naïve café. 你好，世界。
"""


def bytes_to_unicode():
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + list(range(ord('®'), ord('ÿ') + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, [chr(c) for c in cs]


BS, CS = bytes_to_unicode()
BYTE_TO_CHAR = dict(zip(BS, CS))
PRETOKENIZE = regex.compile(QWEN2_PATTERN)


def pre_tokens(text):
    text = unicodedata.normalize('NFC', text)
    return [''.join(BYTE_TO_CHAR[b] for b in piece.encode('utf-8')) for piece in PRETOKENIZE.findall(text)]


def split_specials(text):
    """Splits text into (is_special, piece), longest special first at each position."""
    out, buf, i = [], '', 0
    specials = sorted(SPECIALS, key=len, reverse=True)
    while i < len(text):
        hit = next((s for s in specials if text.startswith(s, i)), None)
        if hit:
            if buf:
                out.append((False, buf))
                buf = ''
            out.append((True, hit))
            i += len(hit)
        else:
            buf += text[i]
            i += 1
    if buf:
        out.append((False, buf))
    return out


def learn_merges(corpus, count):
    words = Counter()
    for is_special, piece in split_specials(corpus):
        if not is_special:
            for w in pre_tokens(piece):
                words[tuple(w)] += 1
    merges = []
    for _ in range(count):
        pairs = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        # Most frequent pair; ties broken by the pair itself so the result is deterministic.
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        merged = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + c
        words = merged
    return merges


def bpe(word, ranks):
    parts = list(word)
    while len(parts) > 1:
        best, best_rank = None, None
        for i in range(len(parts) - 1):
            r = ranks.get((parts[i], parts[i + 1]))
            if r is not None and (best_rank is None or r < best_rank):
                best, best_rank = i, r
        if best is None:
            break
        pair = (parts[best], parts[best + 1])
        out, i = [], 0
        while i < len(parts):
            if i + 1 < len(parts) and (parts[i], parts[i + 1]) == pair:
                out.append(parts[i] + parts[i + 1])
                i += 2
            else:
                out.append(parts[i])
                i += 1
        parts = out
    return parts


def encode(text, vocab, ranks, special_ids):
    ids = []
    for is_special, piece in split_specials(text):
        if is_special:
            ids.append(special_ids[piece])
            continue
        for w in pre_tokens(piece):
            ids.extend(vocab[t] for t in bpe(w, ranks))
    return ids


def render_templates(qwen_template):
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise ValueError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters['tojson'] = tojson
    env.globals['raise_exception'] = raise_exception

    chatml = open(os.path.join(OUT, 'chatml.jinja')).read()
    conversation = [
        {'role': 'system', 'content': 'You are a careful math tutor.'},
        {'role': 'user', 'content': 'What is 7 * 8?'},
        {'role': 'assistant', 'content': 'The answer is 56.'},
    ]
    cases = [
        ('qwen2.5', 'system+user+assistant', conversation, False, None),
        ('qwen2.5', 'system+user, generation prompt', conversation[:2], True, None),
        ('qwen2.5', 'user only (default system prompt)', [{'role': 'user', 'content': 'héllo 👋\nline two'}], True, None),
        ('qwen2.5', 'multi-turn with a tool call and a tool result', [
            {'role': 'user', 'content': 'Weather in Paris?'},
            {'role': 'assistant', 'content': '', 'tool_calls': [{'type': 'function', 'function': {'name': 'get_weather', 'arguments': {'city': 'Paris', 'unit': 'C'}}}]},
            {'role': 'tool', 'content': '{"temp": 21}'},
            {'role': 'assistant', 'content': 'It is 21 °C.'},
        ], False, None),
        ('qwen2.5', 'tools listed in the system prompt', conversation[:2], True, [
            {'type': 'function', 'function': {'name': 'add', 'description': 'Add two numbers', 'parameters': {'type': 'object', 'properties': {'a': {'type': 'number'}, 'b': {'type': 'number'}}, 'required': ['a', 'b']}}},
        ]),
        ('chatml', 'system+user+assistant', conversation, False, None),
        ('chatml', 'user, generation prompt', [{'role': 'user', 'content': '2+2='}], True, None),
    ]
    out = []
    for name, title, messages, gen, tools in cases:
        template = env.from_string(qwen_template if name == 'qwen2.5' else chatml)
        context = {'messages': messages, 'add_generation_prompt': gen, 'bos_token': '', 'eos_token': '<|im_end|>'}
        if tools is not None:
            context['tools'] = tools
        out.append({'template': name, 'title': title, 'messages': messages, 'add_generation_prompt': gen, 'tools': tools, 'expected': template.render(**context)})
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    merges = learn_merges(CORPUS, 48)
    vocab = {c: i for i, c in enumerate(CS)}
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    special_ids = {s: len(vocab) + i for i, s in enumerate(SPECIALS)}
    ranks = {m: i for i, m in enumerate(merges)}

    byte_level = {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': False, 'use_regex': False}
    tokenizer = {
        'version': '1.0',
        'truncation': None,
        'padding': None,
        'added_tokens': [
            {'id': special_ids[s], 'content': s, 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False, 'special': True}
            for s in SPECIALS
        ],
        'normalizer': {'type': 'NFC'},
        'pre_tokenizer': {'type': 'Sequence', 'pretokenizers': [
            {'type': 'Split', 'pattern': {'Regex': QWEN2_PATTERN}, 'behavior': 'Isolated', 'invert': False},
            byte_level,
        ]},
        'post_processor': {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': False, 'use_regex': False},
        'decoder': {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': False, 'use_regex': False},
        'model': {
            'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': None, 'end_of_word_suffix': None,
            'fuse_unk': False, 'byte_fallback': False, 'ignore_merges': False,
            'vocab': vocab, 'merges': [f'{a} {b}' for a, b in merges],
        },
    }
    with open(os.path.join(OUT, 'tokenizer.json'), 'w', encoding='utf-8') as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
        f.write('\n')

    texts = [
        'Hello world!',
        'The quick brown fox jumps over the lazy dog.',
        'What is 12 + 34? It is 46.',
        "I'LL say it's DON'T",
        'héllo wörld, naïve café',
        'he\u0301llo (decomposed accent, NFC composes it)',
        '你好，世界。',
        'emoji 👋🏽 and tabs\tand\n\nnewlines  \n  end',
        '<|im_start|>user\nSolve 7 * 8.<|im_end|>\n<|im_start|>assistant\n',
        '<|im_end|><|im_end|>x<|endoftext|>',
        '',
        '   ',
    ]
    cases = [{'text': t, 'ids': encode(t, vocab, ranks, special_ids)} for t in texts]
    qwen_config = json.load(open(os.path.join(OUT, 'qwen2.5-tokenizer_config.json'), encoding='utf-8'))
    expected = {
        'vocab_size': len(vocab) + len(SPECIALS),
        'special_ids': special_ids,
        'encodings': cases,
        'chat_templates': render_templates(qwen_config['chat_template']),
    }
    with open(os.path.join(OUT, 'expected.json'), 'w', encoding='utf-8') as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
        f.write('\n')
    print('merges', len(merges), 'vocab', len(vocab) + len(SPECIALS))


if __name__ == '__main__':
    main()
