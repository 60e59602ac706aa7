#!/usr/bin/env python3
"""Independent float64 NumPy reference of the Llama / Qwen2 decoder forward pass.

Follows Hugging Face `transformers` (`modeling_llama.py`, `modeling_qwen2.py`) equation by equation:
  RMSNorm:   w * x / sqrt(mean(x^2, -1) + eps)
  rotary:    inv_freq = 1 / theta^(arange(0, d, 2) / d); emb = cat(freqs, freqs);
             q' = q*cos + rotate_half(q)*sin, rotate_half([x1, x2]) = [-x2, x1]
  attention: q/k/v projections (+ bias for Qwen2), repeat_kv (head h reads kv head h // n_rep),
             softmax(q k^T / sqrt(d) + mask) v, o_proj (no bias)
  MLP:       down(silu(gate(x)) * up(x))
  head:      final RMSNorm, lm_head (or the embedding matrix when tied)
Positions follow `generate`'s convention for padded batches: position_ids = cumsum(mask) - 1, i.e. the
number of real tokens before a token; padded keys are masked out.

Writes golden cases to ../src/__golden__/transformer.json: weights (float32-representable values,
Hugging Face names and [out, in] layouts), token batches with masks, logits at real positions,
per-token log-probs and entropies, and gradients of a loss sum(c * logprob) + sum(e * entropy) with
respect to chosen weight entries by central finite differences in float64.

Run: python3 libs/engine/reference/transformer_reference.py
"""
import json
import os

import numpy as np


def rms_norm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rope(x, positions, theta):
    # x: [B, heads, T, d]; positions: [B, T]
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (np.arange(0, d, 2, dtype=np.float64) / d))
    freqs = positions[:, :, None].astype(np.float64) * inv_freq[None, None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)  # [B, T, d]
    cos = np.cos(emb)[:, None, :, :]
    sin = np.sin(emb)[:, None, :, :]
    return x * cos + rotate_half(x) * sin


def repeat_kv(x, n_rep):
    # x: [B, KV, T, d] -> [B, KV * n_rep, T, d], like transformers.models.llama.modeling_llama.repeat_kv
    b, kv, t, d = x.shape
    return np.broadcast_to(x[:, :, None, :, :], (b, kv, n_rep, t, d)).reshape(b, kv * n_rep, t, d)


def softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def forward(cfg, W, ids, mask, with_hidden=False, lora=None):
    """Logits [B, T, V] (and final-norm hidden states) for a batch; ids and mask are [B, T] integer arrays.

    lora: optional {"scaling": s, "factors": {module path: (A [r, in], B [out, r])}}; a targeted linear
    computes x W^T + s * (x A^T) B^T, PEFT's LoRA forward (no dropout), kept unmerged on purpose.
    """

    def linear(h, module):
        y = h @ W[module + ".weight"].T
        if lora is not None and module in lora["factors"]:
            A, Bf = lora["factors"][module]
            y = y + lora["scaling"] * ((h @ A.T) @ Bf.T)
        return y

    B, T = ids.shape
    H = cfg["num_attention_heads"]
    KV = cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    eps = cfg["rms_norm_eps"]
    positions = np.maximum(np.cumsum(mask, axis=1) - 1, 0)
    causal = np.tril(np.ones((T, T), dtype=bool))
    allowed = causal[None, :, :] & (mask[:, None, :] == 1)  # [B, Tq, Tk]
    neg = np.finfo(np.float64).min
    attn_mask = np.where(allowed, 0.0, neg)[:, None, :, :]

    x = W["model.embed_tokens.weight"][ids]  # [B, T, D]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)

        def proj(name):
            y = linear(h, p + f"self_attn.{name}_proj")
            if cfg["attention_bias"]:
                y = y + W[p + f"self_attn.{name}_proj.bias"]
            return y

        q = proj("q").reshape(B, T, H, hd).transpose(0, 2, 1, 3)
        k = proj("k").reshape(B, T, KV, hd).transpose(0, 2, 1, 3)
        v = proj("v").reshape(B, T, KV, hd).transpose(0, 2, 1, 3)
        q = rope(q, positions, cfg["rope_theta"])
        k = rope(k, positions, cfg["rope_theta"])
        k = repeat_kv(k, H // KV)
        v = repeat_kv(v, H // KV)
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + attn_mask
        probs = softmax(scores)
        o = (probs @ v).transpose(0, 2, 1, 3).reshape(B, T, H * hd)
        x = x + linear(o, p + "self_attn.o_proj")
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        gate = linear(h, p + "mlp.gate_proj")
        up = linear(h, p + "mlp.up_proj")
        act = gate / (1.0 + np.exp(-gate))  # silu
        x = x + linear(act * up, p + "mlp.down_proj")
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return (x @ head.T, x) if with_hidden else x @ head.T


def token_scores(cfg, W, ids, mask, lora=None):
    """Token-aligned log p(ids[t] | ids[<t]), the entropy of that distribution and, with a value head
    (`score.weight` [1, D], `score.bias` [1], as transformers' *ForTokenClassification and verl's critic),
    the value read at the position before the token (verl's `values[:, -response_length - 1:-1]`);
    0 where undefined."""
    logits, hidden = forward(cfg, W, ids, mask, with_hidden=True, lora=lora)
    logp = log_softmax(logits)
    B, T = ids.shape
    lp = np.zeros((B, T))
    ent = np.zeros((B, T))
    val = np.zeros((B, T))
    valid = np.zeros((B, T), dtype=np.int64)
    for b in range(B):
        for t in range(1, T):
            if mask[b, t] == 1 and mask[b, t - 1] == 1:
                lp[b, t] = logp[b, t - 1, ids[b, t]]
                ent[b, t] = -np.sum(np.exp(logp[b, t - 1]) * logp[b, t - 1])
                if "score.weight" in W:
                    val[b, t] = hidden[b, t - 1] @ W["score.weight"][0] + W["score.bias"][0]
                valid[b, t] = 1
    return logits, lp, ent, val, valid


def weight_specs(cfg):
    D = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or D // H
    F = cfg["intermediate_size"]
    specs = [("model.embed_tokens.weight", (cfg["vocab_size"], D), "embedding")]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        specs.append((p + "input_layernorm.weight", (D,), "norm"))
        for name, out in (("q", H * hd), ("k", KV * hd), ("v", KV * hd)):
            specs.append((p + f"self_attn.{name}_proj.weight", (out, D), "linear"))
            if cfg["attention_bias"]:
                specs.append((p + f"self_attn.{name}_proj.bias", (out,), "bias"))
        specs.append((p + "self_attn.o_proj.weight", (D, H * hd), "linear"))
        specs.append((p + "post_attention_layernorm.weight", (D,), "norm"))
        specs.append((p + "mlp.gate_proj.weight", (F, D), "linear"))
        specs.append((p + "mlp.up_proj.weight", (F, D), "linear"))
        specs.append((p + "mlp.down_proj.weight", (D, F), "linear"))
    specs.append(("model.norm.weight", (D,), "norm"))
    if not cfg["tie_word_embeddings"]:
        specs.append(("lm_head.weight", (cfg["vocab_size"], D), "linear"))
    return specs


def random_weights(cfg, rng):
    W = {}
    for name, shape, kind in weight_specs(cfg):
        if kind == "norm":
            w = 1.0 + 0.1 * rng.standard_normal(shape)
        elif kind == "bias":
            w = 0.1 * rng.standard_normal(shape)
        else:
            w = 0.25 * rng.standard_normal(shape)
        # float32-representable, so both sides start from identical weights
        W[name] = w.astype(np.float32).astype(np.float64)
    return W


def make_case(name, cfg, seed, rows, grad_weights, value_head=False):
    rng = np.random.default_rng(seed)
    W = random_weights(cfg, rng)
    if value_head:
        W["score.weight"] = (0.25 * rng.standard_normal((1, cfg["hidden_size"]))).astype(np.float32).astype(np.float64)
        W["score.bias"] = np.array([0.3], dtype=np.float32).astype(np.float64)
    T = max(len(r["tokens"]) + r.get("left", 0) for r in rows)
    B = len(rows)
    ids = np.zeros((B, T), dtype=np.int64)
    mask = np.zeros((B, T), dtype=np.int64)
    for b, r in enumerate(rows):
        left = r.get("left", 0)
        for t, tok in enumerate(r["tokens"]):
            ids[b, left + t] = tok
            mask[b, left + t] = 1
    logits, lp, ent, val, valid = token_scores(cfg, W, ids, mask)
    coef = rng.standard_normal((B, T)) * valid
    ecoef = 0.3 * rng.standard_normal((B, T)) * valid
    vcoef = (0.5 * rng.standard_normal((B, T)) * valid) if value_head else np.zeros((B, T))

    def loss(Wx):
        _, l, e, v, _ = token_scores(cfg, Wx, ids, mask)
        return float(np.sum(coef * l) + np.sum(ecoef * e) + np.sum(vcoef * v))

    grads = []
    h = 1e-6
    for wname in grad_weights:
        flat = W[wname].reshape(-1)
        picks = rng.choice(flat.size, size=min(6, flat.size), replace=False)
        for idx in picks:
            idx = int(idx)
            Wp = dict(W)
            Wm = dict(W)
            wp = W[wname].copy().reshape(-1)
            wm = W[wname].copy().reshape(-1)
            wp[idx] += h
            wm[idx] -= h
            Wp[wname] = wp.reshape(W[wname].shape)
            Wm[wname] = wm.reshape(W[wname].shape)
            grads.append({"weight": wname, "index": idx, "grad": (loss(Wp) - loss(Wm)) / (2 * h)})

    real = [(b, t) for b in range(B) for t in range(T) if mask[b, t] == 1]
    return {
        "name": name,
        "config": cfg,
        "weights": {k: {"shape": list(v.shape), "data": v.reshape(-1).tolist()} for k, v in W.items()},
        "batchSize": B,
        "seqLen": T,
        "ids": ids.reshape(-1).tolist(),
        "mask": mask.reshape(-1).tolist(),
        "realPositions": [b * T + t for b, t in real],
        "logitsAtReal": np.stack([logits[b, t] for b, t in real]).reshape(-1).tolist(),
        "logProbs": lp.reshape(-1).tolist(),
        "entropy": ent.reshape(-1).tolist(),
        "values": val.reshape(-1).tolist() if value_head else None,
        "valueCoef": vcoef.reshape(-1).tolist() if value_head else None,
        "valid": valid.reshape(-1).tolist(),
        "logProbCoef": coef.reshape(-1).tolist(),
        "entropyCoef": ecoef.reshape(-1).tolist(),
        "loss": loss(W),
        "grads": grads,
    }


def batch_of(rows):
    T = max(len(r["tokens"]) + r.get("left", 0) for r in rows)
    ids = np.zeros((len(rows), T), dtype=np.int64)
    mask = np.zeros((len(rows), T), dtype=np.int64)
    for b, r in enumerate(rows):
        left = r.get("left", 0)
        for t, tok in enumerate(r["tokens"]):
            ids[b, left + t] = tok
            mask[b, left + t] = 1
    return ids, mask


def make_lora_case(name, cfg, seed, rows, r, alpha, targets, grad_factors):
    """A LoRA forward (scaling alpha / r) on random base weights and random non-zero factors: logits,
    log-probs, and gradients of sum(c * logprob) with respect to chosen factor entries."""
    rng = np.random.default_rng(seed)
    W = random_weights(cfg, rng)
    factors = {}
    for wname, shape, kind in weight_specs(cfg):
        module = wname[: -len(".weight")]
        if kind == "linear" and wname.startswith("model.layers.") and module.split(".")[-1] in targets:
            out_f, in_f = shape
            A = (0.25 * rng.standard_normal((r, in_f))).astype(np.float32).astype(np.float64)
            Bf = (0.25 * rng.standard_normal((out_f, r))).astype(np.float32).astype(np.float64)
            factors[module] = (A, Bf)
    scaling = alpha / r
    ids, mask = batch_of(rows)
    B, T = ids.shape
    lora = {"scaling": scaling, "factors": factors}
    logits, lp, _, _, valid = token_scores(cfg, W, ids, mask, lora)
    coef = rng.standard_normal((B, T)) * valid

    def loss(fx):
        _, l, _, _, _ = token_scores(cfg, W, ids, mask, {"scaling": scaling, "factors": fx})
        return float(np.sum(coef * l))

    grads = []
    h = 1e-6
    for module, which in grad_factors:
        k = 0 if which == "A" else 1
        t = factors[module][k]
        for idx in rng.choice(t.size, size=3, replace=False):
            idx = int(idx)
            def shifted(d):
                f = dict(factors)
                pair = list(f[module])
                w = t.copy().reshape(-1)
                w[idx] += d
                pair[k] = w.reshape(t.shape)
                f[module] = tuple(pair)
                return f
            grads.append({"module": module, "factor": which, "index": idx, "grad": (loss(shifted(h)) - loss(shifted(-h))) / (2 * h)})

    real = [(b, t) for b in range(B) for t in range(T) if mask[b, t] == 1]
    tensor = lambda v: {"shape": list(v.shape), "data": v.reshape(-1).tolist()}
    return {
        "name": name,
        "config": cfg,
        "weights": {k: tensor(v) for k, v in W.items()},
        "lora": {"r": r, "alpha": alpha, "targetModules": targets, "factors": {m: {"A": tensor(a), "B": tensor(b)} for m, (a, b) in factors.items()}},
        "batchSize": B,
        "seqLen": T,
        "ids": ids.reshape(-1).tolist(),
        "mask": mask.reshape(-1).tolist(),
        "realPositions": [b * T + t for b, t in real],
        "logitsAtReal": np.stack([logits[b, t] for b, t in real]).reshape(-1).tolist(),
        "logProbs": lp.reshape(-1).tolist(),
        "valid": valid.reshape(-1).tolist(),
        "logProbCoef": coef.reshape(-1).tolist(),
        "grads": grads,
    }


def main():
    qwen = {
        "model_type": "qwen2", "vocab_size": 32, "hidden_size": 16, "intermediate_size": 24,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 64,
        "tie_word_embeddings": False, "attention_bias": True, "hidden_act": "silu",
    }
    llama = {
        "model_type": "llama", "vocab_size": 40, "hidden_size": 16, "intermediate_size": 20,
        "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 12,
        "rms_norm_eps": 1e-5, "rope_theta": 500.0, "max_position_embeddings": 64,
        "tie_word_embeddings": True, "attention_bias": False, "hidden_act": "silu",
    }
    rows_q = [
        {"tokens": [1, 5, 9, 2, 31, 7, 7, 3]},
        {"tokens": [4, 8, 15, 16, 23]},           # right-padded
        {"tokens": [30, 0, 12, 6], "left": 3},     # left-padded: positions still start at 0
    ]
    rows_l = [
        {"tokens": [3, 39, 20, 11, 5, 5, 1]},
        {"tokens": [2, 17]},
    ]
    gq = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.q_proj.bias",
          "model.layers.0.self_attn.k_proj.weight", "model.layers.1.self_attn.k_proj.bias", "model.layers.0.self_attn.v_proj.weight",
          "model.layers.1.self_attn.v_proj.bias", "model.layers.1.self_attn.o_proj.weight", "model.layers.0.mlp.gate_proj.weight",
          "model.layers.1.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight", "model.layers.0.input_layernorm.weight",
          "model.layers.1.post_attention_layernorm.weight", "model.norm.weight", "lm_head.weight",
          "score.weight", "score.bias"]
    gl = ["model.embed_tokens.weight", "model.layers.1.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
          "model.layers.0.self_attn.o_proj.weight", "model.layers.1.mlp.down_proj.weight", "model.norm.weight"]
    cases = [
        make_case("qwen2 gqa bias untied value head, right+left padding", qwen, 1, rows_q, gq, value_head=True),
        make_case("llama tied, head_dim 12, theta 500", llama, 2, rows_l, gl),
    ]
    out = {
        "meta": {
            "generator": "libs/engine/reference/transformer_reference.py",
            "numpy": np.__version__,
            "note": "float64; gradients of sum(logProbCoef*logProbs)+sum(entropyCoef*entropy)+sum(valueCoef*values) by central differences (h=1e-6)",
        },
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "__golden__", "transformer.json")
    with open(path, "w") as f:
        json.dump(out, f)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")

    lora_case = make_lora_case(
        "qwen2 LoRA r 2 alpha 3 on all seven linears, right+left padding", qwen, 3, rows_q, 2, 3.0,
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        [("model.layers.0.self_attn.q_proj", "A"), ("model.layers.1.self_attn.v_proj", "B"),
         ("model.layers.0.self_attn.o_proj", "B"), ("model.layers.1.mlp.down_proj", "A"), ("model.layers.0.mlp.gate_proj", "B")],
    )
    lora_out = {
        "meta": {
            "generator": "libs/engine/reference/transformer_reference.py",
            "numpy": np.__version__,
            "note": "float64 LoRA forward x W^T + (alpha/r) (x A^T) B^T; gradients of sum(logProbCoef*logProbs) by central differences (h=1e-6)",
        },
        "cases": [lora_case],
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "__golden__", "lora.json")
    with open(path, "w") as f:
        json.dump(lora_out, f)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
