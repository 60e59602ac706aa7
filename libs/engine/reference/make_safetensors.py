#!/usr/bin/env python3
"""Golden safetensors files for the engine's reader/writer, made independently of the TypeScript code.

Writes the bytes by hand from the format's specification (the `safetensors` package is not installed):
8-byte little-endian header length, compact JSON header padded with spaces to a multiple of 8 with
`__metadata__` first and tensors ordered like the Rust writer (larger dtypes first, then by name), then
the raw little-endian data. 16-bit values come from NumPy (`astype(np.float16)`) and, independently,
from exact rational rounding (round half to even) - the script checks that both agree for F16 and uses
the rational method for BF16, which NumPy lacks.

Also writes a tiny sharded Qwen2 model folder as transformers lays it out (config.json with fields the
engine does not model, two BF16 shards, model.safetensors.index.json, generation_config.json, and the
tokenizer files of ../src/__golden__/tokenizer made by make_tokenizer.py, which must run first). Its
weight values follow a formula of exact bfloat16 numbers the test recomputes.

Run: python3 libs/engine/reference/make_safetensors.py   (needs numpy; writes src/__golden__/safetensors/)
"""
import json
import math
import os
import struct
from fractions import Fraction

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src', '__golden__', 'safetensors')

DTYPE_SIZE = {'BOOL': 1, 'U8': 1, 'I8': 1, 'I16': 2, 'F16': 2, 'BF16': 2, 'I32': 4, 'F32': 4, 'F64': 8, 'I64': 8}
# The Rust writer sorts by dtype "rank" descending (its enum order), then by name.
DTYPE_RANK = {'BOOL': 0, 'U8': 1, 'I8': 2, 'I16': 5, 'F16': 7, 'BF16': 8, 'I32': 9, 'F32': 11, 'F64': 12, 'I64': 13}


def f32_bits(x):
    return struct.unpack('<I', struct.pack('<f', x))[0]


def round_to_format(x, mant_bits, min_exp, max_finite_exp):
    """Nearest value (ties to even) of a binary float with `mant_bits` stored mantissa bits.

    min_exp: exponent of the smallest normal; max_finite_exp: exponent of the largest finite binade.
    Returns a Python float (exact), or +/-inf on overflow. NaN is handled by the caller.
    """
    if x == 0 or math.isinf(x):
        return x
    sign = -1.0 if x < 0 else 1.0
    a = Fraction(abs(x))
    m, e = math.frexp(abs(x))  # abs(x) = m * 2**e, 0.5 <= m < 1, so the leading bit has weight 2**(e-1)
    quantum_exp = max(e - 1 - mant_bits, min_exp - mant_bits)
    k = round(a / Fraction(2) ** quantum_exp)  # Fraction.__round__ rounds half to even
    v = Fraction(k) * Fraction(2) ** quantum_exp
    limit = Fraction(2) ** (max_finite_exp + 1)
    if v >= limit:
        return sign * math.inf
    return sign * float(v)


def to_f16_bits(x):
    if math.isnan(x):
        return None
    v = round_to_format(x, 10, -14, 15)
    bits = int(np.array([v], dtype=np.float16).view(np.uint16)[0])  # v is exact in float16
    if v == 0 and math.copysign(1.0, x) < 0:
        bits |= 0x8000
    return bits


def to_bf16_bits(x):
    if math.isnan(x):
        return None
    v = round_to_format(x, 7, -126, 127)
    if v == 0:
        return 0x8000 if math.copysign(1.0, x) < 0 else 0
    return f32_bits(v) >> 16  # v is exact in bfloat16, so its float32 low half is zero


def header_bytes(entries, metadata):
    """entries: list of (name, dtype, shape, nbytes) in data order."""
    header = {}
    if metadata:
        header['__metadata__'] = metadata
    offset = 0
    for name, dtype, shape, nbytes in entries:
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, separators=(',', ':')).encode('utf-8')
    text += b' ' * ((8 - len(text) % 8) % 8)
    return struct.pack('<Q', len(text)) + text


def write_file(path, tensors, metadata=None):
    """tensors: dict name -> (dtype, shape, raw little-endian bytes)."""
    order = sorted(tensors.items(), key=lambda kv: (-DTYPE_RANK[kv[1][0]], kv[0]))
    entries = []
    for name, (dtype, shape, raw) in order:
        count = int(np.prod(shape)) if shape else 1
        assert len(raw) == count * DTYPE_SIZE[dtype], name
        entries.append((name, dtype, shape, len(raw)))
    with open(path, 'wb') as f:
        f.write(header_bytes(entries, metadata))
        for _, (_, _, raw) in order:
            f.write(raw)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261202)

    # Values chosen to hit every branch of narrowing: signed zeros, exact values, ties in both
    # directions, the largest finite float16 and the overflow threshold, float16 subnormals and the
    # underflow tie, float32 subnormals, infinities and NaN.
    edge = [
        0.0, -0.0, 1.0, -2.0, 0.1, -0.3333333, 3.140625, 65504.0, 65519.99, 65520.0, -70000.0,
        6.103515625e-05, 6.0e-05, 5.960464477539063e-08, 2.9802322387695312e-08, 2.99e-08, 1.0e-09,
        1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -8 + 2 ** -20,
        3.3895313892515355e38, 3.4028234663852886e38, 1.0e-40, -1.0e-45, 1.1754943508222875e-38,
        float('inf'), float('-inf'), float('nan'), 255.5, 256.5,
    ]
    edge = [float(np.float32(v)) for v in edge]
    # float32 inputs: the edge values plus random bit patterns over the whole range and ties.
    random_bits = rng.integers(0, 2 ** 32, size=256, dtype=np.uint64).astype(np.uint32)
    random_vals = [float(v) for v in random_bits.view(np.float32)]
    ties16 = []
    # Exact float16 ties: a float16 value plus half its spacing.
    for _ in range(64):
        h = np.float16(rng.normal() * 100)
        spacing = float(np.spacing(h))
        ties16.append(float(np.float32(float(h) + spacing / 2)))
    ties_bf16 = []
    for _ in range(64):
        b = f32_bits(float(np.float32(rng.normal() * 1e3))) & 0xFFFF0000
        ties_bf16.append(struct.unpack('<f', struct.pack('<I', b | 0x8000))[0])
    narrowing_inputs = edge + random_vals + ties16 + ties_bf16

    narrowing = []
    for v in narrowing_inputs:
        f16 = to_f16_bits(v)
        if f16 is not None:
            # Cross-check the rational rounding against NumPy's float16 cast.
            with np.errstate(over='ignore'):
                np_bits = int(np.array([v], dtype=np.float32).astype(np.float16).view(np.uint16)[0])
            assert np_bits == f16, (v, hex(np_bits), hex(f16))
        narrowing.append({'f32': f32_bits(v), 'f16': f16, 'bf16': to_bf16_bits(v)})

    # The files: one float tensor set written as F32, F16 and BF16.
    edge_arr = np.array(edge, dtype=np.float32).reshape(4, 8)
    rand_arr = rng.normal(size=(8, 8)).astype(np.float32)
    expected = {'files': {}}

    def widened(bits_list, kind):
        out = []
        for b in bits_list:
            if b is None:
                out.append('nan')
            elif kind == 'f16':
                out.append(f32_bits(float(np.array([b], dtype=np.uint16).view(np.float16)[0])))
            else:
                out.append(b << 16)
        return out

    for dtype in ('F32', 'F16', 'BF16'):
        tensors = {}
        exp_tensors = {}
        for name, arr in (('edge', edge_arr), ('model.layers.0.mlp.up_proj.weight', rand_arr)):
            flat = [float(v) for v in arr.reshape(-1)]
            if dtype == 'F32':
                raw = arr.astype('<f4').tobytes()
                values = ['nan' if math.isnan(v) else f32_bits(v) for v in flat]
            elif dtype == 'F16':
                bits = [to_f16_bits(v) for v in flat]
                raw = b''.join(struct.pack('<H', 0x7E00 if b is None else b) for b in bits)
                values = widened(bits, 'f16')
            else:
                bits = [to_bf16_bits(v) for v in flat]
                raw = b''.join(struct.pack('<H', 0x7FC0 if b is None else b) for b in bits)
                values = widened(bits, 'bf16')
            tensors[name] = (dtype, list(arr.shape), raw)
            exp_tensors[name] = {'dtype': dtype, 'shape': list(arr.shape), 'f32_bits': values}
        fname = f'floats-{dtype.lower()}.safetensors'
        write_file(os.path.join(OUT, fname), tensors, {'format': 'pt', 'source': 'make_safetensors.py'})
        expected['files'][fname] = {'metadata': {'format': 'pt', 'source': 'make_safetensors.py'}, 'tensors': exp_tensors}

    # Integer, double, boolean, empty and scalar tensors, no metadata.
    i64 = np.array([-(2 ** 63), -(2 ** 53), -1, 0, 1, 2 ** 40, 2 ** 63 - 1], dtype='<i8')
    i32 = np.array([[-(2 ** 31), -7, 0], [7, 65536, 2 ** 31 - 1]], dtype='<i4')
    u8 = np.array([0, 1, 127, 128, 255], dtype='<u1')
    bools = np.array([True, False, True], dtype='<u1')
    f64 = np.array([0.1, -1e300, 2.5], dtype='<f8')
    empty = np.zeros((0, 3), dtype='<f4')
    scalar = np.array(1.5, dtype='<f4')
    mixed = {
        'ids': ('I64', [7], i64.tobytes()),
        'grid': ('I32', [2, 3], i32.tobytes()),
        'bytes': ('U8', [5], u8.tobytes()),
        'mask': ('BOOL', [3], bools.tobytes()),
        'doubles': ('F64', [3], f64.tobytes()),
        'empty': ('F32', [0, 3], empty.tobytes()),
        'scalar': ('F32', [], scalar.tobytes()),
    }
    write_file(os.path.join(OUT, 'mixed.safetensors'), mixed)
    expected['files']['mixed.safetensors'] = {
        'metadata': None,
        'tensors': {
            'ids': {'dtype': 'I64', 'shape': [7], 'values': [str(int(v)) for v in i64]},
            'grid': {'dtype': 'I32', 'shape': [2, 3], 'values': [int(v) for v in i32.reshape(-1)]},
            'bytes': {'dtype': 'U8', 'shape': [5], 'values': [int(v) for v in u8]},
            'mask': {'dtype': 'BOOL', 'shape': [3], 'values': [int(v) for v in bools]},
            'doubles': {'dtype': 'F64', 'shape': [3], 'values': [float(v) for v in f64]},
            'empty': {'dtype': 'F32', 'shape': [0, 3], 'values': []},
            'scalar': {'dtype': 'F32', 'shape': [], 'values': [1.5]},
        },
    }
    expected['narrowing'] = narrowing
    write_tiny_qwen2(os.path.join(OUT, 'tiny-qwen2'))
    write_tiny_lora(os.path.join(OUT, 'tiny-qwen2-lora'))
    with open(os.path.join(OUT, 'expected.json'), 'w') as f:
        json.dump(expected, f, separators=(',', ':'))
        f.write('\n')
    print('wrote', sorted(os.listdir(OUT)))


def tiny_weight_names(layers, hidden, inter, heads, kv_heads, vocab):
    """(name, shape) in transformers' order for a Qwen2 model with an untied head."""
    hd = hidden // heads
    out = [('model.embed_tokens.weight', [vocab, hidden])]
    for i in range(layers):
        p = f'model.layers.{i}.'
        out += [
            (p + 'input_layernorm.weight', [hidden]),
            (p + 'self_attn.q_proj.weight', [heads * hd, hidden]), (p + 'self_attn.q_proj.bias', [heads * hd]),
            (p + 'self_attn.k_proj.weight', [kv_heads * hd, hidden]), (p + 'self_attn.k_proj.bias', [kv_heads * hd]),
            (p + 'self_attn.v_proj.weight', [kv_heads * hd, hidden]), (p + 'self_attn.v_proj.bias', [kv_heads * hd]),
            (p + 'self_attn.o_proj.weight', [hidden, heads * hd]),
            (p + 'post_attention_layernorm.weight', [hidden]),
            (p + 'mlp.gate_proj.weight', [inter, hidden]), (p + 'mlp.up_proj.weight', [inter, hidden]),
            (p + 'mlp.down_proj.weight', [hidden, inter]),
        ]
    out += [('model.norm.weight', [hidden]), ('lm_head.weight', [vocab, hidden])]
    return out


def write_tiny_qwen2(folder):
    """A 2-layer Qwen2 folder in two BF16 shards. Tensor k (in sorted-name order) holds
    ((i * 7 + k * 13) % 61 - 30) / 64 at flat index i: exact in bfloat16."""
    import shutil
    os.makedirs(folder, exist_ok=True)
    tok_dir = os.path.join(OUT, '..', 'tokenizer')
    vocab, hidden, inter, layers, heads, kv_heads = 320, 16, 24, 2, 4, 2
    config = {
        'architectures': ['Qwen2ForCausalLM'], 'attention_dropout': 0.0, 'bos_token_id': 304, 'eos_token_id': 306,
        'hidden_act': 'silu', 'hidden_size': hidden, 'initializer_range': 0.02, 'intermediate_size': inter,
        'max_position_embeddings': 64, 'max_window_layers': 2, 'model_type': 'qwen2', 'num_attention_heads': heads,
        'num_hidden_layers': layers, 'num_key_value_heads': kv_heads, 'rms_norm_eps': 1e-06, 'rope_scaling': None,
        'rope_theta': 1000000.0, 'sliding_window': 64, 'tie_word_embeddings': False, 'torch_dtype': 'bfloat16',
        'transformers_version': '4.45.0', 'use_cache': True, 'use_sliding_window': False, 'vocab_size': vocab,
    }
    with open(os.path.join(folder, 'config.json'), 'w') as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(folder, 'generation_config.json'), 'w') as f:
        json.dump({'bos_token_id': 304, 'eos_token_id': [306, 304], 'do_sample': True, 'temperature': 0.7}, f, indent=2)
    shutil.copy(os.path.join(tok_dir, 'tokenizer.json'), os.path.join(folder, 'tokenizer.json'))
    shutil.copy(os.path.join(tok_dir, 'qwen2.5-tokenizer_config.json'), os.path.join(folder, 'tokenizer_config.json'))

    names = tiny_weight_names(layers, hidden, inter, heads, kv_heads, vocab)
    rank = {n: k for k, n in enumerate(sorted(n for n, _ in names))}
    tensors = {}
    for name, shape in names:
        count = int(np.prod(shape))
        values = [((i * 7 + rank[name] * 13) % 61 - 30) / 64 for i in range(count)]
        raw = b''.join(struct.pack('<H', to_bf16_bits(v)) for v in values)
        tensors[name] = ('BF16', shape, raw)
    # An old-style rotary cache some checkpoints carry; loaders ignore it.
    tensors['model.layers.0.self_attn.rotary_emb.inv_freq'] = ('F32', [2], np.array([1.0, 0.01], dtype='<f4').tobytes())
    first = [n for n, _ in names[: len(names) // 2]] + ['model.layers.0.self_attn.rotary_emb.inv_freq']
    shards = [
        ('model-00001-of-00002.safetensors', {n: tensors[n] for n in first}),
        ('model-00002-of-00002.safetensors', {n: t for n, t in tensors.items() if n not in first}),
    ]
    weight_map = {}
    total = 0
    for fname, part in shards:
        write_file(os.path.join(folder, fname), part, {'format': 'pt'})
        for n, (dtype, shape, raw) in part.items():
            weight_map[n] = fname
            total += len(raw)
    with open(os.path.join(folder, 'model.safetensors.index.json'), 'w') as f:
        json.dump({'metadata': {'total_size': total}, 'weight_map': dict(sorted(weight_map.items()))}, f, indent=2)


def write_tiny_lora(folder):
    """A PEFT LoRA adapter for tiny-qwen2 (r 4, q_proj and v_proj), adapter_config.json as PEFT 0.18 writes
    it. Factor k (in sorted key order) holds ((i * 5 + k * 3) % 17 - 8) / 32 at flat index i."""
    os.makedirs(folder, exist_ok=True)
    r, hidden, heads, kv_heads = 4, 16, 4, 2
    hd = hidden // heads
    config = {
        'alora_invocation_tokens': None, 'alpha_pattern': {}, 'arrow_config': None, 'auto_mapping': None,
        'base_model_name_or_path': 'tiny-qwen2', 'bias': 'none', 'corda_config': None, 'ensure_weight_tying': False,
        'eva_config': None, 'exclude_modules': None, 'fan_in_fan_out': False, 'inference_mode': True,
        'init_lora_weights': True, 'layer_replication': None, 'layers_pattern': None, 'layers_to_transform': None,
        'loftq_config': {}, 'lora_alpha': 8, 'lora_bias': False, 'lora_dropout': 0.05, 'megatron_config': None,
        'megatron_core': 'megatron.core', 'modules_to_save': None, 'peft_type': 'LORA', 'peft_version': '0.18.0',
        'qalora_group_size': 16, 'r': r, 'rank_pattern': {}, 'revision': None, 'target_modules': ['v_proj', 'q_proj'],
        'target_parameters': None, 'task_type': 'CAUSAL_LM', 'trainable_token_indices': None, 'use_dora': False,
        'use_qalora': False, 'use_rslora': False,
    }
    with open(os.path.join(folder, 'adapter_config.json'), 'w') as f:
        json.dump(config, f, indent=2)
    shapes = {}
    for i in range(2):
        for proj, out in (('q_proj', heads * hd), ('v_proj', kv_heads * hd)):
            base = f'base_model.model.model.layers.{i}.self_attn.{proj}'
            shapes[base + '.lora_A.weight'] = [r, hidden]
            shapes[base + '.lora_B.weight'] = [out, r]
    tensors = {}
    for k, name in enumerate(sorted(shapes)):
        count = int(np.prod(shapes[name]))
        values = np.array([((i * 5 + k * 3) % 17 - 8) / 32 for i in range(count)], dtype='<f4')
        tensors[name] = ('F32', shapes[name], values.tobytes())
    write_file(os.path.join(folder, 'adapter_model.safetensors'), tensors, {'format': 'pt'})


if __name__ == '__main__':
    main()
