#!/usr/bin/env python3
"""PyTorch CPU peer of the engine's benchmark (issue 4, section 4): the same decoder-only transformer as
libs/engine/src/model (Llama / Qwen2 family, Hugging Face semantics), the same sizes, fp32.

Architecture, matching the engine's `Model` for a given `ModelConfig` (config.json field names):
  embedding -> per layer: RMSNorm (w * x / sqrt(mean(x^2) + eps), weight not offset by one)
    -> q/k/v projections (biases only when attention_bias) -> rotary positions (HF rotate-half:
       inv_freq = 1/theta^(2i/d), emb = cat(freqs, freqs), q*cos + rotate_half(q)*sin)
    -> grouped-query attention (query head h reads kv head h // (H/KV)), causal, softmax(qk^T/sqrt(d))v
    -> o_proj (no bias) -> residual -> RMSNorm -> SwiGLU down(silu(gate(x)) * up(x)) -> residual
  -> final RMSNorm -> head (the embedding matrix when tie_word_embeddings, else lm_head).
Parameters carry the Hugging Face names (state_dict keys), so a folder the engine saves loads as it is.
Initialisation as the engine's: normal(0, initializer_range) for embedding and linear weights, ones for
norms, zeros for biases.

Training step: forward, mean next-token cross-entropy over every position that has a next token (what
the engine's crossEntropyCoefficients give for an unpadded batch), backward, clip_grad_norm_, AdamW
(betas 0.9/0.999, eps 1e-8, weight decay on matrices only, as the engine's default decay rule).
Sampling: prefill of the prompt, then one token per pass with a preallocated key/value cache; draws at
temperature 1 with torch.multinomial; log-probs of the drawn tokens are gathered as the engine does.
As the engine, `new_tokens` draws take one prefill and new_tokens - 1 decode passes.

Modes (one JSON line on stdout each):
  --bench           training tokens/s, sampling new-tokens/s, peak RSS (resource.getrusage)
  --check DIR       load DIR/model.safetensors and DIR/check.safetensors written by
                    `node libs/engine/bench/train.bench.js --export-check DIR` and compare logits, loss,
                    gradient norm and logits after one training step with the engine's.
  --count           parameter count only

Run (Debian torch needs OpenBLAS, or it uses the reference BLAS and is 20-30x slower):
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 \
      libs/engine/bench/torch_reference.py --bench --size a
Usually run by libs/engine/bench/vs-torch.bench.js, which passes the engine's own config (--config-json).
"""
import argparse
import json
import math
import os
import resource
import struct
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # the runner checks first; this is for direct use
    sys.stderr.write(
        "torch_reference.py: PyTorch is not importable (%s).\n"
        "Install on Debian: apt-get install -y python3-torch libopenblas0-openmp, then run with /usr/bin/python3 and\n"
        "LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp\n" % e
    )
    sys.exit(3)

# Copies of the engine presets bench-a / bench-b (libs/engine/src/model/model-config.ts) for direct runs;
# the runner passes the engine's config itself, and the parameter counts are compared.
SIZES = {
    "a": {
        "preset": "bench-a",
        "batch": 32,
        "seq": 64,
        "config": {
            "model_type": "llama", "vocab_size": 64, "hidden_size": 128, "intermediate_size": 352,
            "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 4, "rms_norm_eps": 1e-5,
            "rope_theta": 10000, "max_position_embeddings": 128, "tie_word_embeddings": True,
            "attention_bias": False, "hidden_act": "silu", "initializer_range": 0.02,
        },
    },
    "b": {
        "preset": "bench-b",
        "batch": 16,
        "seq": 128,
        "config": {
            "model_type": "llama", "vocab_size": 512, "hidden_size": 256, "intermediate_size": 688,
            "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 8, "rms_norm_eps": 1e-5,
            "rope_theta": 10000, "max_position_embeddings": 256, "tie_word_embeddings": True,
            "attention_bias": False, "hidden_act": "silu", "initializer_range": 0.02,
        },
    },
}


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["hidden_size"]
        self.h = cfg["num_attention_heads"]
        self.kv = cfg.get("num_key_value_heads", self.h)
        self.hd = head_dim(cfg)
        bias = cfg.get("attention_bias", False)
        self.q_proj = nn.Linear(d, self.h * self.hd, bias=bias)
        self.k_proj = nn.Linear(d, self.kv * self.hd, bias=bias)
        self.v_proj = nn.Linear(d, self.kv * self.hd, bias=bias)
        self.o_proj = nn.Linear(self.h * self.hd, d, bias=False)

    def forward(self, x, cos, sin, mask, cache, start):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            ck, cv = cache
            ck[:, :, start:start + t] = k
            cv[:, :, start:start + t] = v
            k = ck[:, :, : start + t]
            v = cv[:, :, : start + t]
        if self.kv != self.h:  # repeat_kv: query head h reads kv head h // n_rep
            n_rep = self.h // self.kv
            k = k[:, :, None].expand(b, self.kv, n_rep, k.shape[2], self.hd).reshape(b, self.h, k.shape[2], self.hd)
            v = v[:, :, None].expand(b, self.kv, n_rep, v.shape[2], self.hd).reshape(b, self.h, v.shape[2], self.hd)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        if mask is not None:
            scores = scores + mask
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, self.h * self.hd)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, ff = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(d, ff, bias=False)
        self.up_proj = nn.Linear(d, ff, bias=False)
        self.down_proj = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, mask, cache, start):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache, start)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([Layer(cfg) for _ in range(cfg["num_hidden_layers"])])
        self.norm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])


class CausalLM(nn.Module):
    """State-dict keys are the Hugging Face names (model.embed_tokens.weight, model.layers.0.self_attn.q_proj.weight, ...)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = Decoder(cfg)
        self.tied = bool(cfg.get("tie_word_embeddings", False))
        if not self.tied:
            self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        hd = head_dim(cfg)
        inv_freq = 1.0 / (cfg.get("rope_theta", 10000) ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        std = cfg.get("initializer_range", 0.02)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    p.normal_(0.0, std)

    def rope(self, start, t):
        pos = torch.arange(start, start + t, dtype=torch.float32)
        freqs = pos[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()  # [t, hd], broadcast over [B, heads, t, hd]

    def new_cache(self, batch, length):
        kv, hd = self.cfg.get("num_key_value_heads", self.cfg["num_attention_heads"]), head_dim(self.cfg)
        return [
            (torch.empty(batch, kv, length, hd), torch.empty(batch, kv, length, hd))
            for _ in range(self.cfg["num_hidden_layers"])
        ]

    def forward(self, ids, cache=None, start=0, last_only=False):
        """Logits [B, T, V] (or [B, V] with last_only) for ids [B, T] after `start` cached positions."""
        b, t = ids.shape
        cos, sin = self.rope(start, t)
        mask = None
        if t > 1:  # causal; a single new token may read every cached key
            s = start + t
            mask = torch.full((t, s), float("-inf")).triu(start + 1)
        x = self.model.embed_tokens(ids)
        for i, layer in enumerate(self.model.layers):
            x = layer(x, cos, sin, mask, cache[i] if cache is not None else None, start)
        if last_only:
            x = x[:, -1]
        h = self.model.norm(x)
        return F.linear(h, self.model.embed_tokens.weight) if self.tied else self.lm_head(h)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())


def make_optimizer(model, lr, weight_decay=0.01):
    # The engine's defaultDecay: matrices decay; RMSNorm weights and biases do not.
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith(".bias") or "norm" in name else decay).append(p)
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.999), eps=1e-8,
    )


def train_step(model, opt, ids, max_grad_norm):
    opt.zero_grad(set_to_none=True)
    logits = model(ids)
    v = logits.shape[-1]
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, v), ids[:, 1:].reshape(-1))
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    opt.step()
    return loss.item(), float(norm)


@torch.no_grad()
def sample(model, prompts, new_tokens, temperature, gen):
    b, p = prompts.shape
    cache = model.new_cache(b, p + new_tokens)
    logits = model(prompts, cache, 0, last_only=True)
    tokens, logprobs = [], []
    for step in range(new_tokens):
        logp = torch.log_softmax(logits, dim=-1)  # log-probs under the model (temperature 1), as the engine reports
        probs = torch.softmax(logits / temperature, dim=-1)
        tok = torch.multinomial(probs, 1, generator=gen)
        tokens.append(tok)
        logprobs.append(logp.gather(1, tok))
        if step == new_tokens - 1:
            break
        logits = model(tok, cache, p + step, last_only=True)
    return torch.cat(tokens, 1), torch.cat(logprobs, 1)


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # ru_maxrss is KiB on Linux


def read_safetensors(path):
    """Minimal safetensors reader (8-byte little-endian header length, JSON header, raw bytes)."""
    dtypes = {"F32": torch.float32, "I32": torch.int32, "F64": torch.float64, "I64": torch.int64}
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", None) or {}
    out = {}
    base = 8 + n
    for name, info in header.items():
        a, z = info["data_offsets"]
        t = torch.frombuffer(bytearray(raw[base + a:base + z]), dtype=dtypes[info["dtype"]])
        out[name] = t.reshape(info["shape"])
    return out, meta


def run_bench(cfg, args):
    torch.manual_seed(args.seed)
    model = CausalLM(cfg)
    opt = make_optimizer(model, args.lr)
    gen = torch.Generator().manual_seed(args.seed)
    v = cfg["vocab_size"]
    ids = torch.randint(0, v, (args.batch, args.seq), generator=gen)
    for _ in range(args.warmup):
        train_step(model, opt, ids, args.max_grad_norm)
    step_ms = []
    c0 = time.process_time()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        s = time.perf_counter()
        loss, _ = train_step(model, opt, ids, args.max_grad_norm)
        step_ms.append((time.perf_counter() - s) * 1000)
    train_s = time.perf_counter() - t0
    train_cpu = time.process_time() - c0

    prompts = torch.randint(0, v, (args.sample_batch, args.prompt), generator=gen)
    sample(model, prompts, 2, 1.0, gen)  # warm-up
    rep_ms = []
    c0 = time.process_time()
    t0 = time.perf_counter()
    for _ in range(args.sample_reps):
        s = time.perf_counter()
        toks, _ = sample(model, prompts, args.new_tokens, 1.0, gen)
        rep_ms.append((time.perf_counter() - s) * 1000)
    sample_s = time.perf_counter() - t0
    sample_cpu = time.process_time() - c0
    assert toks.shape == (args.sample_batch, args.new_tokens)
    new = args.sample_batch * args.new_tokens * args.sample_reps
    tokens = args.batch * args.seq * args.steps
    return {
        "side": "pytorch",
        "size": args.size,
        "params": count_parameters(model),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "interopThreads": torch.get_num_interop_threads(),
        "train": {
            "batch": args.batch, "seq": args.seq, "warmup": args.warmup, "steps": args.steps,
            "tokensPerS": round(tokens / train_s),
            "tokensPerCpuS": round(tokens / train_cpu),
            "msPerStep": round(train_s / args.steps * 1000, 1),
            "msPerStepMedian": round(sorted(step_ms)[len(step_ms) // 2], 1),
            "msPerStepMin": round(min(step_ms), 1),
            "lastLoss": loss,
        },
        "sample": {
            "batch": args.sample_batch, "prompt": args.prompt, "newTokens": args.new_tokens, "reps": args.sample_reps,
            "newTokensPerS": round(new / sample_s),
            "newTokensPerCpuS": round(new / sample_cpu),
            "msPerRepMin": round(min(rep_ms), 1),
        },
        "peakRssMiB": round(peak_rss_mib(), 1),
        "cpuSeconds": round(sum(os.times()[:2]), 2),
        "loadAvg1m": round(os.getloadavg()[0], 2),
    }


def run_check(cfg, args):
    """Same weights and batch as the engine: compares logits, loss, gradient norm, and logits after one step."""
    weights, _ = read_safetensors(os.path.join(args.check, "model.safetensors"))
    data, meta = read_safetensors(os.path.join(args.check, "check.safetensors"))
    model = CausalLM(cfg)
    missing, unexpected = model.load_state_dict({k: w.float() for k, w in weights.items()}, strict=False)
    if missing or unexpected:
        raise SystemExit("weights do not match the model: missing %s, unexpected %s" % (missing, unexpected))
    ids = data["ids"].long()
    b, t = ids.shape
    v = cfg["vocab_size"]
    with torch.no_grad():
        logits0 = model(ids).reshape(b * t, v)
        # The KV-cache path must give the full pass's logits (prefill of half, then one token at a time).
        half = t // 2
        cache = model.new_cache(b, t)
        inc = [model(ids[:, :half], cache, 0)]
        for s in range(half, t):
            inc.append(model(ids[:, s:s + 1], cache, s))
        cached = torch.cat(inc, 1).reshape(b * t, v)
    lr, mgn = float(meta["lr"]), float(meta["maxGradNorm"])
    opt = make_optimizer(model, lr, float(meta["weightDecay"]))
    loss, norm = train_step(model, opt, ids, mgn)
    with torch.no_grad():
        logits1 = model(ids).reshape(b * t, v)
    e_loss, e_norm = float(meta["loss"]), float(meta["gradNorm"])
    res = {
        "side": "pytorch",
        "mode": "check",
        "size": args.size,
        "params": count_parameters(model),
        "batch": [b, t],
        "logitsMaxAbsDiff": float((logits0 - data["logits0"]).abs().max()),
        "logitsMaxAbs": float(data["logits0"].abs().max()),
        "kvCacheVsFullMaxAbsDiff": float((cached - logits0).abs().max()),
        "loss": {"engine": e_loss, "pytorch": loss, "absDiff": abs(loss - e_loss)},
        "gradNorm": {"engine": e_norm, "pytorch": norm, "relDiff": abs(norm - e_norm) / max(abs(e_norm), 1e-30)},
        "afterStepLogitsMaxAbsDiff": float((logits1 - data["logits1"]).abs().max()),
        "afterStepLogitsChange": float((data["logits1"] - data["logits0"]).abs().max()),
    }
    tol = args.tolerance
    res["tolerance"] = tol
    res["pass"] = bool(
        res["logitsMaxAbsDiff"] <= tol
        and res["kvCacheVsFullMaxAbsDiff"] <= tol
        and res["loss"]["absDiff"] <= tol
        and res["gradNorm"]["relDiff"] <= 1e-3
        and res["afterStepLogitsMaxAbsDiff"] <= 10 * tol
    )
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--bench", action="store_true")
    mode.add_argument("--check", metavar="DIR")
    mode.add_argument("--count", action="store_true")
    ap.add_argument("--size", choices=sorted(SIZES), default="a")
    ap.add_argument("--config-json", help="the engine's ModelConfig as JSON (default: the built-in copy for --size)")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--seq", type=int)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--sample-batch", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--prompt", type=int, default=8)
    ap.add_argument("--sample-reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--max-grad-norm", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    args = ap.parse_args()
    size = SIZES[args.size]
    cfg = json.loads(args.config_json) if args.config_json else size["config"]
    args.batch = args.batch or size["batch"]
    args.seq = args.seq or size["seq"]
    torch.set_num_threads(args.threads)
    if args.bench:
        res = run_bench(cfg, args)
    elif args.check:
        res = run_check(cfg, args)
    else:
        res = {"side": "pytorch", "size": args.size, "params": count_parameters(CausalLM(cfg))}
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
