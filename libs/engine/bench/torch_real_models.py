#!/usr/bin/env python3
"""PyTorch CPU peer of the engine at real model sizes: Qwen2.5 0.5B / 1.5B / 3B / 7B shapes, read from a
Hugging Face model folder (config.json + safetensors), to be run side by side with the engine on the same
machine and the same checkpoint (libs/engine/README.md, "Side by side with PyTorch": each side in its own
process, one after the other, alternating who goes first; medians; peak RSS; machine load recorded).

The model is torch_reference.py's (same architecture as the engine's src/model: RMSNorm, rotate-half RoPE,
GQA with repeat_kv, q/k/v biases for qwen2, SwiGLU, tied or untied head, Hugging Face parameter names),
built here without allocating or initialising weights (meta device), then given the checkpoint's tensors.
Forward passes follow transformers' Qwen2 (eager attention) also in bf16: RMSNorm and the attention
softmax in float32 and cast back, cos/sin cast to the activation dtype, logits returned as float32. In
fp32 this is exactly torch_reference.py's arithmetic.

Checkpoints: any folder `transformers` could load (model.safetensors or shards + model.safetensors.index.json,
BF16/F16/F32); random-weight ones of the real shapes come from
  node libs/engine/bench/make-checkpoint.cjs --shape qwen2.5-0.5b --out /tmp/qwen2.5-0.5b-random
Files are memory-mapped (private, copy-on-write) and tensors are views of the mapping
(torch.frombuffer): with --weights bf16 on a BF16 folder nothing is copied, a 15 GB 7B folder is paged in
as it is used and its pages are the kernel's page cache (they count in RSS once touched); with --weights
fp32 each tensor is converted once into float32 memory (4 bytes a parameter: 7B does not fit in 24 GiB
and is refused up front).

Weights dtype (--weights fp32|bf16, default fp32): bf16 keeps every parameter in torch.bfloat16. On this
PyTorch (Debian 1.13, oneDNN 2.6) bf16 matmuls run in oneDNN, which uses AMX / AVX512-BF16 where the CPU
has them (several times faster than fp32 OpenBLAS); every op used here has a bf16 CPU kernel. Should one
be missing ("not implemented for 'BFloat16'"), the mode reruns in fp32 and says so ("bf16Fallback").

Modes (one JSON line on stdout each; every line has torch version, threads, BLAS, load average at start
and end, peak_rss_mib from getrusage ru_maxrss, and RssAnon/RssFile at the end):
  --mode load        load time (map + build + convert), page-in time (touch every page of every
                     parameter), parameter count.
  --mode sample      --batch B --prompt P --new N [--temperature T] [--reps R]: KV-cache generation as
                     torch_reference.sample (preallocated cache, multinomial draws, log-probs gathered):
                     one prefill of P tokens, then N-1 one-token decode passes, under torch.no_grad().
                     Prompt ids are random below the tokenizer's vocabulary (seeded). Reports new
                     tokens/s overall (B*N / (prefill + decode)) and decode-only (B*(N-1) / decode), the
                     prefill seconds, medians over R repetitions after one short warm-up.
  --mode lora        --batch B --seq T --micro M --rank 8 [--alpha 16] [--targets all|q,k,v,o,gate,up,down]:
                     one LoRA step as PEFT does it: base weights frozen (requires_grad False), LoRA A
                     (kaiming-uniform a=sqrt(5), PEFT's init) and B (PEFT sets zeros; here normal(0, 0.02)
                     so that A gets gradients too) on the seven linears of every layer, scaling alpha/r,
                     adapters in float32 (PEFT's autocast_adapter_dtype; the input is cast to float32 for
                     the adapter path and the sum cast back). Loss: mean next-token cross-entropy over
                     every position of random rows; the batch is split into micro-batches of M rows with
                     gradient accumulation (each micro loss weighted M/B), then clip_grad_norm_(1.0) and
                     AdamW(lr 1e-4, betas 0.9/0.999, eps 1e-8, weight decay 0.01) over the LoRA parameters.
                     Reports seconds a step (median of --steps after --warmup), tokens/s (B*T / median).
  --mode full        --batch B --seq T --micro M: the same with every parameter trainable (AdamW over all,
                     decay on matrices only, as torch_reference.make_optimizer). Before loading, refuses
                     with {"error": ...} when params x (weight + gradient + two Adam moments) bytes
                     (16 a parameter in fp32, 8 in bf16) exceed /proc/meminfo MemAvailable minus a margin
                     (the larger of 2 GiB and 10%); a RuntimeError/MemoryError during the run is reported,
                     not raised. In bf16 this is pure-bf16 AdamW (moments and updates in bf16), which is
                     what a bf16-loaded model trained without autocast does; it is a speed measurement.
  --mode logits      --ids FILE.json --out FILE: float32 logits of the given token rows ([[id, ...], ...]
                     or {"ids": [[...]]}, equal lengths) for a correctness comparison with the engine on
                     the same checkpoint. --out *.json writes {"shape": [B, T, V], "logits": nested lists};
                     --out *.safetensors writes one F32 tensor "logits". --last-only keeps the last position.
                     The stdout line has a summary (max |logit|, argmax of each row's last position, sum).
  --quick            smoke sizes for whichever mode (sample 2 x 8 + 4, lora/full 2 x 16 micro 1, 1 step).

Run (Debian torch needs OpenBLAS, else the reference BLAS is 20-30x slower for fp32; if the variables
are missing the script re-executes itself with them, and with /usr/bin/python3 when torch is not
importable from the python it was started with):
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
    /usr/bin/python3 libs/engine/bench/torch_real_models.py --model /tmp/qwen2.5-0.5b-random --mode sample \\
      --batch 8 --prompt 64 --new 64 --weights bf16
"""
import os
import sys

OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
SYSTEM_PYTHON = "/usr/bin/python3"


def _reexec_if_needed():
    """Re-execute with OpenBLAS on LD_LIBRARY_PATH, OMP_WAIT_POLICY=PASSIVE and a python that has torch."""
    if os.environ.get("_TORCH_REAL_MODELS_REEXEC") == "1":
        return
    env = dict(os.environ)
    changed = False
    if os.path.isdir(OPENBLAS_DIR) and OPENBLAS_DIR not in env.get("LD_LIBRARY_PATH", "").split(":"):
        env["LD_LIBRARY_PATH"] = OPENBLAS_DIR + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        changed = True
    if "OMP_WAIT_POLICY" not in env:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
        changed = True
    if "OMP_NUM_THREADS" not in env:
        argv = sys.argv[1:]
        threads = argv[argv.index("--threads") + 1] if "--threads" in argv[:-1] else "2"
        env["OMP_NUM_THREADS"] = threads
        changed = True
    python = sys.executable
    try:
        import importlib.util

        has_torch = importlib.util.find_spec("torch") is not None
    except Exception:
        has_torch = False
    if not has_torch and os.path.exists(SYSTEM_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON):
        python = SYSTEM_PYTHON
        changed = True
    if changed:
        env["_TORCH_REAL_MODELS_REEXEC"] = "1"
        sys.stderr.write("torch_real_models.py: re-executing with %s, LD_LIBRARY_PATH=%s, OMP_WAIT_POLICY=%s, OMP_NUM_THREADS=%s\n" % (python, env.get("LD_LIBRARY_PATH"), env["OMP_WAIT_POLICY"], env["OMP_NUM_THREADS"]))
        sys.stderr.flush()
        os.execve(python, [python] + sys.argv, env)


if __name__ == "__main__":
    _reexec_if_needed()

import argparse  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import mmap  # noqa: E402
import resource  # noqa: E402
import struct  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as ref  # noqa: E402  (exits 3 with a hint when torch is missing)

torch = ref.torch
nn = ref.nn
F = ref.F

ST_DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "I32": torch.int32}
WEIGHT_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
LORA_TARGETS = {
    "q": ("self_attn", "q_proj"), "k": ("self_attn", "k_proj"), "v": ("self_attn", "v_proj"), "o": ("self_attn", "o_proj"),
    "gate": ("mlp", "gate_proj"), "up": ("mlp", "up_proj"), "down": ("mlp", "down_proj"),
}
GIB = 1024 ** 3


# ---- safetensors, memory-mapped ------------------------------------------------------------------------

class SafetensorsFile:
    """A memory-mapped safetensors file; tensor(name) is a view of the mapping (no copy).

    The mapping is private (copy-on-write): writing to a view (e.g. an optimizer step) copies that page
    into the process and never touches the file. torch.frombuffer does not keep the mapping alive, so the
    object must outlive every view: LoadedModel keeps them all.
    """

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
            self.mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        self.metadata = header.pop("__metadata__", None) or {}
        self.entries = header
        self.base = 8 + n

    def tensor(self, name):
        info = self.entries[name]
        dtype = ST_DTYPES[info["dtype"]]
        shape = info["shape"]
        a, z = info["data_offsets"]
        count = math.prod(shape)
        if count == 0:
            return torch.empty(shape, dtype=dtype)
        t = torch.frombuffer(self.mm, dtype=dtype, count=count, offset=self.base + a)
        assert t.numel() * t.element_size() == z - a, name
        return t.view(shape)


def open_checkpoint(model_dir):
    """{tensor name: SafetensorsFile} for a folder (sharded through the index, or model.safetensors)."""
    index_path = os.path.join(model_dir, "model.safetensors.index.json")
    files = {}
    where = {}
    if os.path.exists(index_path):
        with open(index_path) as f:
            weight_map = json.load(f)["weight_map"]
        for name, fname in weight_map.items():
            if fname not in files:
                files[fname] = SafetensorsFile(os.path.join(model_dir, fname))
            where[name] = files[fname]
    else:
        st = SafetensorsFile(os.path.join(model_dir, "model.safetensors"))
        files["model.safetensors"] = st
        where = {name: st for name in st.entries}
    return where, list(files.values())


def read_model_config(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        raw = json.load(f)
    if raw.get("model_type") not in ("qwen2", "llama"):
        raise SystemExit("torch_real_models.py: model_type %r is not qwen2/llama" % raw.get("model_type"))
    cfg = {
        k: raw[k]
        for k in ("model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                  "num_key_value_heads", "rms_norm_eps", "rope_theta", "max_position_embeddings", "head_dim")
        if k in raw and raw[k] is not None
    }
    cfg["tie_word_embeddings"] = bool(raw.get("tie_word_embeddings", False))
    cfg["attention_bias"] = bool(raw.get("attention_bias", raw["model_type"] == "qwen2"))
    cfg["hidden_act"] = raw.get("hidden_act", "silu")
    cfg["initializer_range"] = raw.get("initializer_range", 0.02)
    return cfg, raw


def tokenizer_vocab(model_dir, fallback):
    """Number of ids the folder's tokenizer.json knows (vocab and added tokens), or `fallback`."""
    try:
        with open(os.path.join(model_dir, "tokenizer.json")) as f:
            tok = json.load(f)
        ids = list(tok.get("model", {}).get("vocab", {}).values()) + [t["id"] for t in tok.get("added_tokens", [])]
        return min(max(ids) + 1, fallback) if ids else fallback
    except (OSError, ValueError, KeyError):
        return fallback


# ---- the model: torch_reference's classes, HF Qwen2 dtype handling -----------------------------------

class RealRMSNorm(ref.RMSNorm):
    """transformers' Qwen2RMSNorm: the normalisation in float32, cast back before the weight."""

    def forward(self, x):
        dt = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dt)


class RealAttention(ref.Attention):
    """torch_reference.Attention with the softmax in float32 (transformers' eager attention)."""

    def forward(self, x, cos, sin, mask, cache, start):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        q = q * cos + ref.rotate_half(q) * sin
        k = k * cos + ref.rotate_half(k) * sin
        if cache is not None:
            ck, cv = cache
            ck[:, :, start:start + t] = k
            cv[:, :, start:start + t] = v
            k = ck[:, :, : start + t]
            v = cv[:, :, : start + t]
        if self.kv != self.h:  # repeat_kv, as transformers
            n_rep = self.h // self.kv
            k = k[:, :, None].expand(b, self.kv, n_rep, k.shape[2], self.hd).reshape(b, self.h, k.shape[2], self.hd)
            v = v[:, :, None].expand(b, self.kv, n_rep, v.shape[2], self.hd).reshape(b, self.h, v.shape[2], self.hd)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        if mask is not None:
            scores = scores + mask
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(v.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, self.h * self.hd)
        return self.o_proj(out)


# Where the model runs: "cpu" or "cuda" (--device). Weights, caches, masks and ids follow the embedding's device.
DEVICE = torch.device("cpu")


def sync():
    """Wait for queued GPU work before a clock is read (CUDA runs asynchronously); nothing on CPU."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


class RealCausalLM(ref.CausalLM):
    """torch_reference.CausalLM in the parameters' dtype: cos/sin, mask and KV cache in that dtype, logits float32."""

    @property
    def dtype(self):
        return self.model.embed_tokens.weight.dtype

    @property
    def device(self):
        return self.model.embed_tokens.weight.device

    def rope(self, start, t):
        cos, sin = super().rope(start, t)
        return cos.to(self.device, self.dtype), sin.to(self.device, self.dtype)

    def new_cache(self, batch, length):
        kv, hd = self.cfg.get("num_key_value_heads", self.cfg["num_attention_heads"]), ref.head_dim(self.cfg)
        return [
            (torch.empty(batch, kv, length, hd, dtype=self.dtype, device=self.device),
             torch.empty(batch, kv, length, hd, dtype=self.dtype, device=self.device))
            for _ in range(self.cfg["num_hidden_layers"])
        ]

    def forward(self, ids, cache=None, start=0, last_only=False, drop_last=False):
        """Float32 logits [B, T, V] ([B, V] with last_only; [B, T-1, V] with drop_last, for next-token loss)."""
        b, t = ids.shape
        cos, sin = self.rope(start, t)
        mask = None
        if t > 1:
            mask = torch.full((t, start + t), float("-inf")).triu(start + 1).to(self.device, self.dtype)
        x = self.model.embed_tokens(ids)
        for i, layer in enumerate(self.model.layers):
            x = layer(x, cos, sin, mask, cache[i] if cache is not None else None, start)
        if last_only:
            x = x[:, -1]
        elif drop_last:
            x = x[:, :-1]
        h = self.model.norm(x)
        logits = F.linear(h, self.model.embed_tokens.weight) if self.tied else self.lm_head(h)
        return logits.float()


class _MetaNN:
    """torch.nn, with Linear and Embedding created on the meta device (no memory, no initialisation)."""

    Linear = functools.partial(nn.Linear, device="meta")
    Embedding = functools.partial(nn.Embedding, device="meta")

    def __getattr__(self, name):
        return getattr(nn, name)


def build_skeleton(cfg):
    """torch_reference.CausalLM(cfg) with meta-device weights, its modules switched to the Real* classes."""
    saved = ref.nn
    ref.nn = _MetaNN()
    try:
        model = ref.CausalLM(cfg)
    finally:
        ref.nn = saved
    swap = {ref.CausalLM: RealCausalLM, ref.Attention: RealAttention, ref.RMSNorm: RealRMSNorm}
    for m in model.modules():
        if type(m) in swap:
            m.__class__ = swap[type(m)]
    return model


def set_parameter(model, name, tensor):
    *path, leaf = name.split(".")
    mod = model
    for p in path:
        mod = getattr(mod, p)
    old = mod._parameters[leaf]
    if tuple(old.shape) != tuple(tensor.shape):
        raise SystemExit("torch_real_models.py: %s has shape %s in the checkpoint, the model expects %s" % (name, list(tensor.shape), list(old.shape)))
    mod._parameters[leaf] = nn.Parameter(tensor, requires_grad=False)


class LoadedModel:
    def __init__(self, model, files, cfg, raw, seconds, stored_dtypes, copied_bytes):
        self.model = model
        self.files = files  # keeps the mappings alive
        self.cfg = cfg
        self.raw = raw
        self.seconds = seconds
        self.stored_dtypes = stored_dtypes
        self.copied_bytes = copied_bytes


def load_model(model_dir, weights):
    t0 = time.perf_counter()
    cfg, raw = read_model_config(model_dir)
    where, files = open_checkpoint(model_dir)
    model = build_skeleton(cfg)
    want = WEIGHT_DTYPES[weights]
    names = [n for n, _ in model.named_parameters()]
    missing = [n for n in names if n not in where]
    if missing:
        raise SystemExit("torch_real_models.py: %s lacks %s" % (model_dir, ", ".join(missing[:5])))
    stored, copied = set(), 0
    for name in names:
        t = where[name].tensor(name)
        stored.add(str(t.dtype).replace("torch.", ""))
        if t.dtype != want:
            t = t.to(want)
            copied += t.numel() * t.element_size()
        t = t.to(DEVICE)
        set_parameter(model, name, t)
    model.eval()  # no dropout anywhere; train() / eval() make no difference to this model
    return LoadedModel(model, files, cfg, raw, time.perf_counter() - t0, sorted(stored), copied)


def count_params(cfg):
    """Parameter count from the config alone (before deciding whether a mode fits)."""
    d, ff, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    hd = ref.head_dim(cfg)
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    per = 2 * d + d * q + 2 * d * kv + q * d + 3 * d * ff + ((q + 2 * kv) if cfg["attention_bias"] else 0)
    return V * d + L * per + d + (0 if cfg["tie_word_embeddings"] else V * d)


# ---- LoRA, as PEFT ----------------------------------------------------------------------------------

class LoraLinear(nn.Module):
    """PEFT's lora.Linear: base(x) + lora_B(lora_A(x)) * alpha / r, adapters in float32."""

    def __init__(self, base, r, alpha, b_std, gen):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        self.scaling = alpha / r
        with torch.no_grad():
            nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))  # PEFT's init_lora_weights=True
            nn.init.zeros_(self.lora_B.weight)  # PEFT's B ...
            self.lora_B.weight.normal_(0.0, b_std, generator=gen)  # ... made non-zero so A gets gradients too

    def forward(self, x):
        result = self.base_layer(x)
        a = self.lora_A.weight
        return (result + self.lora_B(self.lora_A(x.to(a.dtype))) * self.scaling).to(result.dtype)


def add_lora(model, targets, r, alpha, seed):
    gen = torch.Generator().manual_seed(seed)
    params = []
    for layer in model.model.layers:
        for key in targets:
            block, lin = LORA_TARGETS[key]
            parent = getattr(layer, block)
            wrapped = LoraLinear(getattr(parent, lin), r, alpha, 0.02, gen)  # initialised on CPU (one generator, any device)
            wrapped.lora_A.to(DEVICE)
            wrapped.lora_B.to(DEVICE)
            setattr(parent, lin, wrapped)
            params += [wrapped.lora_A.weight, wrapped.lora_B.weight]
    return params


# ---- measurements -----------------------------------------------------------------------------------

def peak_rss_mib():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def proc_status_mib():
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                    out[k] = round(int(v.split()[0]) / 1024.0, 1)
    except OSError:
        pass
    return out


def mem_available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def blas_in_use():
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return "unknown"
    for key, name in (("openblas-openmp", "openblas-openmp"), ("openblas-pthread", "openblas-pthread"), ("openblas", "openblas"), ("libmkl", "mkl"), ("blis", "blis")):
        if key in maps:
            return name
    return "reference (libblas)" if "libblas" in maps else "unknown"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    return [x for x in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if x in have]
    except OSError:
        pass
    return []


def machine_cpu():
    """Machine-wide busy and steal CPU seconds from /proc/stat (as vs-torch.bench.js), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        hz = os.sysconf("SC_CLK_TCK")
        return (v[0] + v[1] + v[2] + v[5] + v[6]) / hz, (v[7] if len(v) > 7 else 0) / hz
    except (OSError, ValueError, IndexError):
        return None


class Meter:
    """Wall time, this process's CPU time, and the CPU that other processes (and the hypervisor, as
    steal) used meanwhile: how quiet the machine was while a number was measured."""

    def __init__(self):
        self.wall = time.perf_counter()
        t = os.times()
        self.cpu = t[0] + t[1]
        self.machine = machine_cpu()

    def report(self):
        wall = time.perf_counter() - self.wall
        t = os.times()
        own = t[0] + t[1] - self.cpu
        out = {"wallS": round(wall, 3), "cpuS": round(own, 2), "cores": round(own / wall, 2) if wall > 0 else None}
        m = machine_cpu()
        if m and self.machine and wall > 0:
            out["otherCores"] = round(max(0.0, (m[0] - self.machine[0]) - own) / wall, 2)
            out["stealCores"] = round((m[1] - self.machine[1]) / wall, 2)
        out["loadAvg"] = loadavg()
        return out


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def loadavg():
    return [round(x, 2) for x in os.getloadavg()]


def random_ids(gen, vocab, *shape):
    return torch.randint(0, vocab, shape, generator=gen).to(DEVICE)  # drawn on CPU: the same ids on every device


@torch.no_grad()
def timed_sample(model, prompts, new_tokens, temperature, gen):
    """torch_reference.sample with the prefill and the decode passes timed apart."""
    b, p = prompts.shape
    sync()
    t0 = time.perf_counter()
    cache = model.new_cache(b, p + new_tokens)
    logits = model(prompts, cache, 0, last_only=True)
    sync()
    t1 = time.perf_counter()
    tokens, logprobs = [], []
    for step in range(new_tokens):
        logp = torch.log_softmax(logits, dim=-1)
        probs = torch.softmax(logits / temperature, dim=-1)
        tok = torch.multinomial(probs, 1, generator=gen)
        tokens.append(tok)
        logprobs.append(logp.gather(1, tok))
        if step == new_tokens - 1:
            break
        logits = model(tok, cache, p + step, last_only=True)
    sync()
    t2 = time.perf_counter()
    # The first token is drawn from the prefill's logits; its draw is counted in the decode time.
    return torch.cat(tokens, 1), torch.cat(logprobs, 1), t1 - t0, t2 - t1


def run_sample(lm, args, vocab):
    model = lm.model
    gen = torch.Generator().manual_seed(args.seed)
    b, p, n = args.batch, args.prompt, args.new
    prompts = random_ids(gen, vocab, b, p)
    gen = torch.Generator(device=DEVICE).manual_seed(args.seed)  # multinomial draws on the logits' device
    w0 = time.perf_counter()
    timed_sample(model, prompts[:, : min(p, 8)], 2, args.temperature, gen)  # warm-up (pages the weights in)
    warm_s = time.perf_counter() - w0
    reps = []
    meter = Meter()
    for _ in range(args.reps):
        toks, lps, pre, dec = timed_sample(model, prompts, n, args.temperature, gen)
        assert toks.shape == (b, n) and torch.isfinite(lps).all()
        reps.append((pre, dec))
    pre_m = median([r[0] for r in reps])
    dec_m = median([r[1] for r in reps])
    tot_m = median([r[0] + r[1] for r in reps])
    return {
        "batch": b, "prompt": p, "newTokens": n, "temperature": args.temperature, "reps": args.reps,
        "warmupS": round(warm_s, 3),
        "prefillS": round(pre_m, 4),
        "decodeS": round(dec_m, 4),
        "totalS": round(tot_m, 4),
        "newTokensPerS": round(b * n / tot_m, 2),
        "decodeTokensPerS": round(b * (n - 1) / dec_m, 2) if n > 1 and dec_m > 0 else None,
        "prefillTokensPerS": round(b * p / pre_m, 1),
        "msPerDecodePass": round(dec_m / max(n - 1, 1) * 1000, 2),
        "perRep": [{"prefillS": round(a, 4), "decodeS": round(c, 4)} for a, c in reps],
        "machine": meter.report(),
    }


def train_step(model, opt, params, ids, micro):
    """One optimizer step: micro-batches of `micro` rows, accumulated; clip; AdamW. Returns (loss, grad norm, fwd+bwd s, opt s)."""
    opt.zero_grad(set_to_none=True)
    b = ids.shape[0]
    total = 0.0
    sync()
    t0 = time.perf_counter()
    for s in range(0, b, micro):
        chunk = ids[s:s + micro]
        logits = model(chunk, drop_last=True)
        v = logits.shape[-1]
        loss = F.cross_entropy(logits.reshape(-1, v), chunk[:, 1:].reshape(-1))
        (loss * (chunk.shape[0] / b)).backward()
        total += loss.item() * chunk.shape[0] / b
        del logits, loss
    t1 = time.perf_counter()
    norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    sync()
    return total, float(norm), t1 - t0, time.perf_counter() - t1


def run_train(lm, args, vocab, lora):
    model = lm.model
    if args.batch % args.micro:
        raise SystemExit("--batch must be a multiple of --micro")
    if lora:
        targets = list(LORA_TARGETS) if args.targets == "all" else args.targets.split(",")
        bad = [t for t in targets if t not in LORA_TARGETS]
        if bad:
            raise SystemExit("--targets: unknown %s (known: %s or all)" % (bad, ",".join(LORA_TARGETS)))
        params = add_lora(model, targets, args.rank, args.alpha, args.seed)
        opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
        extra = {"rank": args.rank, "alpha": args.alpha, "targets": targets, "trainableParams": sum(p.numel() for p in params), "adapterDtype": "float32"}
    else:
        for p in model.parameters():
            p.requires_grad_(True)
        params = list(model.parameters())
        opt = ref.make_optimizer(model, args.lr)
        extra = {"trainableParams": sum(p.numel() for p in params)}
    model.train()
    gen = torch.Generator().manual_seed(args.seed)
    ids = random_ids(gen, vocab, args.batch, args.seq)
    warm, steps = [], []
    for _ in range(args.warmup):
        s = time.perf_counter()
        train_step(model, opt, params, ids, args.micro)
        warm.append(time.perf_counter() - s)
    detail = []
    meter = Meter()
    for _ in range(args.steps):
        s = time.perf_counter()
        loss, norm, fb, op = train_step(model, opt, params, ids, args.micro)
        steps.append(time.perf_counter() - s)
        detail.append({"s": round(steps[-1], 3), "fwdBwdS": round(fb, 3), "optS": round(op, 3), "loss": round(loss, 5), "gradNorm": round(norm, 5)})
    m = median(steps)
    return dict(extra, **{
        "batch": args.batch, "seq": args.seq, "micro": args.micro, "warmup": args.warmup, "steps": args.steps,
        "lr": args.lr, "maxGradNorm": 1.0,
        "secondsPerStep": round(m, 3),
        "tokensPerS": round(args.batch * args.seq / m, 1),
        "warmupS": [round(x, 3) for x in warm],
        "perStep": detail,
        "machine": meter.report(),
    })


def run_load(lm):
    t0 = time.perf_counter()
    acc = 0.0
    with torch.no_grad():
        for p in lm.model.parameters():
            flat = p.detach().view(-1)
            step = max(1, 4096 // p.element_size())  # one element a page
            acc += float(flat[::step].float().sum())
    return {"pageInS": round(time.perf_counter() - t0, 3), "checksum": acc}


def run_logits(lm, args):
    with open(args.ids) as f:
        data = json.load(f)
    rows = data["ids"] if isinstance(data, dict) else data
    ids = torch.tensor(rows, dtype=torch.int64)
    if ids.dim() == 1:
        ids = ids[None]
    if int(ids.max()) >= lm.cfg["vocab_size"] or int(ids.min()) < 0:
        raise SystemExit("--ids: ids must be in [0, %d)" % lm.cfg["vocab_size"])
    t0 = time.perf_counter()
    with torch.no_grad():
        logits = lm.model(ids, last_only=args.last_only).float().contiguous()
    s = time.perf_counter() - t0
    out = args.out
    if out.endswith(".safetensors"):
        raw = logits.cpu().numpy().tobytes()
        header = json.dumps({"__metadata__": {"format": "pt", "weights": args.weights}, "logits": {"dtype": "F32", "shape": list(logits.shape), "data_offsets": [0, len(raw)]}}).encode()
        header += b" " * ((8 - len(header) % 8) % 8)
        with open(out, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header + raw)
    else:
        with open(out, "w") as f:
            json.dump({"shape": list(logits.shape), "weights": args.weights, "logits": logits.tolist()}, f)
    last = logits if args.last_only else logits[:, -1]
    return {
        "rows": list(ids.shape), "out": out, "shape": list(logits.shape), "forwardS": round(s, 3),
        "maxAbs": float(logits.abs().max()), "sum": float(logits.double().sum()),
        "lastArgmax": last.argmax(-1).tolist(),
    }


def full_fits(cfg, weights):
    """(fits, detail) for full fine-tuning: weights + gradients + two AdamW moments, against MemAvailable."""
    n = count_params(cfg)
    w = 4 if weights == "fp32" else 2
    need = n * (w + w + 2 * w)
    avail = mem_available_bytes()
    margin = max(2 * GIB, int(0.1 * avail)) if avail else None
    detail = {"params": n, "bytesPerParam": 4 * w, "estimateGiB": round(need / GIB, 2),
              "memAvailableGiB": round(avail / GIB, 2) if avail else None, "marginGiB": round(margin / GIB, 2) if margin else None}
    return (avail is None or need <= avail - margin), detail


def load_fits(cfg, weights, stored_bf16):
    """Converting to fp32 (or from another stored dtype) needs params x bytes of anonymous memory."""
    n = count_params(cfg)
    if weights == "bf16" and stored_bf16:
        return True, {}
    need = n * (4 if weights == "fp32" else 2)
    avail = mem_available_bytes()
    margin = max(2 * GIB, int(0.1 * avail)) if avail else 0
    return (avail is None or need <= avail - margin), {"params": n, "convertGiB": round(need / GIB, 2), "memAvailableGiB": round(avail / GIB, 2) if avail else None}


def stored_all_bf16(model_dir):
    try:
        where, files = open_checkpoint(model_dir)
        return all(st.entries[n]["dtype"] == "BF16" for n, st in where.items())
    except (OSError, ValueError, KeyError):
        return False


QUICK = {"batch": 2, "prompt": 8, "new": 4, "seq": 16, "micro": 1, "steps": 1, "warmup": 0, "reps": 1}
DEFAULTS = {"batch": 8, "prompt": 64, "new": 64, "seq": 256, "micro": 1, "steps": 3, "warmup": 1, "reps": 1}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="Hugging Face model folder (config.json + safetensors)")
    ap.add_argument("--mode", required=True, choices=["load", "sample", "lora", "full", "logits"])
    ap.add_argument("--weights", choices=sorted(WEIGHT_DTYPES), default="fp32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="cuda: the first GPU (bf16/fp32 weights, timed with synchronisation)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--prompt", type=int)
    ap.add_argument("--new", type=int)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--reps", type=int, help="sample repetitions (median)")
    ap.add_argument("--seq", type=int)
    ap.add_argument("--micro", type=int)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=16.0)
    ap.add_argument("--targets", default="all")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--ids", help="logits mode: JSON file of token rows")
    ap.add_argument("--out", help="logits mode: output file (.json or .safetensors)")
    ap.add_argument("--last-only", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smoke sizes")
    args = ap.parse_args()
    base = QUICK if args.quick else DEFAULTS
    for k, v in base.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.mode == "logits" and not (args.ids and args.out):
        ap.error("--mode logits needs --ids FILE.json and --out FILE")

    torch.set_num_threads(args.threads)
    global DEVICE
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: this PyTorch (%s) sees no CUDA device" % torch.__version__)
    DEVICE = torch.device(args.device)
    res = {
        "side": "pytorch", "mode": args.mode, "model": os.path.abspath(args.model), "weights": args.weights,
        "torch": torch.__version__, "threads": torch.get_num_threads(), "interopThreads": torch.get_num_interop_threads(),
        "ompNumThreads": os.environ.get("OMP_NUM_THREADS"), "ompWaitPolicy": os.environ.get("OMP_WAIT_POLICY"),
        "blas": blas_in_use(), "mkldnn": torch.backends.mkldnn.is_available(), "cpuFlags": cpu_flags(),
        "loadAvgStart": loadavg(), "device": args.device,
    }
    if DEVICE.type == "cuda":
        res["gpu"] = torch.cuda.get_device_name(0)
    if args.quick:
        res["quick"] = True
    cfg, raw = read_model_config(args.model)
    res["config"] = {k: cfg.get(k) for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "tie_word_embeddings")}
    res["params"] = count_params(cfg)

    def finish(extra, code=0):
        res.update(extra)
        res["loadAvgEnd"] = loadavg()
        res["peak_rss_mib"] = peak_rss_mib()
        res["memMiBAtEnd"] = proc_status_mib()
        if DEVICE.type == "cuda":
            res["gpuPeakMiB"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        print(json.dumps(res), flush=True)
        sys.exit(code)

    ok, detail = load_fits(cfg, args.weights, stored_all_bf16(args.model))
    if not ok:
        finish({"error": "refused: converting the weights to %s needs %.1f GiB, MemAvailable is %.1f GiB" % (args.weights, detail["convertGiB"], detail["memAvailableGiB"]), "memory": detail}, 1)
    if args.mode == "full":
        ok, detail = full_fits(cfg, args.weights)
        res["memoryEstimate"] = detail
        if not ok:
            finish({"error": "refused: full fine-tuning needs about %.1f GiB (%d bytes a parameter: weights, gradients, AdamW moments) "
                    "before activations; MemAvailable %.1f GiB minus a %.1f GiB margin" % (detail["estimateGiB"], detail["bytesPerParam"], detail["memAvailableGiB"], detail["marginGiB"])}, 1)

    vocab = tokenizer_vocab(args.model, cfg["vocab_size"])
    res["idsBelow"] = vocab

    def run(weights):
        meter = Meter()
        lm = load_model(args.model, weights)
        out = {"loadS": round(lm.seconds, 3), "loadMachine": meter.report(), "storedDtypes": lm.stored_dtypes, "convertedGiB": round(lm.copied_bytes / GIB, 3), "paramsLoaded": sum(p.numel() for p in lm.model.parameters())}
        if args.mode == "load":
            out.update(run_load(lm))
        elif args.mode == "sample":
            out["sample"] = run_sample(lm, args, vocab)
        elif args.mode in ("lora", "full"):
            out["train"] = run_train(lm, args, vocab, lora=args.mode == "lora")
            if args.weights == "bf16" and args.mode == "full":
                out["note"] = "pure bf16 AdamW: parameters, gradients and moments in bf16 (no fp32 master weights)"
        else:
            out["logits"] = run_logits(lm, args)
        out["memMiBBeforeFree"] = proc_status_mib()  # while the model is alive (RssFile: pages of the mapped checkpoint)
        return out

    try:
        try:
            out = run(args.weights)
        except RuntimeError as e:
            if args.weights == "bf16" and "BFloat16" in str(e):
                res["bf16Fallback"] = "bf16 failed (%s); this mode ran in fp32" % str(e).splitlines()[0]
                res["weightsEffective"] = "fp32"
                out = run("fp32")
            else:
                raise
    except (RuntimeError, MemoryError) as e:
        finish({"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")}, 1)
    finish(out)


if __name__ == "__main__":
    main()
